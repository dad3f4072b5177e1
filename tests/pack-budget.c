// SPDX-License-Identifier: MIT
/* Description: a packed snapshot four times larger than the mm's cache budget reads right twice through one mapping, in order and scattered: pages the budget evicted are read again through the packed store, and the cache stays within the budget plus a readahead window */
#include "pack-test.h"

#include <sys/mman.h>

#define SIZE	(16u << 20)
#define BUDGET	(4u << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)

static enum pt_kind kind(uint64_t pg)
{
	return pg % 5 == 4 ? PT_ZERO : pg % 3 ? PT_PATTERN : PT_TEXT;
}

int main(void)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET };
	unsigned char buf[UF_PAGE_SIZE], *map;
	struct uf_object *obj;
	struct pt_image im;
	struct uf_stats st;
	struct uf_mm *mm;

	ut_watchdog(120);
	pt_make(&im, SIZE, kind, 0);
	mm = ut_mm_create(&cfg);
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t k = 0; k < NPAGES; k++) {
			uint64_t pg = pass ? (k * 2654435761u) % NPAGES : k;

			CHECK(pread(im.src_fd, buf, UF_PAGE_SIZE, (off_t)(pg * UF_PAGE_SIZE)) ==
			      UF_PAGE_SIZE, "pread");
			CHECK(!memcmp(buf, map + pg * UF_PAGE_SIZE, UF_PAGE_SIZE),
			      "pass %d: page %lu differs", pass, (unsigned long)pg);
		}
		CHECK_RET(uf_mm_stats(mm, &st), 0);
		CHECK(st.cache_pages * UF_PAGE_SIZE <= BUDGET + BUDGET / 8,
		      "pass %d: %lu pages cached over a budget of %u", pass,
		      (unsigned long)st.cache_pages, BUDGET / 4096);
	}
	CHECK(st.evicted_pages > 0, "nothing evicted");
	printf("%lu pages evicted, %lu read\n", (unsigned long)st.evicted_pages,
	       (unsigned long)st.pages_read);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
