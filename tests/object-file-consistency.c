/* Description: file objects and other writers of the file.  An O_RDWR
 * uf_object_open holds an open-file-description write lock on the file:
 * a second O_RDWR open (ufault or F_OFD_SETLK) fails (-EBUSY), O_RDONLY
 * opens still work, and the lock goes with the last put.  ufault's own
 * writes, truncates and punches never trip the staleness check; a file
 * written behind ufault's back (its size, or its mtime, moved) makes the
 * next sync fail with -ESTALE, again on every later sync (the pages stay
 * dirty), and the other writer's bytes are not overwritten.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/stat.h>

#define SIZE	(16 * UF_PAGE_SIZE)

static bool other_lock_refused(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(path, O_RDWR), r;

	CHECK(fd >= 0, "open %s", path);
	r = fcntl(fd, F_OFD_SETLK, &fl);
	close(fd);
	return r < 0;
}

/* another writer, as another process would: its own fd, write(2) */
static void foreign_write(const char *path, const void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_WRONLY);

	CHECK(fd >= 0, "open %s", path);
	CHECK(pwrite(fd, buf, len, (off_t)off) == (ssize_t)len, "foreign pwrite");
	close(fd);
}

static void run(const char *dir)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj, *obj2 = NULL, *ro;
	unsigned char *map, b[16];
	char path[256];
	int fd, i;

	fd = ut_make_file(dir, SIZE, path, sizeof(path));
	close(fd);

	/* one writer at a time */
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &obj), 0);
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &obj2), -EBUSY);
	CHECK(obj2 == NULL, "a failed open wrote *objp");
	CHECK(other_lock_refused(path), "another F_OFD_SETLK write lock was granted");
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &ro), 0);
	uf_object_put(ro);

	/* ufault's own writes never look like someone else's */
	CHECK_RET(uf_mmap(mm, 2 * SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (i = 0; i < 40; i++) {
		map[(uint64_t)i * 997 % SIZE] = (unsigned char)i;
		CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), 0);
		CHECK_RET(uf_object_pwrite(obj, "abc", 3, (uint64_t)i * 1301 % SIZE), 3);
		if (i % 5 == 0)
			CHECK_RET(uf_object_truncate(obj, SIZE + UF_PAGE_SIZE * (uint64_t)(i % 3)), 0);
		if (i % 7 == 0)
			CHECK_RET(uf_object_punch_hole(obj, UF_PAGE_SIZE * 3, UF_PAGE_SIZE), 0);
		CHECK_RET(uf_object_sync(obj), 0);
	}
	CHECK_RET(uf_object_truncate(obj, SIZE), 0);
	CHECK_RET(uf_object_sync(obj), 0);

	/* someone else writes in place (the size stays): the mtime moves */
	usleep(50000);		/* past the timestamp granularity */
	foreign_write(path, "OTHER", 5, 5 * UF_PAGE_SIZE + 10);
	map[5 * UF_PAGE_SIZE] = 'u';	/* ufault's cached page 5 is older */
	CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), -ESTALE);
	CHECK_RET(uf_object_sync(obj), -ESTALE);	/* still dirty */
	fd = open(path, O_RDONLY);
	CHECK(pread(fd, b, 5, 5 * UF_PAGE_SIZE + 10) == 5 && memcmp(b, "OTHER", 5) == 0,
	      "the other writer's bytes were overwritten");
	close(fd);
	CHECK_RET(uf_object_truncate(obj, SIZE / 2), -ESTALE);
	CHECK(uf_object_size(obj) == SIZE, "a refused truncate changed the size");
	CHECK_RET(uf_munmap(mm, map, 2 * SIZE), 0);
	uf_object_put(obj);

	/* the lock went with the put; someone else changes the size */
	CHECK(!other_lock_refused(path), "the lock outlived the object");
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &obj), 0);
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), 1);
	foreign_write(path, "tail", 4, SIZE);
	CHECK_RET(uf_object_sync(obj), -ESTALE);
	uf_object_put(obj);

	uf_mm_destroy(mm);
	unlink(path);
}

int main(void)
{
	os_watchdog(60);
	run("/dev/shm");
	run("/var/tmp");
	return 0;
}
