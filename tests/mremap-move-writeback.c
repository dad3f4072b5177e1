/* Description: mremap() with MREMAP_MAYMOVE moves and grows a shared
 * writable object mapping (64 -> 128 pages): the mapping follows to the
 * new address (uf_find_vma, uf_msync, uf_munmap work there, the old
 * address is gone); uncached pages read the file's bytes through the new
 * address and through uf_object_pread(); writes made before the move,
 * through the new address (also in the grown part) and by
 * uf_object_pwrite() all reach the file on uf_object_sync().  With
 * asynchronous and with synchronous write-protect.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define OLDLEN	(64 * PG)
#define NEWLEN	(128 * PG)
#define SIZE	(160 * PG)

static void run(unsigned int flags)
{
	struct uf_mm_config cfg = { .flags = flags };
	unsigned char *m, *n, *guard, buf[PG];
	struct uf_object *obj;
	struct uf_mm *mm;
	struct uf_vma *vma;
	char path[256];
	size_t i;

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, OLDLEN, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	/* keep the pages after it taken, so the mapping has to move */
	guard = mmap(m + OLDLEN, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	m[3 * PG + 1] = 0x31;			/* written before the move */
	CHECK(m[5 * PG] == ut_pattern(5 * PG), "page 5");

	n = mremap(m, OLDLEN, NEWLEN, MREMAP_MAYMOVE);
	CHECK(n != MAP_FAILED, "mremap: %s", strerror(errno));
	CHECK(n != m, "the mapping did not move");

	n[5 * PG + 2] = 0x52;			/* a cached page, moved */
	n[70 * PG + 3] = 0x73;			/* the grown part, write first */
	for (i = 0; i < 128; i += 9)		/* uncached pages, read */
		CHECK(n[i * PG + 7] == ut_pattern(i * PG + 7), "new address, page %zu: %#x",
		      i, n[i * PG + 7]);
	CHECK(uf_object_pread(obj, buf, PG, 40 * PG) == PG, "pread");
	for (i = 0; i < PG; i++)
		CHECK(buf[i] == ut_pattern(40 * PG + i), "pread page 40, byte %zu", i);
	CHECK(uf_object_pwrite(obj, "pw", 2, 50 * PG + 10) == 2, "pwrite");
	CHECK(n[50 * PG + 9] == ut_pattern(50 * PG + 9) && n[50 * PG + 10] == 'p',
	      "page 50 after pwrite");
	CHECK(n[100 * PG] == ut_pattern(100 * PG), "grown part, page 100");

	vma = uf_find_vma(mm, n + 100 * PG);
	CHECK(vma && uf_vma_start(vma) == n && uf_vma_len(vma) == NEWLEN, "uf_find_vma(new)");
	if (m + OLDLEN <= n || m >= n + NEWLEN)
		CHECK(uf_find_vma(mm, m) == NULL, "uf_find_vma(old)");
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 3 * PG + 1) == 0x31, "write before the move lost");
	CHECK(ut_file_byte(path, 5 * PG + 2) == 0x52, "write to a moved page lost");
	CHECK(ut_file_byte(path, 70 * PG + 3) == 0x73, "write to the grown part lost");
	CHECK(ut_file_byte(path, 50 * PG + 10) == 'p', "pwrite lost");
	CHECK(ut_file_byte(path, 50 * PG + 9) == ut_pattern(50 * PG + 9), "page 50 zeroed");
	CHECK(ut_file_byte(path, 30 * PG + 9) == ut_pattern(30 * PG + 9), "page 30 changed");

	/* a write after the first sync, found by uf_msync on the new range */
	n[90 * PG] = 0x90;
	CHECK_RET(uf_msync(mm, n, NEWLEN, UF_MS_SYNC), 0);
	CHECK(ut_file_byte(path, 90 * PG) == 0x90, "write after sync lost");

	CHECK_RET(uf_munmap(mm, n, NEWLEN), 0);
	if (guard != MAP_FAILED)
		munmap(guard, PG);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
}

int main(void)
{
	os_watchdog(60);
	ut_catch_signals();
	run(0);
	run(UF_MM_NO_WP_ASYNC);
	return 0;
}
