// SPDX-License-Identifier: MIT
/* Description: a packed snapshot's frames are each read from the raw store once (so decompressed once) for a sequential read of the whole mapping, for scattered faults within one frame, and when two threads read the same range at once; all-zero frames are never read; the readahead windows' frames come in runs (fewer raw reads than frames) */
#include "pack-test.h"

#include <pthread.h>
#include <sys/mman.h>

#define FRAME	(64u << 10)
#define FPAGES	(FRAME / UF_PAGE_SIZE)
#define SIZE	(8u << 20)
#define NFRAMES	(SIZE / FRAME)

static enum pt_kind kind(uint64_t pg)
{
	if (pg / FPAGES % 10 == 9)
		return PT_ZERO;		/* every tenth frame all zero */
	return pg % 4 == 1 ? PT_ZERO : pg % 2 ? PT_TEXT : PT_PATTERN;
}

/* Every frame read @want times (0 for the zero frames), whole-range
 * checks only in [@first, @last). */
static void check_counts(struct pt_counting *c, unsigned int first, unsigned int last,
			 unsigned int want, const char *what)
{
	for (unsigned int f = first; f < last; f++) {
		unsigned int w = c->fr[f].clen ? want : 0;

		CHECK(pt_counted(c, f) == w, "%s: frame %u read %u times, want %u", what, f,
		      pt_counted(c, f), w);
	}
}

struct reader {
	const unsigned char *map;
	const struct pt_image *im;
	unsigned long sum;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;

	for (uint64_t pg = 0; pg < SIZE / UF_PAGE_SIZE; pg++)
		r->sum += r->map[pg * UF_PAGE_SIZE + 17];
	return NULL;
}

int main(void)
{
	struct pt_counting c;
	struct pt_image im;
	struct uf_object *obj;
	struct uf_mm *mm;
	struct reader r[2];
	pthread_t th[2];
	unsigned char *map;
	unsigned long want = 0;
	void *a;

	ut_watchdog(120);
	pt_make(&im, SIZE, kind, FRAME);
	mm = ut_mm_create(NULL);
	pt_counting_init(&c, &im);
	CHECK(c.nframes == NFRAMES, "%lu frames", (unsigned long)c.nframes);
	for (uint64_t pg = 0; pg < SIZE / UF_PAGE_SIZE; pg++)
		want += pt_src_byte(&im, pg * UF_PAGE_SIZE + 17);

	/* one sequential reader */
	obj = pt_counting_object(mm, &c, false);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	r[0] = (struct reader){ .map = a, .im = &im };
	read_all(&r[0]);
	CHECK(r[0].sum == want, "sequential: checksum of bytes %lu, want %lu", r[0].sum, want);
	check_counts(&c, 0, NFRAMES, 1, "sequential");
	printf("sequential: %u raw reads for %u frames\n", pt_counted(&c, UINT64_MAX),
	       NFRAMES * 9 / 10);
	CHECK(pt_counted(&c, UINT64_MAX) < NFRAMES * 9 / 10 / 2,
	      "sequential: %u raw reads for %u frames: no runs", pt_counted(&c, UINT64_MAX),
	      NFRAMES * 9 / 10);
	CHECK_RET(uf_munmap(mm, a, SIZE), 0);
	uf_object_put(obj);

	/* scattered faults inside one frame: its first fault reads it */
	obj = pt_counting_object(mm, &c, false);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	map = a;
	for (unsigned int k = 0; k < FPAGES; k++) {
		uint64_t pg = 3 * FPAGES + (k * 7) % FPAGES;

		CHECK(map[pg * UF_PAGE_SIZE + 9] == pt_src_byte(&im, pg * UF_PAGE_SIZE + 9),
		      "scattered: page %lu", (unsigned long)pg);
	}
	CHECK(pt_counted(&c, 3) == 1, "scattered: frame 3 read %u times, want 1",
	      pt_counted(&c, 3));
	CHECK_RET(uf_munmap(mm, a, SIZE), 0);
	uf_object_put(obj);

	/* two threads reading the same pages at once */
	obj = pt_counting_object(mm, &c, false);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	for (int i = 0; i < 2; i++) {
		r[i] = (struct reader){ .map = a, .im = &im };
		CHECK(pthread_create(&th[i], NULL, read_all, &r[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK(r[i].sum == want, "two readers: checksum of bytes %lu, want %lu", r[i].sum, want);
	}
	check_counts(&c, 0, NFRAMES, 1, "two readers");
	CHECK_RET(uf_munmap(mm, a, SIZE), 0);
	uf_object_put(obj);

	pt_counting_fini(&c);
	uf_mm_destroy(mm);
	return UT_PASS;
}
