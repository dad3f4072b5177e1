// SPDX-License-Identifier: MIT
/* Description: four threads faulting a packed snapshot in four scattered orders, served by four handler threads, with frames (4 MiB) that outnumber the store's frame cache (8 slots), so that faults wait for each other's loads of a frame and loads evict frames in use a moment ago: every page reads right */
#include "pack-test.h"

#include <pthread.h>
#include <sys/mman.h>

#define FRAME	(4u << 20)
#define SIZE	(64u << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define NTHREADS 4

static enum pt_kind kind(uint64_t pg)
{
	return pg % 7 == 0 ? PT_ZERO : pg % 2 ? PT_TEXT : PT_PATTERN;
}

struct reader {
	const unsigned char *map;
	const struct pt_image *im;
	unsigned int seed;
	uint64_t bad;
};

static void *reader(void *arg)
{
	struct reader *r = arg;
	unsigned char want[16];

	/* a stride coprime with NPAGES: a sixteenth of the pages, each once,
	 * in the thread's own order */
	for (uint64_t k = 0; k < NPAGES / 16; k++) {
		uint64_t pg = (k * (2 * r->seed + 1) * 40503u + r->seed * 977u) % NPAGES;
		uint64_t off = pg * UF_PAGE_SIZE + (k % 4000);

		if (pread(r->im->src_fd, want, sizeof(want), (off_t)off) != sizeof(want) ||
		    memcmp(want, r->map + off, sizeof(want)))
			r->bad++;
	}
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = NTHREADS };
	struct reader r[NTHREADS];
	pthread_t th[NTHREADS];
	struct uf_object *obj;
	struct pt_image im;
	struct uf_mm *mm;
	void *map;

	ut_watchdog(150);
	pt_make(&im, SIZE, kind, FRAME);
	mm = ut_mm_create(&cfg);
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &map), 0);
	for (int i = 0; i < NTHREADS; i++) {
		r[i] = (struct reader){ .map = map, .im = &im, .seed = (unsigned int)i + 1 };
		CHECK(pthread_create(&th[i], NULL, reader, &r[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK(r[i].bad == 0, "thread %d: %lu pages wrong", i, (unsigned long)r[i].bad);
	}
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
