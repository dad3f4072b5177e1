// SPDX-License-Identifier: MIT
/* Description: a working set recorded from a packed snapshot (uf_object_record) and prefetched into a fresh object of it (uf_object_prefetch, through the packed store's batched read, over a raw store with and without a batched read of its own, which is then used) brings the recorded pages in with each frame read at most once, so that touching them afterwards reads nothing more from the raw store, and the bytes are right */
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

/* Prefetch @rec into a fresh object over the counting raw store (with its
 * batched read when @readv): no frame read twice, and touching the set
 * then reads the raw store no more. */
static void prefetch(struct pt_counting *c, const struct pt_image *im, const char *rec,
		     const char *scratch, const uint64_t *set, bool readv)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj = pt_counting_object(mm, c, readv);
	unsigned int before[2];
	unsigned char *map;

	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	before[0] = pt_counted(c, UINT64_MAX);
	before[1] = pt_counted(c, UINT64_MAX - 1);
	CHECK(before[0] + before[1] > 0, "the prefetch read nothing");
	for (uint64_t f = 0; f < c->nframes; f++)
		CHECK(pt_counted(c, f) <= 1, "readv %d: frame %lu read %u times by the prefetch",
		      readv, (unsigned long)f, pt_counted(c, f));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (size_t i = 0; i < NSET; i++)
		for (size_t b = 0; b < UF_PAGE_SIZE; b += 1021)
			CHECK(map[set[i] * UF_PAGE_SIZE + b] == pt_src_byte(im, set[i] * UF_PAGE_SIZE + b),
			      "readv %d: page %lu byte %zu", readv, (unsigned long)set[i], b);
	CHECK(pt_counted(c, UINT64_MAX) == before[0] && pt_counted(c, UINT64_MAX - 1) == before[1],
	      "readv %d: touching the prefetched set read the raw store again", readv);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
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

	pt_counting_init(&c, &im);
	prefetch(&c, &im, rec, scratch, set, false);
	printf("%d pages recorded; the prefetch read %u runs of frames with ->read;", n,
	       pt_counted(&c, UINT64_MAX));
	prefetch(&c, &im, rec, scratch, set, true);
	printf(" with the raw store's readv: %u readv calls, %u ->read\n",
	       pt_counted(&c, UINT64_MAX - 1), pt_counted(&c, UINT64_MAX));
	CHECK(pt_counted(&c, UINT64_MAX - 1) > 0, "the raw store's readv was not called");
	pt_counting_fini(&c);
	return UT_PASS;
}
