/* Description: a truncate that lands while an extent is being collapsed
 * does not turn huge extents off for good.  The kernel answers such a
 * collapse EINVAL (the range was truncated under it), which is also its
 * answer where MADV_COLLAPSE does not exist; taken for the latter, one
 * race left every later extent of the mm in 4 KiB pages (CI: 0 collapses
 * in huge-trunc-race).  Here cycles of fill, a pause about as long as the
 * collapser's wait for quiet, and a truncate to 0 and back land some
 * truncates inside collapses; afterwards an extent filled in peace must
 * still be collapsed.  Skips where MADV_COLLAPSE does not work. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXT		(2UL << 20)
#define SIZE		(2 * EXT)
#define CYCLES		120

static uint64_t collapses(struct uf_mm *mm)
{
	struct uf_stats st;

	CHECK(uf_mm_stats(mm, &st) == 0, "uf_mm_stats");
	return st.huge_collapses;
}

static void touch(const volatile unsigned char *p)
{
	size_t off;

	for (off = 0; off < SIZE; off += 4096)
		(void)p[off];
}

int main(void)
{
	struct uf_object *obj;
	struct uf_mm *mm;
	uint64_t before;
	unsigned char *p;
	unsigned int seed = (unsigned int)time(NULL);
	int i, ret;

	if (!ut_collapse_works()) {
		printf("skip: MADV_COLLAPSE does not make huge pages of a memfd here\n");
		return UT_SKIP;
	}
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_create_mem(mm, SIZE, &obj), 0);
	ret = uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %d", ret);

	/* the collapser waits 20 ms after the last fill, then takes about
	 * a millisecond an extent: pauses of 15-35 ms put some truncates
	 * inside a collapse */
	for (i = 0; i < CYCLES; i++) {
		touch(p);
		usleep(15000 + (unsigned int)(rand_r(&seed) % 20000));
		CHECK_RET(uf_object_truncate(obj, 0), 0);
		CHECK_RET(uf_object_truncate(obj, SIZE), 0);
	}
	before = collapses(mm);
	printf("%lu collapses in %d raced cycles\n", (unsigned long)before, CYCLES);

	/* in peace now: both extents collapse */
	touch(p);
	for (i = 0; i < 500 && collapses(mm) < before + 2; i++)
		usleep(10000);
	printf("%lu collapses after the races\n", (unsigned long)(collapses(mm) - before));
	CHECK(collapses(mm) >= before + 2, "after the races, %lu of 2 extents collapsed",
	      (unsigned long)(collapses(mm) - before));
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return 0;
}
