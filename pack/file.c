// SPDX-License-Identifier: MIT
/*
 * uf_pack_open(): a packed snapshot in a file.  The raw store is the file
 * read with pread(2); the packed store (store.c) serves it.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "ufault-pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct pk_file {
	int fd;
};

static ssize_t file_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct pk_file *f = store;
	ssize_t n;

	do
		n = pread(f->fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static void file_release(void *store)
{
	struct pk_file *f = store;

	close(f->fd);
	free(f);
}

static const struct uf_store_ops file_ops = {
	.read		= file_read,
	.release	= file_release,
};

PK_EXPORT int uf_pack_open(struct uf_mm *mm, const char *path, struct uf_object **objp)
{
	struct pk_file *f;
	struct stat sb;
	int ret;

	if (!mm || !path || !objp)
		return -EINVAL;
	f = malloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		ret = -errno;
		free(f);
		return ret;
	}
	if (fstat(f->fd, &sb) < 0)
		ret = -errno;
	else if (!S_ISREG(sb.st_mode))
		ret = -EINVAL;
	else
		ret = uf_pack_create(mm, &file_ops, f, (uint64_t)sb.st_size, objp);
	if (ret)
		file_release(f);
	return ret;
}
