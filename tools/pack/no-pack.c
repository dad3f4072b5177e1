// SPDX-License-Identifier: MIT
/*
 * no-pack.c - linked into ufault-serve and the pack tests in place of
 * libufault-pack when libzstd is not installed (see the Makefile), so they
 * build with the C library alone.  It still knows a packed snapshot by its
 * magic number, so that one is refused (-ENOTSUP) rather than served as
 * its compressed bytes; everything else is -ENOTSUP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <ufault-pack.h>

int uf_pack_probe(const struct uf_store_ops *ops, void *store)
{
	char m[UF_PACK_MAGIC_LEN];
	size_t done = 0;

	if (!ops || !ops->read)
		return -EINVAL;
	while (done < sizeof(m)) {
		ssize_t n = ops->read(store, m + done, sizeof(m) - done, done);

		if (n < 0)
			return (int)n;
		if (n == 0 || (size_t)n > sizeof(m) - done)
			return 0;
		done += (size_t)n;
	}
	return !memcmp(m, UF_PACK_MAGIC, sizeof(m));
}

int uf_pack_create(struct uf_mm *mm, const struct uf_store_ops *raw_ops, void *raw_store,
		   uint64_t raw_size, struct uf_object **objp)
{
	int ret = uf_pack_probe(raw_ops, raw_store);

	(void)mm;
	(void)raw_size;
	(void)objp;
	return ret < 0 ? ret : ret ? -ENOTSUP : -ENOEXEC;
}

int uf_pack_create_readv(struct uf_mm *mm, const struct uf_store_ops *raw_ops,
			 int (*raw_readv)(void *raw, const struct uf_store_iov *iov, size_t n),
			 void *raw_store, uint64_t raw_size, struct uf_object **objp)
{
	(void)raw_readv;
	return uf_pack_create(mm, raw_ops, raw_store, raw_size, objp);
}

int uf_pack_create_any(struct uf_mm *mm, const struct uf_store_ops *raw_ops,
		       int (*raw_readv)(void *raw, const struct uf_store_iov *iov, size_t n),
		       void *raw_store, uint64_t raw_size, struct uf_object **objp)
{
	int ret = uf_pack_create(mm, raw_ops, raw_store, raw_size, objp);

	if (ret != -ENOEXEC)
		return ret;
	ret = uf_object_create(mm, raw_ops, raw_store, raw_size, objp);
	if (!ret && raw_readv)
		uf_object_set_readv(*objp, raw_readv);
	return ret;
}

int uf_pack_open(struct uf_mm *mm, const char *path, struct uf_object **objp)
{
	char m[UF_PACK_MAGIC_LEN];
	int fd, ret;
	ssize_t n;

	(void)mm;
	(void)objp;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, m, sizeof(m), 0);
	ret = n < 0 ? -errno : n == (ssize_t)sizeof(m) && !memcmp(m, UF_PACK_MAGIC, sizeof(m)) ?
		-ENOTSUP : -ENOEXEC;
	close(fd);
	return ret;
}

int uf_pack_write(int src_fd, int dst_fd, const struct uf_pack_write_opts *opts,
		  struct uf_pack_write_stats *st)
{
	(void)src_fd;
	(void)dst_fd;
	(void)opts;
	(void)st;
	return -ENOTSUP;
}
