/* Description: the system's munmap() of a whole shared ufault mapping:
 * writes made before it reach the object on uf_object_sync(); the address
 * is no mapping of ufault's any more (uf_find_vma() is NULL); a uf_mmap()
 * of another object that lands in the old range gets its own writes to
 * its own object; and the program's own mapping placed there later is
 * left alone by uf_mm_destroy().
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	16
#define SIZE	(NPAGES * PG)

static void run(unsigned int flags)
{
	struct uf_mm_config cfg = { .flags = flags };
	struct uf_object *a, *b;
	unsigned char *ma, *mb, *own;
	char pa[256], pb[256];
	struct uf_mm *mm;
	int tries;

	mm = ut_mm_create(&cfg);
	a = ut_object(mm, UT_STORE_TMPFS, SIZE, pa, sizeof(pa));
	b = ut_object(mm, UT_STORE_TMPFS, SIZE, pb, sizeof(pb));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, a, 0, (void **)&ma), 0);
	ma[1 * PG] = 0xa1;
	ma[2 * PG + 7] = 0xa2;
	CHECK(munmap(ma, SIZE) == 0, "munmap");
	CHECK(uf_find_vma(mm, ma) == NULL, "uf_find_vma after munmap");
	CHECK(uf_find_vma(mm, ma + 5 * PG) == NULL, "uf_find_vma after munmap (page 5)");

	/* another object's mapping, in the old range if the kernel picks it */
	for (tries = 0; ; tries++) {
		CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, b, 0,
				  (void **)&mb), 0);
		if (mb == ma || tries == 8)
			break;
		CHECK_RET(uf_munmap(mm, mb, SIZE), 0);
	}
	if (mb != ma)
		fprintf(stderr, "note: the new mapping did not land in the old range\n");
	mb[1 * PG] = 0xb1;
	mb[3 * PG] = 0xb3;
	CHECK_RET(uf_object_sync(b), 0);
	CHECK_RET(uf_object_sync(a), 0);
	CHECK(ut_file_byte(pa, 1 * PG) == 0xa1, "a: write before munmap lost");
	CHECK(ut_file_byte(pa, 2 * PG + 7) == 0xa2, "a: write before munmap lost");
	CHECK(ut_file_byte(pa, 3 * PG) == ut_pattern(3 * PG), "a: got b's write");
	CHECK(ut_file_byte(pb, 1 * PG) == 0xb1, "b: write lost");
	CHECK(ut_file_byte(pb, 3 * PG) == 0xb3, "b: write lost");

	/* the program's own mapping over b's old range, after a plain munmap */
	CHECK(munmap(mb, SIZE) == 0, "munmap b");
	own = mmap(mb, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(own == mb, "mmap");
	memset(own, 0x5c, SIZE);
	uf_object_put(a);
	uf_object_put(b);
	uf_mm_destroy(mm);
	CHECK(own[0] == 0x5c && own[SIZE - 1] == 0x5c, "the program's mapping changed");
	CHECK(ut_file_byte(pb, 3 * PG) == 0xb3, "b: write lost at the end");
	munmap(own, SIZE);
	unlink(pa);
	unlink(pb);
}

int main(void)
{
	os_watchdog(60);
	run(0);
	run(UF_MM_NO_WP_ASYNC);
	return 0;
}
