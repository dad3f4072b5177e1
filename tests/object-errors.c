/* Description: bad object and mapping requests return the documented
 * error and change nothing: a read-only object (uf_object_open O_RDONLY)
 * mapped PROT_WRITE shared is -EACCES while PROT_WRITE private is allowed
 * (its writes stay private); unaligned offset, length 0,
 * flags with both or neither of SHARED/PRIVATE, prot without PROT_READ are
 * -EINVAL; uf_object_open of a missing file is -ENOENT, of a directory
 * -EISDIR, with other oflags -EINVAL; uf_object_pwrite past the size
 * limit is -EFBIG; uf_object_pwrite and
 * uf_object_truncate on a read-only object are -EROFS; uf_object_create
 * without a read op is -EINVAL; uf_msync on a bad address or flags fails.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define SIZE	(8 * UF_PAGE_SIZE)

int main(void)
{
	static const struct uf_store_ops no_read = { .write = os_write };
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *ro, *rw, *obj = (struct uf_object *)0x1;
	unsigned char *map = (unsigned char *)0x1, *priv, v, buf[16];
	char path[256], dir[] = "/var/tmp/ufault-test-dir-XXXXXX";
	struct ut_fault f;
	struct os_store st;
	int fd;

	ut_catch_signals();
	os_watchdog(30);
	fd = ut_make_file("/var/tmp", SIZE, path, sizeof(path));
	close(fd);
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));

	/* uf_object_open */
	CHECK_RET(uf_object_open(mm, "/var/tmp/ufault-test-does-not-exist", O_RDONLY, &obj), -ENOENT);
	CHECK_RET(uf_object_open(mm, dir, O_RDONLY, &obj), -EISDIR);
	CHECK_RET(uf_object_open(mm, path, O_WRONLY, &obj), -EINVAL);
	CHECK_RET(uf_object_open(mm, path, O_RDWR | O_APPEND, &obj), -EINVAL);
	CHECK_RET(uf_object_open(NULL, path, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_object_open(mm, NULL, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, NULL), -EINVAL);
	CHECK(obj == (struct uf_object *)0x1, "a failed open wrote *objp");

	/* uf_object_create */
	os_init(&st, SIZE);
	CHECK_RET(uf_object_create(mm, &no_read, &st, SIZE, &obj), -EINVAL);
	CHECK_RET(uf_object_create(mm, NULL, &st, SIZE, &obj), -EINVAL);
	CHECK_RET(uf_object_create(NULL, &os_ops, &st, SIZE, &obj), -EINVAL);
	CHECK_RET(uf_object_create(mm, &os_ops, &st, SIZE, NULL), -EINVAL);
	CHECK(obj == (struct uf_object *)0x1, "a failed create wrote *objp");
	CHECK(os_nreads(&st) == 0 && os_nwrites(&st) == 0, "a failed create used the store");

	/* a read-only object */
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &ro), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, ro, 0, (void **)&map), -EACCES);
	CHECK(map == (unsigned char *)0x1, "a failed uf_mmap wrote *addrp");
	CHECK_RET(uf_object_pwrite(ro, "x", 1, 0), -EROFS);
	CHECK_RET(uf_object_truncate(ro, UF_PAGE_SIZE), -EROFS);
	CHECK_RET(uf_object_punch_hole(ro, 0, UF_PAGE_SIZE), -EROFS);
	CHECK(uf_object_size(ro) == SIZE, "size changed to %lu", (unsigned long)uf_object_size(ro));
	CHECK_RET(uf_object_pread(ro, buf, 4, 0), 4);
	CHECK(buf[0] == ut_pattern(0) && buf[3] == ut_pattern(3), "read-only pread bytes");
	/* PROT_WRITE private: allowed, copy-on-write, never reaches the file */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, ro, 0, (void **)&priv), 0);
	CHECK(os_poke(priv + 100, 0xee, &f) == 0, "private write on a read-only object: signal %d", f.sig);
	CHECK(priv[100] == 0xee, "private write lost");
	CHECK_RET(uf_object_pread(ro, buf, 1, 100), 1);
	CHECK(buf[0] == ut_pattern(100), "private write seen by pread");
	CHECK_RET(uf_object_sync(ro), 0);
	/* PROT_READ shared: allowed; a write there is SIGSEGV */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, ro, 0, (void **)&map), 0);
	CHECK(map[100] == ut_pattern(100), "shared read of a read-only object");
	CHECK(os_poke(map + 200, 1, &f) == SIGSEGV, "write to a PROT_READ mapping: signal %d", f.sig);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	CHECK_RET(uf_munmap(mm, priv, SIZE), 0);
	uf_object_put(ro);

	/* uf_mmap arguments */
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &rw), 0);
	map = (unsigned char *)0x1;
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, rw, 100, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, rw, UF_PAGE_SIZE / 2, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, 0, PROT_READ, UF_MAP_SHARED, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED | UF_MAP_PRIVATE, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, 0, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, 0x100 | UF_MAP_SHARED, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_WRITE, UF_MAP_SHARED, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_NONE, UF_MAP_SHARED, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(NULL, SIZE, PROT_READ, UF_MAP_SHARED, rw, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, NULL, 0, (void **)&map), -EINVAL);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, rw, 0, NULL), -EINVAL);
	CHECK(map == (unsigned char *)0x1, "a failed uf_mmap wrote *addrp");

	/* uf_msync arguments */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, rw, 0, (void **)&map), 0);
	CHECK_RET(uf_msync(mm, map + 1, UF_PAGE_SIZE, UF_MS_SYNC), -EINVAL);
	CHECK_RET(uf_msync(mm, map, UF_PAGE_SIZE, 0x1000), -EINVAL);
	CHECK_RET(uf_msync(mm, map, SIZE + UF_PAGE_SIZE, UF_MS_SYNC), -ENOMEM);
	CHECK_RET(uf_msync(mm, buf - ((uintptr_t)buf & (UF_PAGE_SIZE - 1)), UF_PAGE_SIZE, 0), -ENOMEM);
	CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), 0);

	/* pread/pwrite arguments; a write past the end extends the object
	 * (tests/object-pwrite-extend.c checks how) */
	CHECK_RET(uf_object_pread(NULL, buf, 1, 0), -EINVAL);
	CHECK_RET(uf_object_pwrite(NULL, buf, 1, 0), -EINVAL);
	CHECK_RET(uf_object_pread(rw, NULL, 1, 0), -EINVAL);
	CHECK_RET(uf_object_pread(rw, buf, 16, SIZE - 4), 4);
	CHECK_RET(uf_object_pread(rw, buf, 16, SIZE), 0);
	CHECK_RET(uf_object_pwrite(rw, "abcdefgh", 8, SIZE - 4), 8);
	CHECK(uf_object_size(rw) == SIZE + 4, "pwrite made the size %lu",
	      (unsigned long)uf_object_size(rw));
	CHECK_RET(uf_object_pwrite(rw, "abcdefgh", 8, 1ULL << 63), -EFBIG);
	CHECK_RET(uf_object_truncate(rw, SIZE), 0);
	CHECK(ut_read(map + SIZE - 1, &v, &f) == 0 && v == 'd', "last byte %u", v);
	CHECK_RET(uf_object_truncate(NULL, 0), -EINVAL);
	CHECK_RET(uf_object_punch_hole(rw, 0, 0), -EINVAL);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(rw);

	uf_mm_destroy(mm);
	os_fini(&st);
	unlink(path);
	rmdir(dir);
	return 0;
}
