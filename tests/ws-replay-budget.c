/* Description: a prefetch of a 4096-page working set into an mm whose
 * cache budget is 512 pages never takes the cache past the budget, evicts
 * nothing (it stops instead), and what it brought in is the head of the
 * set in recorded order: touching those pages takes no major fault.  Disk
 * file store, CLOCK and FIFO.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(64UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define BUDGET	(2UL << 20)
#define BUDGET_PAGES (BUDGET / PG)
#define NSET	4096

struct ctx {
	char path[256], rec[300], scratch[300];
};

/* a page of the set: scattered, each once (an odd stride mod a power of 2) */
static uint64_t set_page(size_t i)
{
	return (i * 2654435761ULL + 12345) % NPAGES;
}

static void record(struct ctx *c)
{
	static uint64_t pages[NSET];
	size_t i;

	for (i = 0; i < NSET; i++)
		pages[i] = set_page(i);
	CHECK_RET(ws_record_pages(c->path, SIZE, c->rec, pages, NSET), NSET);
}

static void replay(struct ctx *c, unsigned int policy)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET, .reclaim_policy = policy };
	struct timespec ts = { 0, 1000000 };
	struct uf_mm *mm = ut_mm_create(&cfg);
	uint64_t cached, max = 0, n, i;
	struct uf_object *obj;
	unsigned char *map, v;
	struct ut_fault f;
	struct uf_stats st;
	int ret, k;

	CHECK_RET(uf_object_open(mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, c->rec), 0);
	/* sample the cache until the prefetch is over (record refuses
	 * while it runs); the count is a bound against a hang */
	for (k = 0; k < 120000; k++) {
		cached = ws_cache_pages(mm);
		if (cached > max)
			max = cached;
		ret = uf_object_record(obj, c->scratch);
		if (ret != -EBUSY)
			break;
		nanosleep(&ts, NULL);
	}
	CHECK_RET(ret, 0);
	CHECK(uf_object_record_stop(obj) == 0, "nothing touched while the scratch record ran");
	unlink(c->scratch);
	cached = ws_cache_pages(mm);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	printf("policy %u: cache %lu pages after the prefetch (max seen %lu, budget %lu), "
	       "evicted %lu\n", policy, (unsigned long)cached, (unsigned long)max,
	       (unsigned long)BUDGET_PAGES, (unsigned long)st.evicted_pages);
	CHECK(max <= BUDGET_PAGES && cached <= BUDGET_PAGES, "cache passed the budget: %lu",
	      (unsigned long)max);
	CHECK(cached >= BUDGET_PAGES / 2, "the prefetch stopped early: %lu pages",
	      (unsigned long)cached);
	CHECK(st.evicted_pages == 0, "%lu pages evicted", (unsigned long)st.evicted_pages);

	/* the head of the set is what came in */
	n = cached;
	for (i = 0; i < n; i++) {
		uint64_t pg = set_page(i);

		CHECK(ut_read(map + pg * PG + 9, &v, &f) == 0 && v == ut_pattern(pg * PG + 9),
		      "page %lu", (unsigned long)pg);
	}
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.major_faults == 0, "%lu major faults touching the prefetched head",
	      (unsigned long)st.major_faults);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ctx c = { 0 };
	int fd;

	ut_catch_signals();
	fd = ut_make_file("/var/tmp", SIZE, c.path, sizeof(c.path));
	close(fd);
	snprintf(c.rec, sizeof(c.rec), "%s.ws", c.path);
	snprintf(c.scratch, sizeof(c.scratch), "%s.scratch", c.path);
	record(&c);
	replay(&c, UF_RECLAIM_CLOCK);
	replay(&c, UF_RECLAIM_FIFO);
	unlink(c.rec);
	unlink(c.path);
	return 0;
}
