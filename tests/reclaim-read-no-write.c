/* Description: reads through a cache budget write nothing back: an O_RDWR
 * file object read through a shared mapping (read-only and read-write
 * prot, CLOCK and FIFO) leaves the file's bytes and timestamps alone and
 * the store unwritten, as the kernel's own mapping of the file does; and
 * the cache, sampled by a thread of its own, never exceeds the budget by
 * more than one readahead window. */
#define _GNU_SOURCE
#include "cache-sampler.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_SIZE	(64ULL << 20)
#define BUDGET		(4ULL << 20)
#define NPAGES		(FILE_SIZE / UF_PAGE_SIZE)
#define BUDGET_PAGES	(BUDGET / UF_PAGE_SIZE)
#define WINDOW_PAGES	(BUDGET_PAGES / 8)	/* the readahead window's limit */
#define RANDOM_READS	5000

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Read @map the way the user did: twice in order, then random
 * pages; check a byte of each page against the pattern. */
static void read_workload(const unsigned char *map)
{
	uint64_t i, seed = 7;
	int pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < NPAGES; i++)
			CHECK(map[i * UF_PAGE_SIZE + 5] == ut_pattern(i * UF_PAGE_SIZE + 5),
			      "pass %d page %lu", pass, (unsigned long)i);
	for (i = 0; i < RANDOM_READS; i++) {
		uint64_t pg = rnd(&seed) % NPAGES;

		CHECK(map[pg * UF_PAGE_SIZE + 9] == ut_pattern(pg * UF_PAGE_SIZE + 9),
		      "random page %lu", (unsigned long)pg);
	}
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static void check_untouched(const char *path, const struct stat *before, const char *what)
{
	struct stat after;

	CHECK(stat(path, &after) == 0, "stat");
	CHECK(same_time(&before->st_mtim, &after.st_mtim), "%s: the file's mtime changed", what);
	CHECK(same_time(&before->st_ctim, &after.st_ctim), "%s: the file's ctime changed", what);
}

/* The oracle: the kernel's own shared mapping of the file, only read. */
static void run_kernel(const char *path)
{
	struct stat before;
	unsigned char *map;
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0, "open");
	CHECK(stat(path, &before) == 0, "stat");
	map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(map != MAP_FAILED, "mmap");
	read_workload(map);
	CHECK(msync(map, FILE_SIZE, MS_SYNC) == 0, "msync");
	munmap(map, FILE_SIZE);
	close(fd);
	check_untouched(path, &before, "kernel");
}

static void run(const char *path, unsigned int policy, int prot)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET, .reclaim_policy = policy };
	const char *what = policy == UF_RECLAIM_FIFO ? (prot & PROT_WRITE ? "fifo rw" : "fifo r")
						     : (prot & PROT_WRITE ? "clock rw" : "clock r");
	struct ut_sampler s;
	struct uf_object *obj;
	struct uf_stats st;
	struct stat before;
	struct uf_mm *mm;
	uint64_t max_cache;
	unsigned char *map;

	CHECK(stat(path, &before) == 0, "stat");
	mm = ut_mm_create(&cfg);
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &obj), 0);
	CHECK_RET(uf_mmap(mm, FILE_SIZE, prot, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	ut_sampler_start(&s, mm);
	read_workload(map);
	max_cache = ut_sampler_stop(&s);
	CHECK_RET(uf_msync(mm, map, FILE_SIZE, UF_MS_SYNC), 0);
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	printf("%s: max cache %lu pages (budget %lu + window %lu), evicted %lu, "
	       "written %lu, major %lu\n", what, (unsigned long)max_cache,
	       (unsigned long)BUDGET_PAGES, (unsigned long)WINDOW_PAGES,
	       (unsigned long)st.evicted_pages, (unsigned long)st.pages_written,
	       (unsigned long)st.major_faults);
	CHECK(st.evicted_pages > NPAGES, "%s: the budget evicted too little", what);
	CHECK(st.pages_written == 0, "%s: %lu pages that were only read were written back",
	      what, (unsigned long)st.pages_written);
	CHECK(max_cache <= BUDGET_PAGES + WINDOW_PAGES, "%s: cache reached %lu pages",
	      what, (unsigned long)max_cache);
	CHECK_RET(uf_munmap(mm, map, FILE_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	check_untouched(path, &before, what);
}

int main(void)
{
	char path[256];
	int fd = ut_make_file("/var/tmp", FILE_SIZE, path, sizeof(path));

	fsync(fd);
	close(fd);
	sleep(1);	/* a write-back now would show in the timestamps */
	run_kernel(path);
	run(path, UF_RECLAIM_CLOCK, PROT_READ);
	run(path, UF_RECLAIM_CLOCK, PROT_READ | PROT_WRITE);
	run(path, UF_RECLAIM_FIFO, PROT_READ);
	run(path, UF_RECLAIM_FIFO, PROT_READ | PROT_WRITE);
	unlink(path);
	return 0;
}
