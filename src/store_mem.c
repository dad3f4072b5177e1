// SPDX-License-Identifier: MIT
/*
 * The memory store: an object whose bytes live in memory only.  Its store
 * is a sparse memfd with the file store's methods, so written-back and
 * reclaimed pages are kept, and the write path is the same as for files.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

UF_EXPORT int uf_object_create_mem(struct uf_mm *mm, uint64_t size, struct uf_object **objp)
{
	void *store;
	int fd, ret;

	if (!mm || !objp)
		return -EINVAL;
	if (size > UF_MAX_SIZE)
		return -EFBIG;
	fd = memfd_create("ufault-store", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = uf_file_store_new(fd, &store);
	if (ret) {
		close(fd);
		return ret;
	}
	ret = uf_object_create(mm, &uf_file_store_ops, store, size, objp);
	if (ret)
		uf_file_store_ops.release(store);
	return ret;
}
