/* Description: mremap() shrinking a shared writable object mapping in
 * place: the mapping is the shorter length for uf_find_vma()/uf_munmap();
 * writes made to the cut-off part before the shrink reach the file on
 * uf_object_sync(); the program's own mapping placed in the freed range
 * is left alone by uf_mm_destroy().
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define SIZE	(32 * PG)

int main(void)
{
	struct uf_object *obj;
	struct uf_vma *vma;
	struct uf_mm *mm;
	unsigned char *m, *own;
	char path[256];

	os_watchdog(60);
	mm = ut_mm_create(NULL);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	m[20 * PG] = 0x20;
	m[3 * PG] = 0x03;
	CHECK(mremap(m, SIZE, 16 * PG, 0) == m, "mremap: %s", strerror(errno));
	/* the freed range taken at once, before any call that may map memory
	 * (a sync's buffers, the sanitizers' allocators) could land there */
	own = mmap(m + 16 * PG, 16 * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(own == m + 16 * PG, "mmap in the freed range: %s", strerror(errno));
	memset(own, 0x77, 16 * PG);
	vma = uf_find_vma(mm, m);
	CHECK(vma && uf_vma_len(vma) == 16 * PG, "length %zu", vma ? uf_vma_len(vma) : 0);
	CHECK(uf_find_vma(mm, m + 20 * PG) == NULL, "uf_find_vma in the cut-off part");
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 20 * PG) == 0x20, "write to the cut-off part lost");
	CHECK(ut_file_byte(path, 3 * PG) == 0x03, "write lost");
	m[4 * PG] = 0x04;
	CHECK_RET(uf_munmap(mm, m, 16 * PG), 0);
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 4 * PG) == 0x04, "write before uf_munmap lost");
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK(own[0] == 0x77 && own[16 * PG - 1] == 0x77, "the program's mapping changed");
	munmap(own, 16 * PG);
	unlink(path);
	return 0;
}
