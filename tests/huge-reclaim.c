/* Description: eviction under a cache budget stays exact with huge
 * extents on: an object four times the budget is read and written in
 * passes through a read-only and a writable mapping while extents are
 * collapsed and evicted (a huge extent goes whole, dirty pages written
 * first); every byte read matches the model, the cache stays near the
 * budget, and after a sync the file holds exactly the model.  Over the
 * CLOCK and FIFO policies. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>
#include <unistd.h>

#define MB	(1UL << 20)
#define SIZE	(24 * MB)
#define BUDGET	(6 * MB)

static void run(unsigned int policy)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET, .reclaim_policy = policy, .flags = getenv("NOHUGE") ? UF_MM_NO_HUGE : 0 };
	unsigned char *model, *p, *w;
	uint64_t i, collapses = 0;
	struct uf_object *obj;
	struct uf_stats st;
	struct uf_mm *mm;
	char path[256];
	int pass;

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, UT_STORE_DISK, SIZE, path, sizeof(path));
	model = malloc(SIZE);
	CHECK(model, "malloc");
	for (i = 0; i < SIZE; i++)
		model[i] = ut_pattern(i);
	CHECK(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p) == 0, "mmap");
	CHECK(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&w) == 0,
	      "mmap rw");

	for (pass = 0; pass < 4; pass++) {
		/* read sequentially; write one byte in every 37th page */
		for (i = 0; i < SIZE; i += 4096) {
			uint64_t j;

			if ((i / 4096) % 37 == (uint64_t)pass) {
				unsigned char b = (unsigned char)(pass * 31 + i / 4096);

				w[i + 11] = model[i + 11] = b;
			}
			for (j = i; j < i + 4096; j += 512)
				CHECK(p[j] == model[j], "pass %d: byte %lu is %u, want %u", pass,
				      (unsigned long)j, p[j], model[j]);
			CHECK(p[i + 11] == model[i + 11], "pass %d: written byte %lu", pass,
			      (unsigned long)i + 11);
			if (i % (2 * MB) == 0)
				usleep(30000);	/* a pause in the fills: collapses run */
		}
		CHECK(uf_mm_stats(mm, &st) == 0, "stats");
		collapses = st.huge_collapses;
		CHECK(st.cache_pages * 4096 <= BUDGET + 4 * MB, "pass %d: cache %lu pages", pass,
		      (unsigned long)st.cache_pages);
	}
	CHECK(uf_mm_stats(mm, &st) == 0, "stats");
	printf("policy %u: evicted %lu pages, %lu collapses, %lu huge extents now\n", policy,
	       (unsigned long)st.evicted_pages, (unsigned long)collapses,
	       (unsigned long)st.huge_extents);
	CHECK(st.evicted_pages > 0, "nothing evicted");
	CHECK(uf_object_sync(obj) == 0, "sync");
	for (i = 0; i < SIZE; i += 4096)
		CHECK(ut_file_byte(path, i + 11) == model[i + 11], "file byte %lu",
		      (unsigned long)i + 11);
	for (i = 0; i < SIZE; i += 65537)
		CHECK(ut_file_byte(path, i) == model[i], "file byte %lu", (unsigned long)i);
	uf_munmap(mm, w, SIZE);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(model);
	unlink(path);
}

int main(void)
{
	/* exact with or without collapses; run either way */
	if (!ut_collapse_works())
		printf("(MADV_COLLAPSE does not work here: no huge extents)\n");
	run(UF_RECLAIM_CLOCK);
	run(UF_RECLAIM_FIFO);
	return UT_PASS;
}
