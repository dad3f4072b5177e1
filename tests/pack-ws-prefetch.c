// SPDX-License-Identifier: MIT
/* Description: a working set recorded from a packed snapshot (uf_object_record) and prefetched into a fresh object of it (uf_object_prefetch, through the packed store's batched read) brings the recorded pages in with each frame read at most once, so that touching them afterwards reads nothing more from the raw store, and the bytes are right */
#include "pack-test.h"
#include "ws-test.h"

#define FRAME	(64u << 10)
#define FPAGES	(FRAME / UF_PAGE_SIZE)
#define SIZE	(16u << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define NSET	300

static enum pt_kind kind(uint64_t pg)
{
	return pg % 6 == 1 ? PT_ZERO : pg % 2 ? PT_TEXT : PT_PATTERN;
}

int main(void)
{
	char rec[64], scratch[80];
	uint64_t set[NSET], s = 12345;
	struct pt_counting c;
	struct pt_image im;
	struct uf_object *obj;
	struct uf_mm *mm;
	unsigned char *map;
	unsigned int before;
	int n, fd;

	ut_watchdog(120);
	pt_make(&im, SIZE, kind, FRAME);
	snprintf(rec, sizeof(rec), "/dev/shm/ufault-pack-ws-XXXXXX");
	fd = mkstemp(rec);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	pt_remember(rec);
	snprintf(scratch, sizeof(scratch), "%s.scratch", rec);
	pt_remember(scratch);
	for (size_t i = 0; i < NSET; i++)	/* runs of 3 and singles, scattered */
		set[i] = i % 4 != 3 && i ? (set[i - 1] + 1) % NPAGES : pt_rand(&s) % NPAGES;

	/* record: a packed object, its pages touched in the set's order */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (size_t i = 0; i < NSET; i++)
		CHECK(map[set[i] * UF_PAGE_SIZE + 1] == pt_src_byte(&im, set[i] * UF_PAGE_SIZE + 1),
		      "recording: page %lu", (unsigned long)set[i]);
	n = uf_object_record_stop(obj);
	CHECK(n > 0, "record_stop: %d", n);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* prefetch into a fresh object over a counting raw store */
	mm = ut_mm_create(NULL);
	pt_counting_init(&c, &im);
	obj = pt_counting_object(mm, &c);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	before = pt_counted(&c, UINT64_MAX);
	CHECK(before > 0, "the prefetch read nothing");
	for (uint64_t f = 0; f < c.nframes; f++)
		CHECK(pt_counted(&c, f) <= 1, "frame %lu read %u times by the prefetch",
		      (unsigned long)f, pt_counted(&c, f));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (size_t i = 0; i < NSET; i++)
		for (size_t b = 0; b < UF_PAGE_SIZE; b += 1021)
			CHECK(map[set[i] * UF_PAGE_SIZE + b] == pt_src_byte(&im, set[i] * UF_PAGE_SIZE + b),
			      "page %lu byte %zu", (unsigned long)set[i], b);
	CHECK(pt_counted(&c, UINT64_MAX) == before,
	      "touching the prefetched set read the raw store %u more times",
	      pt_counted(&c, UINT64_MAX) - before);
	printf("%d pages recorded; the prefetch read %u runs of frames from the raw store\n", n,
	       before);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	pt_counting_fini(&c);
	uf_mm_destroy(mm);
	return UT_PASS;
}
