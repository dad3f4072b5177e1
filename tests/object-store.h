/* SPDX-License-Identifier: MIT */
/*
 * For the object-* tests: a recording store (a memory buffer behind
 * uf_object_create() that logs every read and write call and can be told
 * to fail), a probe for asynchronous write-protect, and a small PRNG.
 * Everything lives in a context struct the test owns: no global state.
 * Not a test program itself (the Makefile builds tests/<name>.c only).
 */
#ifndef UT_OBJECT_STORE_H
#define UT_OBJECT_STORE_H

#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OS_UNUSED __attribute__((unused))

struct os_io {
	uint64_t off;
	size_t len;
	int ret;		/* what the call returned (writes: 0 or -errno) */
};

struct os_store {
	pthread_mutex_t lock;
	unsigned char *data;
	uint64_t size;

	struct os_io *writes;	/* every write call, failed ones too */
	size_t nwrites, wcap;
	struct os_io *reads;	/* every read call */
	size_t nreads, rcap;
	unsigned int nsyncs;

	int fail_write;		/* nonzero: write returns it (a -errno) */
	uint64_t bad_page;	/* a read covering it returns -EIO; UINT64_MAX: none */
};

static OS_UNUSED void os_log(struct os_io **v, size_t *n, size_t *cap, uint64_t off,
			     size_t len, int ret)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 256;
		struct os_io *p = realloc(*v, c * sizeof(*p));

		CHECK(p, "out of memory");
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = (struct os_io){ off, len, ret };
}

static OS_UNUSED ssize_t os_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct os_store *s = store;
	ssize_t ret;

	pthread_mutex_lock(&s->lock);
	if (s->bad_page != UINT64_MAX && off <= s->bad_page * UF_PAGE_SIZE &&
	    off + len > s->bad_page * UF_PAGE_SIZE) {
		ret = -EIO;
	} else {
		size_t n = off >= s->size ? 0 : (s->size - off < len ? (size_t)(s->size - off) : len);

		memcpy(buf, s->data + off, n);
		ret = (ssize_t)n;
	}
	os_log(&s->reads, &s->nreads, &s->rcap, off, len, (int)(ret < 0 ? ret : 0));
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static OS_UNUSED int os_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct os_store *s = store;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (s->fail_write)
		ret = s->fail_write;
	else if (off + len > s->size)
		ret = -ENOSPC;	/* ufault never writes past the object's end */
	else
		memcpy(s->data + off, buf, len);
	os_log(&s->writes, &s->nwrites, &s->wcap, off, len, ret);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static OS_UNUSED int os_truncate(void *store, uint64_t size)
{
	struct os_store *s = store;
	unsigned char *p;

	pthread_mutex_lock(&s->lock);
	p = realloc(s->data, size ? size : 1);
	CHECK(p, "out of memory");
	if (size > s->size)
		memset(p + s->size, 0, size - s->size);
	s->data = p;
	s->size = size;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static OS_UNUSED int os_sync(void *store)
{
	struct os_store *s = store;

	pthread_mutex_lock(&s->lock);
	s->nsyncs++;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* No ->release: the test owns the store and frees it after the last put. */
static const struct uf_store_ops os_ops OS_UNUSED = {
	.read		= os_read,
	.write		= os_write,
	.truncate	= os_truncate,
	.sync		= os_sync,
};

/* A store of @size bytes holding ut_pattern(). */
static OS_UNUSED void os_init(struct os_store *s, uint64_t size)
{
	uint64_t i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->data = malloc(size ? size : 1);
	CHECK(s->data, "out of memory");
	for (i = 0; i < size; i++)
		s->data[i] = ut_pattern(i);
	s->size = size;
	s->bad_page = UINT64_MAX;
}

static OS_UNUSED void os_fini(struct os_store *s)
{
	free(s->data);
	free(s->writes);
	free(s->reads);
	pthread_mutex_destroy(&s->lock);
}

static OS_UNUSED struct uf_object *os_object(struct uf_mm *mm, struct os_store *s)
{
	struct uf_object *obj = NULL;
	int ret = uf_object_create(mm, &os_ops, s, s->size, &obj);

	CHECK(ret == 0, "uf_object_create: %s", strerror(-ret));
	return obj;
}

static OS_UNUSED size_t os_nwrites(struct os_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nwrites;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static OS_UNUSED size_t os_nreads(struct os_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nreads;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/*
 * Count, per page, the successful store writes logged from index @from on
 * into @count[npages] (zeroed first).  Checks that every write starts on a
 * page boundary and covers whole pages, or ends exactly at @size.
 */
static OS_UNUSED void os_written_pages(struct os_store *s, size_t from, unsigned int *count,
				       uint64_t npages, uint64_t size)
{
	size_t i;

	memset(count, 0, npages * sizeof(*count));
	pthread_mutex_lock(&s->lock);
	for (i = from; i < s->nwrites; i++) {
		const struct os_io *w = &s->writes[i];
		uint64_t p;

		if (w->ret)
			continue;
		CHECK(w->off % UF_PAGE_SIZE == 0, "write at unaligned offset %lu",
		      (unsigned long)w->off);
		CHECK(w->len % UF_PAGE_SIZE == 0 || w->off + w->len == size,
		      "write [%lu, +%zu) neither whole pages nor up to the end %lu",
		      (unsigned long)w->off, w->len, (unsigned long)size);
		CHECK(w->off + w->len <= size, "write [%lu, +%zu) past the end %lu",
		      (unsigned long)w->off, w->len, (unsigned long)size);
		for (p = w->off / UF_PAGE_SIZE; p * UF_PAGE_SIZE < w->off + w->len; p++)
			if (p < npages)
				count[p]++;
	}
	pthread_mutex_unlock(&s->lock);
}

/*
 * Does this kernel give asynchronous write-protect (what exact dirty
 * tracking needs)?  Without it ufault takes every cached page of a shared
 * writable mapping as dirty, which is correct but not exact.
 */
static OS_UNUSED bool os_have_wp_async(void)
{
	const uint64_t need = (1ULL << 15) | (1ULL << 13) | (1ULL << 12);
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
	bool ok;

	if (fd < 0) {
		fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			int ufd = ioctl(fd, _IO(0xAA, 0x00), O_CLOEXEC);

			close(fd);
			fd = ufd;
		}
	}
	if (fd < 0)
		return false;
	ok = ioctl(fd, UFFDIO_API, &api) == 0 && (api.features & need) == need;
	close(fd);
	return ok;
}

static OS_UNUSED void os_watchdog_fired(int sig)
{
	static const char msg[] = "watchdog: the test hung (an access never completed)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(UT_FAIL);
	_exit(UT_FAIL);
}

/* A hang (an access whose fault is never answered) fails the test after
 * @seconds instead of running into the runner's time limit. */
static OS_UNUSED void os_watchdog(unsigned int seconds)
{
	signal(SIGALRM, os_watchdog_fired);
	alarm(seconds);
}

/*
 * Write one byte, catching the fault.  ut_write() in helpers.c does not
 * catch at -O2 (its store of the jump buffer pointer is dead-store
 * eliminated), so the copy loop of ut_copy_from() does the write.
 */
static OS_UNUSED int os_poke(volatile void *p, unsigned char val, struct ut_fault *f)
{
	return ut_copy_from((void *)p, &val, 1, f);
}

/* xorshift64*: a fixed-seed PRNG whose state the caller holds. */
static OS_UNUSED uint64_t os_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Total fault() calls (events) a mapping has seen. */
static OS_UNUSED uint64_t os_events(const struct uf_stats *st)
{
	return st->minor_faults + st->major_faults + st->sigbus + st->oom;
}

static OS_UNUSED struct uf_stats os_vma_stats(struct uf_mm *mm, const void *addr)
{
	struct uf_stats st;
	int ret = uf_vma_stats(uf_find_vma(mm, addr), &st);

	CHECK(ret == 0, "uf_vma_stats: %s", strerror(-ret));
	return st;
}

static OS_UNUSED struct uf_stats os_mm_stats(struct uf_mm *mm)
{
	struct uf_stats st;
	int ret = uf_mm_stats(mm, &st);

	CHECK(ret == 0, "uf_mm_stats: %s", strerror(-ret));
	return st;
}

#endif
