/* Description: the system's madvise(MADV_REMOVE) on a shared ufault mapping
 * punches the object, as it punches a tmpfs or disk file: the removed pages
 * read zero through that mapping, another mapping and uf_object_pread()
 * (never a hang), written bytes there are gone, the store holds zeros after
 * uf_object_sync(), a write after the remove reaches the store, and the
 * pages around the range keep their bytes.
 */
#define _GNU_SOURCE
#include "object-store.h"
#include "watchdog.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	16
#define SIZE	(NPAGES * PG)

static void run(unsigned int flags, enum ut_store store)
{
	struct uf_mm_config cfg = { .flags = flags };
	unsigned char *m, *m2, b;
	struct uf_object *obj;
	struct uf_mm *mm;
	char path[256];
	size_t i;

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, store, SIZE, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m2), 0);
	for (i = 0; i < NPAGES; i++)		/* all cached */
		CHECK(m[i * PG + 9] == ut_pattern(i * PG + 9), "page %zu", i);
	m[4 * PG] = 0x44;			/* dirty, then removed */
	m[5 * PG + 1] = 0x55;
	m[3 * PG + 2] = 0x33;			/* dirty, kept */
	CHECK_RET(uf_object_sync(obj), 0);	/* the store has 0x44 now */
	m[4 * PG + 3] = 0x43;			/* dirty again, then removed */
	CHECK(m2[6 * PG + 7] == ut_pattern(6 * PG + 7), "second mapping");

	CHECK(madvise(m + 4 * PG, 4 * PG, MADV_REMOVE) == 0, "madvise: %m");

	/* pages 4..7 read zero everywhere; 7 is read by pread first */
	CHECK_RET(uf_object_pread(obj, &b, 1, 7 * PG + 3), 1);
	CHECK(b == 0, "pread of a removed page: %#x", b);
	CHECK(m[4 * PG] == 0 && m[4 * PG + 3] == 0, "removed dirty page: %#x %#x", m[4 * PG],
	      m[4 * PG + 3]);
	CHECK(m[5 * PG + 1] == 0, "removed page: %#x", m[5 * PG + 1]);
	CHECK(m2[6 * PG + 7] == 0, "removed page through the other mapping: %#x", m2[6 * PG + 7]);
	CHECK(m[7 * PG + 3] == 0, "removed page after pread: %#x", m[7 * PG + 3]);
	CHECK(m[3 * PG + 2] == 0x33 && m[8 * PG + 9] == ut_pattern(8 * PG + 9),
	      "pages around the range");
	m[6 * PG + 6] = 0x66;			/* a write after the remove */
	CHECK_RET(uf_object_sync(obj), 0);
	for (i = 4 * PG; i < 8 * PG; i += 97) {
		unsigned char want = i == 6 * PG + 6 ? 0x66 : 0;

		CHECK_RET(uf_object_pread(obj, &b, 1, i), 1);
		CHECK(b == want, "pread at %zu after sync: %#x", i, b);
		if (store != UT_STORE_MEM)
			CHECK(ut_file_byte(path, i) == want, "file byte %zu: %#x", i,
			      ut_file_byte(path, i));
	}
	if (store != UT_STORE_MEM) {
		CHECK(ut_file_byte(path, 6 * PG + 6) == 0x66, "write after the remove lost");
		CHECK(ut_file_byte(path, 3 * PG + 2) == 0x33, "write next to the range lost");
		CHECK(ut_file_byte(path, 8 * PG + 9) == ut_pattern(8 * PG + 9), "page 8");
	}
	CHECK_RET(uf_munmap(mm, m2, SIZE), 0);
	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	if (store != UT_STORE_MEM)
		unlink(path);
}

int main(void)
{
	ut_watchdog(60);
	run(0, UT_STORE_TMPFS);
	run(UF_MM_NO_WP_ASYNC, UT_STORE_TMPFS);
	run(0, UT_STORE_MEM);
	return 0;
}
