/* Description: the system's mprotect() adding PROT_WRITE to a read-only
 * shared mapping: for an object opened O_RDWR the writes it allows reach
 * the file on uf_object_sync() and uf_msync() (none is lost silently); for
 * an object opened O_RDONLY what is written stays in that one mapping: the
 * object, its other mappings and the file keep their bytes.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	32
#define SIZE	(NPAGES * PG)

static void file_read(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len, "read %s", path);
	close(fd);
}

static void writable_object(unsigned int flags)
{
	struct uf_mm_config cfg = { .flags = flags };
	struct uf_object *obj;
	struct uf_mm *mm;
	unsigned char *m;
	char path[256], buf[4];

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK(m[0] == ut_pattern(0), "page 0");
	CHECK(m[3 * PG] == ut_pattern(3 * PG), "page 3");
	CHECK(mprotect(m, SIZE, PROT_READ | PROT_WRITE) == 0, "mprotect: %s", strerror(errno));
	memcpy(m, "NEW", 3);			/* cached, mapped read-only before */
	memcpy(m + 3 * PG, "NEW", 3);		/* cached */
	memcpy(m + 9 * PG, "NEW", 3);		/* uncached: a write fault */
	CHECK_RET(uf_object_sync(obj), 0);
	file_read(path, buf, 3, 0);
	CHECK(!memcmp(buf, "NEW", 3), "page 0: write lost (%.3s)", buf);
	file_read(path, buf, 3, 3 * PG);
	CHECK(!memcmp(buf, "NEW", 3), "page 3: write lost (%.3s)", buf);
	file_read(path, buf, 3, 9 * PG);
	CHECK(!memcmp(buf, "NEW", 3), "page 9: write lost (%.3s)", buf);
	/* and again after a sync: writes keep being found */
	memcpy(m + 3 * PG, "TWO", 3);
	CHECK_RET(uf_msync(mm, m, SIZE, UF_MS_SYNC), 0);
	file_read(path, buf, 3, 3 * PG);
	CHECK(!memcmp(buf, "TWO", 3), "page 3: second write lost (%.3s)", buf);
	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
}

static void readonly_object(void)
{
	struct uf_object *obj;
	struct uf_mm *mm;
	unsigned char *m, *other, buf[4];
	char path[256];
	int fd;

	mm = ut_mm_create(NULL);
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&other), 0);
	CHECK(m[0] == ut_pattern(0), "page 0");
	/* refused, or the writes stay in that mapping: never in the object */
	if (mprotect(m, SIZE, PROT_READ | PROT_WRITE) == 0) {
		memcpy(m, "NEW", 3);
		memcpy(m + 5 * PG, "NEW", 3);
	} else {
		CHECK(errno == EACCES, "mprotect: %s", strerror(errno));
	}
	CHECK(uf_object_pread(obj, buf, 3, 0) == 3, "pread");
	CHECK(buf[0] == ut_pattern(0) && buf[1] == ut_pattern(1), "object changed (page 0)");
	CHECK(uf_object_pread(obj, buf, 3, 5 * PG) == 3, "pread");
	CHECK(buf[0] == ut_pattern(5 * PG), "object changed (page 5)");
	CHECK(other[1] == ut_pattern(1) && other[5 * PG] == ut_pattern(5 * PG),
	      "another mapping sees the write");
	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	CHECK_RET(uf_munmap(mm, other, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
}

int main(void)
{
	os_watchdog(60);
	writable_object(0);
	writable_object(UF_MM_NO_WP_ASYNC);
	readonly_object();
	return 0;
}
