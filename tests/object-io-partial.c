/* Description: uf_object_pread() and uf_object_pwrite() whose buffer faults
 * part-way (its second half a ufault mapping past its own object's end)
 * return the bytes done, as pread(2) and pwrite(2) do on the same buffer;
 * -EFAULT only when the first byte faults. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG	UF_PAGE_SIZE

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *src, *buf_obj;
	unsigned char *buf, check[8 * PG];
	char path[256], kpath[256];
	uint64_t i;
	int fd, kfd;

	/* the source: 8 pages of the pattern, as an object and as a file */
	src = ut_object(mm, UT_STORE_TMPFS, 8 * PG, path, sizeof(path));
	fd = open(path, O_RDWR);
	CHECK(fd >= 0, "open");
	/* the buffer: 8 pages mapped over an object of 4, so its second half
	 * is past that object's end (an access there: SIGBUS; a system
	 * call's: EFAULT) */
	CHECK_RET(uf_object_create_mem(mm, 4 * PG, &buf_obj), 0);
	CHECK_RET(uf_mmap(mm, 8 * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, buf_obj, 0,
			  (void **)&buf), 0);

	/* the kernel's answer first, on a file of its own */
	kfd = ut_make_file("/dev/shm", 8 * PG, kpath, sizeof(kpath));
	CHECK_RET(pread(kfd, buf, 8 * PG, 0), 4 * PG);
	CHECK_RET(pwrite(kfd, buf, 8 * PG, 0), 4 * PG);
	close(kfd);
	unlink(kpath);
	memset(buf, 0, 4 * PG);

	CHECK_RET(uf_object_pread(src, buf, 8 * PG, 0), 4 * PG);
	for (i = 0; i < 4 * PG; i++)
		CHECK(buf[i] == ut_pattern(i), "byte %lu read wrong", (unsigned long)i);
	/* starting in the bad half: nothing done */
	CHECK_RET(uf_object_pread(src, buf + 4 * PG, 2 * PG, 0), -EFAULT);

	/* pwrite from the buffer: its first half goes in, the rest of the
	 * object is untouched */
	memset(buf, 0xa5, 4 * PG);
	CHECK_RET(uf_object_pwrite(src, buf, 8 * PG, 0), 4 * PG);
	CHECK_RET(uf_object_pwrite(src, buf + 4 * PG, PG, 0), -EFAULT);
	CHECK_RET(uf_object_size(src), 8 * PG);
	CHECK_RET(uf_object_pread(src, check, 8 * PG, 0), 8 * PG);
	for (i = 0; i < 8 * PG; i++)
		CHECK(check[i] == (i < 4 * PG ? 0xa5 : ut_pattern(i)), "byte %lu after pwrite",
		      (unsigned long)i);
	/* ... and reaches the file */
	CHECK_RET(uf_object_sync(src), 0);
	CHECK_RET(pread(fd, check, 8 * PG, 0), 8 * PG);
	for (i = 0; i < 8 * PG; i++)
		CHECK(check[i] == (i < 4 * PG ? 0xa5 : ut_pattern(i)), "file byte %lu",
		      (unsigned long)i);

	CHECK_RET(uf_munmap(mm, buf, 8 * PG), 0);
	uf_object_put(buf_obj);
	uf_object_put(src);
	uf_mm_destroy(mm);
	close(fd);
	unlink(path);
	return 0;
}
