/* Description: a sequential read of a 16 MiB object through a shared
 * mapping takes few major faults: the readahead window grows to the 2 MiB
 * default (512 pages, read in the background less its first page, which
 * the reader's fault reads), readahead_pages covers nearly the whole object, and
 * every page is read from the store exactly once (a recording store checks
 * the read calls and their sizes); a smaller readahead_max caps the window.
 * Runs on the tmpfs and disk file stores and the recording store (the
 * memory store made by ut_object() starts fully cached).
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)

struct ctx {
	struct uf_mm *mm;
	size_t ra_max;			/* pages */
	const char *name;
	struct os_store *st;		/* NULL for a file store */
	unsigned char *page;		/* one page, for comparing */
	unsigned char *seen;		/* per page: read from the recording store */
};

static void check_reads(struct ctx *c, uint64_t majors)
{
	size_t i, maxlen = 0;

	memset(c->seen, 0, NPAGES);
	pthread_mutex_lock(&c->st->lock);
	/* one window read at each major fault, one more in the background */
	CHECK(c->st->nreads <= 2 * majors + 2, "%s: %zu store reads for %lu major faults", c->name,
	      c->st->nreads, (unsigned long)majors);
	for (i = 0; i < c->st->nreads; i++) {
		const struct os_io *r = &c->st->reads[i];
		uint64_t p;

		CHECK(r->off % UF_PAGE_SIZE == 0 && r->len % UF_PAGE_SIZE == 0,
		      "%s: read [%lu, +%zu) not whole pages", c->name, (unsigned long)r->off, r->len);
		CHECK(r->len <= c->ra_max * UF_PAGE_SIZE, "%s: read of %zu bytes, window max %zu pages",
		      c->name, r->len, c->ra_max);
		for (p = r->off / UF_PAGE_SIZE; p < (r->off + r->len) / UF_PAGE_SIZE; p++) {
			CHECK(!c->seen[p], "%s: page %lu read twice", c->name, (unsigned long)p);
			c->seen[p] = 1;
		}
		if (r->len > maxlen)
			maxlen = r->len;
	}
	printf("%s: %zu store reads, largest %zu bytes\n", c->name, c->st->nreads, maxlen);
	pthread_mutex_unlock(&c->st->lock);
	/* a background window is read less its first page (the marker, read
	 * by the reader's fault there) */
	CHECK(maxlen == c->ra_max * UF_PAGE_SIZE || maxlen == (c->ra_max - 1) * UF_PAGE_SIZE,
	      "%s: largest read %zu bytes, want the %zu-page window", c->name, maxlen, c->ra_max);
}

static void run(struct ctx *c, struct uf_object *obj)
{
	struct uf_stats before = os_mm_stats(c->mm), st, mst;
	unsigned char *map;
	uint64_t p, i, max_majors;

	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (p = 0; p < NPAGES; p++) {
		for (i = 0; i < UF_PAGE_SIZE; i++)
			c->page[i] = ut_pattern(p * UF_PAGE_SIZE + i);
		CHECK(memcmp(map + p * UF_PAGE_SIZE, c->page, UF_PAGE_SIZE) == 0,
		      "%s: page %lu differs", c->name, (unsigned long)p);
	}
	st = os_vma_stats(c->mm, map);
	mst = os_mm_stats(c->mm);
	printf("%s (window %zu): major %lu minor %lu readahead %lu read %lu\n", c->name, c->ra_max,
	       (unsigned long)st.major_faults, (unsigned long)st.minor_faults,
	       (unsigned long)st.readahead_pages,
	       (unsigned long)(mst.pages_read - before.pages_read));
	/* 16 + 32 + ... up to the window, then whole windows: a few more
	 * than NPAGES / window; allow twice that */
	max_majors = 2 * (NPAGES / c->ra_max + 8);
	CHECK(st.major_faults >= 1 && st.major_faults <= max_majors,
	      "%s: %lu major faults for a sequential read (at most %lu)", c->name,
	      (unsigned long)st.major_faults, (unsigned long)max_majors);
	CHECK(st.sigbus == 0, "%s: sigbus", c->name);
	CHECK(st.readahead_pages + st.major_faults >= NPAGES,
	      "%s: readahead %lu + major %lu < %lu pages", c->name,
	      (unsigned long)st.readahead_pages, (unsigned long)st.major_faults,
	      (unsigned long)NPAGES);
	CHECK(mst.pages_read - before.pages_read == NPAGES, "%s: %lu pages read, want %lu",
	      c->name, (unsigned long)(mst.pages_read - before.pages_read), (unsigned long)NPAGES);
	if (c->st)
		check_reads(c, st.major_faults);
	CHECK_RET(uf_munmap(c->mm, map, SIZE), 0);
}

static void run_window(struct ctx *c, size_t ra_bytes)
{
	struct uf_mm_config cfg = { .readahead_max = ra_bytes };
	int s;

	c->mm = ut_mm_create(ra_bytes ? &cfg : NULL);
	c->ra_max = ra_bytes ? ra_bytes / UF_PAGE_SIZE : 512;
	for (s = UT_STORE_TMPFS; s < UT_NSTORES; s++) {
		char path[256];
		struct uf_object *obj = ut_object(c->mm, s, SIZE, path, sizeof(path));

		c->name = ut_store_names[s];
		c->st = NULL;
		run(c, obj);
		uf_object_put(obj);
		unlink(path);
	}
	{
		struct os_store st;
		struct uf_object *obj;

		os_init(&st, SIZE);
		obj = os_object(c->mm, &st);
		c->name = "recording";
		c->st = &st;
		run(c, obj);
		uf_object_put(obj);
		os_fini(&st);
	}
	uf_mm_destroy(c->mm);
}

int main(void)
{
	struct ctx c = { 0 };

	ut_catch_signals();
	os_watchdog(30);
	c.page = malloc(UF_PAGE_SIZE);
	c.seen = malloc(NPAGES);
	CHECK(c.page && c.seen, "out of memory");
	run_window(&c, 0);			/* default: 2 MiB */
	run_window(&c, 256 << 10);		/* 64 pages */
	free(c.page);
	free(c.seen);
	return 0;
}
