// SPDX-License-Identifier: MIT
/*
 * The file store: an object's bytes live in a file (any file system).  The
 * memory store (uf_object_create_mem(), object.c) uses the same methods on
 * a memfd.
 *
 * Consistency (ufault.7): a writable file object holds an open file
 * description lock (F_OFD_SETLK, a write lock on the whole file), so two
 * ufault users never write one file at once.  A process that does not
 * take the lock can still write the file; ufault notices it before its
 * own next write: the file's size, mtime and ctime are recorded after
 * each of ufault's writes, and a write that finds them moved fails with
 * -ESTALE instead of overwriting the other writer's bytes (writeback then
 * keeps the pages dirty).  A change that lands within the file system's
 * timestamp granularity of ufault's own last write and keeps the size is
 * not seen.
 */
#define _GNU_SOURCE
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

struct file_store {
	int fd;
	bool check;			/* a shared file: watch for other writers */
	pthread_mutex_t lock;		/* @seen; one write at a time when @check */
	struct stat seen;		/* the file as ufault last left it */
};

static int store_new(int fd, bool check, void **storep)
{
	struct file_store *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->fd = fd;
	fs->check = check;
	pthread_mutex_init(&fs->lock, NULL);
	uf_lockdep_class(&fs->lock, UF_LK_STORE);
	if (check && fstat(fd, &fs->seen) < 0) {
		int ret = -errno;

		pthread_mutex_destroy(&fs->lock);
		free(fs);
		return ret;
	}
	*storep = fs;
	return 0;
}

/*
 * In a fork child: free the child's copy of a file store.  No ->release:
 * closing the child's descriptor leaves the open file description, and
 * its lock, to the parent; nothing is synced or unlocked.
 */
void uf_file_store_free_child(void *store)
{
	struct file_store *fs = store;

	close(fs->fd);
	free(fs);
}

/* A store over @fd that only ufault uses (the memory store's memfd). */
int uf_file_store_new(int fd, void **storep)
{
	return store_new(fd, false, storep);
}

/*
 * A store over the file @fd of uf_object_open().  @writer: take the
 * open file description lock that keeps other ufault writers out (-EBUSY
 * when one holds it) and check for foreign writes before each write.
 */
int uf_file_store_open(int fd, bool writer, void **storep)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };

	if (writer && fcntl(fd, F_OFD_SETLK, &fl) < 0)
		return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
	return store_new(fd, writer, storep);
}

/* The file under @store as fstat(2) sees it (working sets name it). */
int uf_file_store_stat(void *store, struct stat *st)
{
	struct file_store *fs = store;

	return fstat(fs->fd, st) < 0 ? -errno : 0;
}

/* Is the file under @store in memory (tmpfs, a memfd, ramfs, hugetlbfs),
 * where a read costs a copy and never waits for a device? */
bool uf_file_store_in_memory(void *store)
{
	struct file_store *fs = store;
	struct statfs sf;

	if (fstatfs(fs->fd, &sf) < 0)
		return false;
	return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC ||
	       sf.f_type == HUGETLBFS_MAGIC;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Has someone else changed the file since ufault last wrote it?
 * Locking: fs->lock held. */
static int __changed_behind(struct file_store *fs)
{
	struct stat st;

	if (!fs->check)
		return 0;
	if (fstat(fs->fd, &st) < 0)
		return -errno;
	if (st.st_size != fs->seen.st_size || !same_time(&st.st_mtim, &fs->seen.st_mtim) ||
	    !same_time(&st.st_ctim, &fs->seen.st_ctim))
		return -ESTALE;
	return 0;
}

/* Record the file as ufault's own write left it.  Locking: fs->lock held. */
static void __seen(struct file_store *fs)
{
	if (fs->check)
		fstat(fs->fd, &fs->seen);
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

/*
 * Many extents in few system calls (the prefetch of a working set,
 * uf_object_fill_runs()): extents in ascending order that lie at most
 * READV_GAP pages apart are read by one preadv(2) straight into their
 * buffers, the pages between them into a scratch page and dropped; an
 * extent past the file's end reads zero there, as file_read() does.
 */
#define READV_GAP	8
#define READV_IOV	256	/* iovecs of one preadv */

/* Read @n extents of @iov that are ascending and close (one preadv). */
static int file_readv_span(struct file_store *fs, const struct uf_store_iov *iov, size_t n,
			   char *scratch)
{
	struct iovec v[READV_IOV];
	size_t nv = 0, want = 0, i;
	ssize_t r;

	for (i = 0; i < n; i++) {
		uint64_t gap = i ? iov[i].off - (iov[i - 1].off + iov[i - 1].len) : 0;

		for (; gap; gap -= PAGE_SIZE) {
			v[nv++] = (struct iovec){ scratch, PAGE_SIZE };
			want += PAGE_SIZE;
		}
		v[nv++] = (struct iovec){ iov[i].buf, iov[i].len };
		want += iov[i].len;
	}
	do
		r = preadv(fs->fd, v, (int)nv, (off_t)iov[0].off);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if ((size_t)r == want)
		return 0;
	/* short: the file ends inside (or it shrank): extent by extent */
	for (i = 0; i < n; i++) {
		ssize_t k = file_read(fs, iov[i].buf, iov[i].len, iov[i].off);

		if (k < 0)
			return (int)k;
		memset((char *)iov[i].buf + k, 0, iov[i].len - (size_t)k);
	}
	return 0;
}

/* Locking: none (pread needs none). */
int uf_file_store_readv(void *store, const struct uf_store_iov *iov, size_t n)
{
	struct file_store *fs = store;
	char scratch[PAGE_SIZE] __attribute__((aligned(64)));
	size_t i = 0, j, nv;
	int ret = 0;

	while (i < n && !ret) {
		/* the span: following extents ascending, close, page aligned */
		nv = 1;
		for (j = i + 1; j < n; j++) {
			uint64_t end = iov[j - 1].off + iov[j - 1].len;
			size_t gap;

			if (iov[j - 1].len % PAGE_SIZE || iov[j].off < end ||
			    iov[j].off - end > READV_GAP * PAGE_SIZE)
				break;
			gap = (size_t)((iov[j].off - end) / PAGE_SIZE);
			if (nv + gap + 1 > READV_IOV)
				break;
			nv += gap + 1;
		}
		ret = file_readv_span(fs, iov + i, j - i, scratch);
		i = j;
	}
	return ret;
}

static int file_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct file_store *fs = store;
	size_t done = 0;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = __changed_behind(fs);
	while (!ret && done < len) {
		ssize_t n = pwrite(fs->fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		done += (size_t)n;
	}
	if (done)
		__seen(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

static int file_truncate(void *store, uint64_t size)
{
	struct file_store *fs = store;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = __changed_behind(fs);
	if (!ret && ftruncate(fs->fd, (off_t)size) < 0)
		ret = -errno;
	if (!ret)
		__seen(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

static int file_punch_hole(void *store, uint64_t off, uint64_t len)
{
	struct file_store *fs = store;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = __changed_behind(fs);
	if (!ret && fallocate(fs->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			      (off_t)len) < 0)
		ret = errno == EOPNOTSUPP || errno == ENOSYS ? -EOPNOTSUPP : -errno;
	if (!ret)
		__seen(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

static int file_sync(void *store)
{
	struct file_store *fs = store;

	return fdatasync(fs->fd) < 0 ? -errno : 0;
}

static void file_release(void *store)
{
	struct file_store *fs = store;

	close(fs->fd);		/* drops the OFD lock */
	pthread_mutex_destroy(&fs->lock);
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
