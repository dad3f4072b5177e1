/* Description: a working set recorded in one mm (scattered pages and
 * 16-page runs of a 64 MiB file) and prefetched into a fresh mm brings in
 * exactly the recorded pages, with the file's bytes (checked with
 * pread(2)), so touching them takes no major fault; touching the set
 * while the prefetch still runs reads the right bytes too.  On the tmpfs
 * and disk file stores.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(64UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NSINGLE	512
#define NRUNS	32

struct ctx {
	const char *name;
	char path[256], rec[300], scratch[300];
	int fd;				/* the file, for pread(2) */
	uint64_t *set;			/* pages in touch order */
	size_t nset;
	unsigned char *want, *got;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* singles and runs interleaved, a page never twice */
static void make_set(struct ctx *c)
{
	unsigned char *used = calloc(NPAGES, 1);
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	size_t i, k;

	c->set = malloc((NSINGLE + 16 * NRUNS) * sizeof(*c->set));
	c->nset = 0;
	for (i = 0; i < NSINGLE + NRUNS; i++) {
		bool run = i % 17 == 16;
		uint64_t p = rnd(&seed) % (NPAGES - 16), len = run ? 16 : 1;

		for (k = 0; k < len; k++)
			if (used[p + k])
				break;
		if (k < len) {
			i--;
			continue;
		}
		for (k = 0; k < len; k++) {
			used[p + k] = 1;
			c->set[c->nset++] = p + k;
		}
	}
	free(used);
}

static void check_page(struct ctx *c, const unsigned char *map, uint64_t pg)
{
	struct ut_fault f;

	CHECK(pread(c->fd, c->want, PG, (off_t)(pg * PG)) == PG, "pread");
	CHECK(ut_copy_from(c->got, map + pg * PG, PG, &f) == 0, "%s: page %lu: signal %d", c->name,
	      (unsigned long)pg, f.sig);
	CHECK(memcmp(c->want, c->got, PG) == 0, "%s: page %lu differs from the file", c->name,
	      (unsigned long)pg);
}

static void record(struct ctx *c)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	unsigned char *map;
	size_t i;

	CHECK_RET(uf_object_open(mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, c->rec), 0);
	for (i = 0; i < c->nset; i++)
		check_page(c, map, c->set[i]);
	CHECK_RET(uf_object_record_stop(obj), (long)c->nset);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void replay(struct ctx *c, bool wait)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	unsigned char *map;
	struct uf_stats st;
	size_t i;

	CHECK_RET(uf_object_open(mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, c->rec), 0);
	if (wait) {
		ws_wait_prefetch(obj, c->scratch);
		CHECK(ws_cache_pages(mm) == c->nset, "%s: %lu pages cached after the prefetch, set %zu",
		      c->name, (unsigned long)ws_cache_pages(mm), c->nset);
	}
	for (i = 0; i < c->nset; i++)
		check_page(c, map, c->set[i]);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	printf("%s (%s): %zu pages, major %lu minor %lu, read ahead or prefetched %lu\n",
	       c->name, wait ? "after" : "during", c->nset, (unsigned long)st.major_faults,
	       (unsigned long)st.minor_faults, (unsigned long)st.readahead_pages);
	if (wait)
		CHECK(st.major_faults == 0, "%s: %lu major faults on a prefetched set", c->name,
		      (unsigned long)st.major_faults);
	if (wait)
		ws_wait_prefetch(obj, c->scratch);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void run(struct ctx *c, const char *dir)
{
	c->fd = ut_make_file(dir, SIZE, c->path, sizeof(c->path));
	snprintf(c->rec, sizeof(c->rec), "%s.ws", c->path);
	snprintf(c->scratch, sizeof(c->scratch), "%s.scratch", c->path);
	record(c);
	replay(c, true);
	replay(c, false);
	close(c->fd);
	unlink(c->rec);
	unlink(c->path);
}

int main(void)
{
	struct ctx c = { 0 };

	ut_catch_signals();
	c.want = malloc(PG);
	c.got = malloc(PG);
	make_set(&c);
	c.name = "tmpfs";
	run(&c, "/dev/shm");
	c.name = "disk";
	run(&c, "/var/tmp");
	free(c.set);
	free(c.want);
	free(c.got);
	return 0;
}
