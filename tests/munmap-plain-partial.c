/* Description: the system's munmap() of part of a shared ufault mapping
 * (its middle, then its head): the rest stays a mapping of the object at
 * the right offsets (uncached pages read the file's bytes, writes reach
 * the file); writes made to the unmapped part before the munmap reach the
 * file on uf_object_sync(); uf_find_vma() finds no mapping in the hole and
 * uf_msync() over it fails with -ENOMEM; uf_munmap() of each remaining
 * piece works.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	32
#define SIZE	(NPAGES * PG)

static void run(unsigned int flags)
{
	struct uf_mm_config cfg = { .flags = flags };
	struct uf_object *obj;
	struct uf_vma *vma;
	struct uf_mm *mm;
	unsigned char *m;
	char path[256];
	size_t i;

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	/* map from page 4 of the object: pgoff matters */
	CHECK_RET(uf_mmap(mm, SIZE - 4 * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 4 * PG,
			  (void **)&m), 0);
	m[10 * PG] = 0x10;			/* object page 14, unmapped below */
	m[11 * PG + 1] = 0x11;
	m[2 * PG] = 0x02;			/* object page 6, head */
	CHECK(munmap(m + 8 * PG, 8 * PG) == 0, "munmap middle");	/* pages 8..15 */
	CHECK(uf_find_vma(mm, m + 9 * PG) == NULL, "uf_find_vma in the hole");
	CHECK_RET(uf_msync(mm, m, 20 * PG, UF_MS_SYNC), -ENOMEM);
	vma = uf_find_vma(mm, m + 20 * PG);
	CHECK(vma && uf_vma_start(vma) == m + 16 * PG && uf_vma_len(vma) == 12 * PG,
	      "tail mapping: %p + %zu", vma ? uf_vma_start(vma) : NULL, vma ? uf_vma_len(vma) : 0);
	vma = uf_find_vma(mm, m);
	CHECK(vma && uf_vma_start(vma) == m && uf_vma_len(vma) == 8 * PG, "head mapping");
	for (i = 16; i < 28; i += 3)		/* tail: object page i + 4 */
		CHECK(m[i * PG + 5] == ut_pattern((i + 4) * PG + 5), "tail page %zu", i);
	m[20 * PG] = 0x20;
	m[5 * PG] = 0x05;
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 14 * PG) == 0x10, "write to the unmapped part lost");
	CHECK(ut_file_byte(path, 15 * PG + 1) == 0x11, "write to the unmapped part lost");
	CHECK(ut_file_byte(path, 6 * PG) == 0x02, "head write lost");
	CHECK(ut_file_byte(path, 24 * PG) == 0x20, "tail write lost");
	CHECK(ut_file_byte(path, 9 * PG) == 0x05, "head write after munmap lost");

	CHECK(munmap(m, 2 * PG) == 0, "munmap head");
	CHECK(uf_find_vma(mm, m) == NULL, "uf_find_vma after head munmap");
	m[3 * PG] = 0x33;
	CHECK_RET(uf_msync(mm, m + 2 * PG, 6 * PG, UF_MS_SYNC), 0);
	CHECK(ut_file_byte(path, 7 * PG) == 0x33, "write to the trimmed head lost");
	CHECK_RET(uf_munmap(mm, m + 2 * PG, 6 * PG), 0);
	CHECK_RET(uf_munmap(mm, m + 16 * PG, 12 * PG), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
}

int main(void)
{
	os_watchdog(60);
	run(0);
	run(UF_MM_NO_WP_ASYNC);
	return 0;
}
