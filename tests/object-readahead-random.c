/* Description: random single-page reads (fixed-seed PRNG, pages far apart)
 * of a 16 MiB object through a shared mapping do not read ahead:
 * readahead_pages stays 0, every access is one major fault reading exactly
 * that page (a recording store checks each read call is one page at the
 * faulting offset); the bytes are right.  Runs on the tmpfs and disk file
 * stores and the recording store.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define NREADS	200

struct ctx {
	struct uf_mm *mm;
	const char *name;
	struct os_store *st;
	uint64_t pages[NREADS];
};

/* NREADS distinct pages, none the first page of the mapping (a fault there
 * starts a sequential window), each far from the one before it. */
static void pick(struct ctx *c)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL, prev = 0;
	unsigned char *used = calloc(NPAGES, 1);
	int i;

	CHECK(used, "out of memory");
	for (i = 0; i < NREADS; i++) {
		uint64_t p;

		do
			p = os_rand(&seed) % NPAGES;
		while (p < 64 || used[p] || (p > prev ? p - prev : prev - p) < 64);
		used[p] = 1;
		c->pages[i] = prev = p;
	}
	free(used);
}

static void run(struct ctx *c, struct uf_object *obj)
{
	struct uf_stats before = os_mm_stats(c->mm), st, mst;
	unsigned char *map, v;
	struct ut_fault f;
	int i;

	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (i = 0; i < NREADS; i++) {
		uint64_t off = c->pages[i] * UF_PAGE_SIZE + (uint64_t)(i * 13) % UF_PAGE_SIZE;

		CHECK(ut_read(map + off, &v, &f) == 0, "%s: read page %lu: signal %d", c->name,
		      (unsigned long)c->pages[i], f.sig);
		CHECK(v == ut_pattern(off), "%s: byte %lu = %u", c->name, (unsigned long)off, v);
	}
	st = os_vma_stats(c->mm, map);
	mst = os_mm_stats(c->mm);
	printf("%s: major %lu minor %lu readahead %lu read %lu\n", c->name,
	       (unsigned long)st.major_faults, (unsigned long)st.minor_faults,
	       (unsigned long)st.readahead_pages,
	       (unsigned long)(mst.pages_read - before.pages_read));
	CHECK(st.readahead_pages == 0, "%s: readahead %lu pages on random reads", c->name,
	      (unsigned long)st.readahead_pages);
	CHECK(st.major_faults == NREADS && st.minor_faults == 0,
	      "%s: %lu major, %lu minor faults for %d random pages", c->name,
	      (unsigned long)st.major_faults, (unsigned long)st.minor_faults, NREADS);
	CHECK(mst.pages_read - before.pages_read == NREADS, "%s: %lu pages read, want %d", c->name,
	      (unsigned long)(mst.pages_read - before.pages_read), NREADS);
	if (c->st) {
		pthread_mutex_lock(&c->st->lock);
		CHECK(c->st->nreads == NREADS, "%s: %zu store reads, want %d", c->name,
		      c->st->nreads, NREADS);
		for (i = 0; i < NREADS; i++)
			CHECK(c->st->reads[i].off == c->pages[i] * UF_PAGE_SIZE &&
			      c->st->reads[i].len == UF_PAGE_SIZE,
			      "%s: read %d is [%lu, +%zu), want page %lu", c->name, i,
			      (unsigned long)c->st->reads[i].off, c->st->reads[i].len,
			      (unsigned long)c->pages[i]);
		pthread_mutex_unlock(&c->st->lock);
	}
	CHECK_RET(uf_munmap(c->mm, map, SIZE), 0);
}

int main(void)
{
	struct ctx c = { 0 };
	struct os_store st;
	struct uf_object *obj;
	int s;

	ut_catch_signals();
	os_watchdog(30);
	pick(&c);
	c.mm = ut_mm_create(NULL);
	for (s = UT_STORE_TMPFS; s < UT_NSTORES; s++) {
		char path[256];

		obj = ut_object(c.mm, s, SIZE, path, sizeof(path));
		c.name = ut_store_names[s];
		c.st = NULL;
		run(&c, obj);
		uf_object_put(obj);
		unlink(path);
	}
	os_init(&st, SIZE);
	obj = os_object(c.mm, &st);
	c.name = "recording";
	c.st = &st;
	run(&c, obj);
	uf_object_put(obj);
	os_fini(&st);
	uf_mm_destroy(c.mm);
	return 0;
}
