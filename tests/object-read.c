/* Description: a shared mapping of a file object reads the file's bytes on
 * every store; bytes past EOF in the last page read zero; one page past EOF
 * gets SIGBUS. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	uint64_t size = 300 * UF_PAGE_SIZE + 123;
	int s;

	ut_catch_signals();
	for (s = 0; s < UT_NSTORES; s++) {
		char path[256];
		struct uf_object *obj = ut_object(mm, s, size, path, sizeof(path));
		size_t len = 302 * UF_PAGE_SIZE;
		unsigned char *map, v;
		struct ut_fault f;
		struct uf_stats st;
		uint64_t i;

		CHECK_RET(uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
		for (i = 0; i < size; i++)
			CHECK(map[i] == ut_pattern(i), "%s: byte %lu = %u", ut_store_names[s],
			      (unsigned long)i, map[i]);
		for (; i < 301 * UF_PAGE_SIZE; i++)
			CHECK(map[i] == 0, "%s: past EOF byte %lu = %u", ut_store_names[s],
			      (unsigned long)i, map[i]);
		CHECK(ut_read(map + 301 * UF_PAGE_SIZE + 5, &v, &f) == SIGBUS, "%s: no SIGBUS",
		      ut_store_names[s]);
		CHECK(f.addr == map + 301 * UF_PAGE_SIZE + 5, "si_addr %p", f.addr);
		uf_vma_stats(uf_find_vma(mm, map), &st);
		printf("%s: major %lu minor %lu readahead %lu read %lu\n", ut_store_names[s],
		       (unsigned long)st.major_faults, (unsigned long)st.minor_faults,
		       (unsigned long)st.readahead_pages, (unsigned long)st.pages_read);
		CHECK_RET(uf_munmap(mm, map, len), 0);
		uf_object_put(obj);
		if (path[0])
			unlink(path);
	}
	uf_mm_destroy(mm);
	return 0;
}
