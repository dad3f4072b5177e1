// SPDX-License-Identifier: MIT
/* Description: a guest-like image, half all-zero pages and half text-like pages in a scattered order, packs to at most half its size (zero pages cost no bytes), and reads back as the same bytes */
#include "pack-test.h"

#include <sys/mman.h>

#define SIZE	(32u << 20)

/* Zero or text, half and half, in runs of 1 to 8 pages, like a guest's
 * memory: free pages between the page cache's and the heap's. */
static enum pt_kind kind(uint64_t pg)
{
	uint64_t run = pg / 8, s = run * 0x9E3779B97F4A7C15ULL + 7;

	s ^= s >> 29;
	return (s ^ (pg % 8 < (s >> 7) % 8)) & 1 ? PT_ZERO : PT_TEXT;
}

int main(void)
{
	struct pt_image im;
	struct uf_object *obj;
	struct uf_mm *mm;
	uint64_t zero = 0, npages = SIZE / UF_PAGE_SIZE;
	unsigned char *map, buf[UF_PAGE_SIZE];
	void *a;

	ut_watchdog(120);
	for (uint64_t pg = 0; pg < npages; pg++)
		zero += kind(pg) == PT_ZERO;
	CHECK(zero > npages * 45 / 100 && zero < npages * 55 / 100, "%lu zero pages of %lu",
	      (unsigned long)zero, (unsigned long)npages);
	pt_make(&im, SIZE, kind, 0);
	printf("%u MiB, %lu zero pages of %lu: packed %lu bytes (%.1f%%), %lu frames\n",
	       SIZE >> 20, (unsigned long)zero, (unsigned long)npages,
	       (unsigned long)im.st.packed_size, 100.0 * (double)im.st.packed_size / SIZE,
	       (unsigned long)im.st.frames);
	CHECK(im.st.zero_pages == zero, "zero pages %lu, want %lu", (unsigned long)im.st.zero_pages,
	      (unsigned long)zero);
	CHECK(im.st.packed_size * 2 <= SIZE, "packed %lu bytes: more than half of %u",
	      (unsigned long)im.st.packed_size, SIZE);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	map = a;
	for (uint64_t pg = 0; pg < npages; pg++) {
		CHECK(pread(im.src_fd, buf, UF_PAGE_SIZE, (off_t)(pg * UF_PAGE_SIZE)) == UF_PAGE_SIZE,
		      "pread");
		CHECK(!memcmp(buf, map + pg * UF_PAGE_SIZE, UF_PAGE_SIZE), "page %lu differs",
		      (unsigned long)pg);
	}
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
