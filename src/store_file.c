// SPDX-License-Identifier: MIT
/*
 * The file store: an object's bytes live in a file (any file system).  The
 * memory store (store_mem.c) uses the same methods on a memfd.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <unistd.h>

struct file_store {
	int fd;
};

int uf_file_store_new(int fd, void **storep)
{
	struct file_store *fs = malloc(sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->fd = fd;
	*storep = fs;
	return 0;
}

static ssize_t file_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct file_store *fs = store;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fs->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;		/* end of file: the rest reads zero */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int file_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct file_store *fs = store;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fs->fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

static int file_truncate(void *store, uint64_t size)
{
	struct file_store *fs = store;

	return ftruncate(fs->fd, (off_t)size) < 0 ? -errno : 0;
}

static int file_punch_hole(void *store, uint64_t off, uint64_t len)
{
	struct file_store *fs = store;

	if (fallocate(fs->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		return errno == EOPNOTSUPP || errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

static int file_sync(void *store)
{
	struct file_store *fs = store;

	return fdatasync(fs->fd) < 0 ? -errno : 0;
}

static void file_release(void *store)
{
	struct file_store *fs = store;

	close(fs->fd);
	free(fs);
}

const struct uf_store_ops uf_file_store_ops = {
	.read		= file_read,
	.write		= file_write,
	.truncate	= file_truncate,
	.punch_hole	= file_punch_hole,
	.sync		= file_sync,
	.release	= file_release,
};
