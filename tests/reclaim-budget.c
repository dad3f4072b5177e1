/* Description: a 128 MiB file read through an 8 MiB cache budget reads
 * correctly with the cache never above budget + slack, under both policies;
 * random writes across the whole file under that budget all reach the file
 * after uf_msync. */
#define _GNU_SOURCE
#include "helpers.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define FILE_SIZE	(128ULL << 20)
#define BUDGET		(8ULL << 20)
#define NPAGES		(FILE_SIZE / UF_PAGE_SIZE)
#define BUDGET_PAGES	(BUDGET / UF_PAGE_SIZE)
#define SLACK_PAGES	(BUDGET_PAGES / 8)	/* one readahead window per handler */

struct ctx {
	struct uf_mm *mm;
	uint64_t max_cache;
};

static void sample(struct ctx *c)
{
	struct uf_stats st;

	CHECK_RET(uf_mm_stats(c->mm, &st), 0);
	if (st.cache_pages > c->max_cache)
		c->max_cache = st.cache_pages;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void run(unsigned int policy)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET, .reclaim_policy = policy };
	struct ctx c = { 0 };
	struct uf_object *obj;
	struct uf_stats st;
	unsigned char *map, *buf;
	char path[256];
	uint64_t i, seed = 42, sum = 0;
	int fd;

	c.mm = ut_mm_create(&cfg);
	fd = ut_make_file("/var/tmp", FILE_SIZE, path, sizeof(path));
	CHECK_RET(uf_object_open(c.mm, path, O_RDWR, &obj), 0);
	CHECK_RET(uf_mmap(c.mm, FILE_SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&map), 0);

	/* sequential read of everything, checking every byte of every 7th page */
	for (i = 0; i < NPAGES; i++) {
		unsigned char *p = map + i * UF_PAGE_SIZE;

		sum += p[0];
		if (i % 7 == 0)
			for (uint64_t b = 0; b < UF_PAGE_SIZE; b++)
				CHECK(p[b] == ut_pattern(i * UF_PAGE_SIZE + b), "page %lu byte %lu",
				      (unsigned long)i, (unsigned long)b);
		if (i % 16 == 0)
			sample(&c);
	}
	CHECK(c.max_cache <= BUDGET_PAGES + SLACK_PAGES, "policy %u: cache reached %lu pages, budget %lu + %lu",
	      policy, (unsigned long)c.max_cache, (unsigned long)BUDGET_PAGES, (unsigned long)SLACK_PAGES);

	/* random writes across the whole file: a stamp in each written page */
	for (i = 0; i < 20000; i++) {
		uint64_t pg = rnd(&seed) % NPAGES;

		map[pg * UF_PAGE_SIZE + 17] = (unsigned char)(pg * 31 + 5);
		map[pg * UF_PAGE_SIZE + UF_PAGE_SIZE - 1] = (unsigned char)(pg * 3 + 1);
		if (i % 64 == 0)
			sample(&c);
	}
	CHECK(c.max_cache <= BUDGET_PAGES + SLACK_PAGES, "policy %u: cache reached %lu pages with writes",
	      policy, (unsigned long)c.max_cache);
	CHECK_RET(uf_msync(c.mm, map, FILE_SIZE, UF_MS_SYNC), 0);
	CHECK_RET(uf_mm_stats(c.mm, &st), 0);
	printf("policy %s: max cache %lu pages (budget %lu), evicted %lu, written %lu, major %lu\n",
	       policy == UF_RECLAIM_FIFO ? "fifo" : "clock", (unsigned long)c.max_cache,
	       (unsigned long)BUDGET_PAGES, (unsigned long)st.evicted_pages,
	       (unsigned long)st.pages_written, (unsigned long)st.major_faults);
	CHECK(st.evicted_pages > NPAGES / 2, "nothing was evicted");

	/* the file itself holds every write */
	buf = malloc(UF_PAGE_SIZE);
	seed = 42;
	for (i = 0; i < 20000; i++) {
		uint64_t pg = rnd(&seed) % NPAGES;

		CHECK(pread(fd, buf, UF_PAGE_SIZE, (off_t)(pg * UF_PAGE_SIZE)) == UF_PAGE_SIZE, "pread");
		CHECK(buf[17] == (unsigned char)(pg * 31 + 5) &&
		      buf[UF_PAGE_SIZE - 1] == (unsigned char)(pg * 3 + 1),
		      "policy %u: write to page %lu lost", policy, (unsigned long)pg);
		CHECK(buf[18] == ut_pattern(pg * UF_PAGE_SIZE + 18), "page %lu damaged", (unsigned long)pg);
	}
	free(buf);
	CHECK_RET(uf_munmap(c.mm, map, FILE_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(c.mm);
	close(fd);
	unlink(path);
	(void)sum;
}

int main(void)
{
	run(UF_RECLAIM_CLOCK);
	run(UF_RECLAIM_FIFO);
	return 0;
}
