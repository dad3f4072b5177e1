/* Description: uf_mprotect() changes a mapping's protection and keeps
 * dirty tracking right: a read-only shared mapping made writable (whole
 * or in part) has its writes reach the file on uf_object_sync(), and made
 * read-only again its writes fault; PROT_WRITE on a shared mapping of a
 * read-only object is -EACCES (a private one may write, privately); bad
 * arguments are -EINVAL, a range that is not all ufault mappings -ENOMEM,
 * and neither changes anything.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	16
#define SIZE	(NPAGES * PG)

static void writable(unsigned int flags)
{
	struct uf_mm_config cfg = { .flags = flags };
	struct uf_object *obj;
	struct ut_fault f;
	struct uf_mm *mm;
	unsigned char *m;
	char path[256];

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK(m[2 * PG] == ut_pattern(2 * PG), "page 2");
	CHECK(os_poke(m + 2 * PG, 1, &f) == SIGSEGV, "read-only mapping written");

	/* bad arguments change nothing */
	CHECK_RET(uf_mprotect(NULL, m, SIZE, PROT_READ), -EINVAL);
	CHECK_RET(uf_mprotect(mm, m + 1, PG, PROT_READ), -EINVAL);
	CHECK_RET(uf_mprotect(mm, m, SIZE, 0x100 | PROT_READ), -EINVAL);
	CHECK_RET(uf_mprotect(mm, m, SIZE + PG, PROT_READ | PROT_WRITE), -ENOMEM);
	CHECK(os_poke(m + 2 * PG, 1, &f) == SIGSEGV, "a failed uf_mprotect changed the mapping");

	CHECK_RET(uf_mprotect(mm, m, SIZE, PROT_READ | PROT_WRITE), 0);
	CHECK(os_poke(m + 2 * PG, 0x22, &f) == 0, "write after uf_mprotect: signal %d", f.sig);
	m[9 * PG] = 0x99;			/* uncached */
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 2 * PG) == 0x22, "page 2: write lost");
	CHECK(ut_file_byte(path, 9 * PG) == 0x99, "page 9: write lost");

	/* read-only again: what was written before still reaches the file */
	m[3 * PG] = 0x33;
	CHECK_RET(uf_mprotect(mm, m, SIZE, PROT_READ), 0);
	CHECK(os_poke(m + 3 * PG, 1, &f) == SIGSEGV, "write after PROT_READ");
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 3 * PG) == 0x33, "page 3: write lost");

	/* part of the mapping */
	CHECK_RET(uf_mprotect(mm, m + 4 * PG, 4 * PG, PROT_READ | PROT_WRITE), 0);
	m[5 * PG + 1] = 0x51;
	CHECK(os_poke(m + 1 * PG, 1, &f) == SIGSEGV, "page 1 writable");
	CHECK(os_poke(m + 8 * PG, 1, &f) == SIGSEGV, "page 8 writable");
	CHECK_RET(uf_msync(mm, m, SIZE, UF_MS_SYNC), 0);
	CHECK(ut_file_byte(path, 5 * PG + 1) == 0x51, "page 5: write lost");
	CHECK(ut_file_byte(path, 1 * PG) == ut_pattern(1 * PG), "page 1 changed");

	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
}

static void readonly(void)
{
	struct uf_object *obj;
	struct ut_fault f;
	struct uf_mm *mm;
	unsigned char *s, *p, buf[2];
	char path[256];
	int fd;

	mm = ut_mm_create(NULL);
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&s), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_PRIVATE, obj, 0, (void **)&p), 0);
	CHECK_RET(uf_mprotect(mm, s, SIZE, PROT_READ | PROT_WRITE), -EACCES);
	CHECK(os_poke(s, 1, &f) == SIGSEGV, "shared mapping of a read-only object written");
	CHECK_RET(uf_mprotect(mm, p, SIZE, PROT_READ | PROT_WRITE), 0);
	CHECK(os_poke(p + PG, 0x11, &f) == 0, "private write: signal %d", f.sig);
	CHECK(p[PG] == 0x11, "private write");
	CHECK(uf_object_pread(obj, buf, 1, PG) == 1 && buf[0] == ut_pattern(PG),
	      "the private write reached the object");
	CHECK(s[PG] == ut_pattern(PG), "the private write reached the shared mapping");
	CHECK_RET(uf_munmap(mm, s, SIZE), 0);
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK(ut_file_byte(path, PG) == ut_pattern(PG), "file changed");
	unlink(path);
}

int main(void)
{
	os_watchdog(60);
	ut_catch_signals();
	writable(0);
	writable(UF_MM_NO_WP_ASYNC);
	readonly();
	return 0;
}
