/* SPDX-License-Identifier: MIT */
/*
 * A store that injects faults, for tests/object-fault-injection.c: a
 * memory buffer behind uf_object_create() whose methods (read, write,
 * truncate, punch_hole, sync) each fail their Nth call, N drawn from a
 * seeded PRNG, with -EIO, -ENOMEM, a short count (read: fewer bytes,
 * which is not an error; write: part of the bytes, then -EIO) or a delay
 * (then the call succeeds).  It counts what it injected.
 * Not a test program itself (the Makefile builds tests/<name>.c only).
 */
#ifndef UT_FAULT_STORE_H
#define UT_FAULT_STORE_H

#include "object-store.h"

enum fst_method { FST_READ, FST_WRITE, FST_TRUNCATE, FST_PUNCH, FST_SYNC, FST_NMETHODS };
enum fst_kind { FST_EIO, FST_ENOMEM, FST_SHORT, FST_DELAY, FST_NKINDS };

static const char *const fst_method_names[FST_NMETHODS] OS_UNUSED = {
	"read", "write", "truncate", "punch_hole", "sync",
};
static const char *const fst_kind_names[FST_NKINDS] OS_UNUSED = {
	"EIO", "ENOMEM", "short", "delay",
};

struct fst_store {
	pthread_mutex_t lock;
	unsigned char *data;
	uint64_t size;
	uint64_t rng;
	unsigned int every;			/* mean calls between faults */
	uint64_t calls[FST_NMETHODS];
	uint64_t next_fault[FST_NMETHODS];	/* the call number that fails */
	uint64_t injected[FST_NMETHODS][FST_NKINDS];
	uint64_t read_errors;			/* reads that returned an error */
};

/*
 * Count a call of @m; return the fault to inject, or -1.
 * Locking: s->lock held.
 */
static OS_UNUSED int fst_next(struct fst_store *s, enum fst_method m)
{
	int kind;

	if (++s->calls[m] != s->next_fault[m])
		return -1;
	s->next_fault[m] = s->calls[m] + 1 + os_rand(&s->rng) % (2 * s->every);
	kind = (int)(os_rand(&s->rng) % FST_NKINDS);
	s->injected[m][kind]++;
	return kind;
}

static OS_UNUSED int fst_errno(int kind)
{
	return kind == FST_ENOMEM ? -ENOMEM : -EIO;
}

static OS_UNUSED void fst_delay(struct fst_store *s)
{
	unsigned int us = 1000 + (unsigned int)(os_rand(&s->rng) % 15000);

	pthread_mutex_unlock(&s->lock);
	usleep(us);
	pthread_mutex_lock(&s->lock);
}

static OS_UNUSED ssize_t fst_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct fst_store *s = store;
	int kind;
	size_t n;

	pthread_mutex_lock(&s->lock);
	kind = fst_next(s, FST_READ);
	if (kind == FST_EIO || kind == FST_ENOMEM) {
		s->read_errors++;
		pthread_mutex_unlock(&s->lock);
		return fst_errno(kind);
	}
	if (kind == FST_DELAY)
		fst_delay(s);
	n = off >= s->size ? 0 : (s->size - off < len ? (size_t)(s->size - off) : len);
	if (kind == FST_SHORT && n > 1)
		n = 1 + (size_t)(os_rand(&s->rng) % (n - 1));
	memcpy(buf, s->data + off, n);
	pthread_mutex_unlock(&s->lock);
	return (ssize_t)n;
}

static OS_UNUSED int fst_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct fst_store *s = store;
	int kind, ret = 0;

	pthread_mutex_lock(&s->lock);
	kind = fst_next(s, FST_WRITE);
	if (kind == FST_DELAY)
		fst_delay(s);
	if (off + len > s->size) {
		ret = -ENOSPC;		/* ufault never writes past the end */
	} else if (kind == FST_SHORT) {
		memcpy(s->data + off, buf, (size_t)(os_rand(&s->rng) % (len + 1)));	/* torn */
		ret = -EIO;
	} else if (kind == FST_EIO || kind == FST_ENOMEM) {
		ret = fst_errno(kind);
	} else {
		memcpy(s->data + off, buf, len);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static OS_UNUSED int fst_truncate(void *store, uint64_t size)
{
	struct fst_store *s = store;
	unsigned char *p;
	int kind;

	pthread_mutex_lock(&s->lock);
	kind = fst_next(s, FST_TRUNCATE);
	if (kind == FST_DELAY)
		fst_delay(s);
	if (kind >= 0 && kind != FST_DELAY) {
		pthread_mutex_unlock(&s->lock);
		return fst_errno(kind);
	}
	p = realloc(s->data, size ? size : 1);
	CHECK(p, "out of memory");
	if (size > s->size)
		memset(p + s->size, 0, size - s->size);
	s->data = p;
	s->size = size;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static OS_UNUSED int fst_punch(void *store, uint64_t off, uint64_t len)
{
	struct fst_store *s = store;
	int kind;

	pthread_mutex_lock(&s->lock);
	kind = fst_next(s, FST_PUNCH);
	if (kind == FST_DELAY)
		fst_delay(s);
	if (kind >= 0 && kind != FST_DELAY) {
		pthread_mutex_unlock(&s->lock);
		return fst_errno(kind);
	}
	if (off < s->size)
		memset(s->data + off, 0, s->size - off < len ? s->size - off : len);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static OS_UNUSED int fst_sync(void *store)
{
	struct fst_store *s = store;
	int kind;

	pthread_mutex_lock(&s->lock);
	kind = fst_next(s, FST_SYNC);
	if (kind == FST_DELAY)
		fst_delay(s);
	pthread_mutex_unlock(&s->lock);
	return kind >= 0 && kind != FST_DELAY ? fst_errno(kind) : 0;
}

static const struct uf_store_ops fst_ops OS_UNUSED = {
	.read		= fst_read,
	.write		= fst_write,
	.truncate	= fst_truncate,
	.punch_hole	= fst_punch,
	.sync		= fst_sync,
};

/* A store of @size bytes holding ut_pattern(); a fault about every
 * @every calls of each method. */
static OS_UNUSED void fst_init(struct fst_store *s, uint64_t size, uint64_t seed, unsigned int every)
{
	uint64_t i;
	int m;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->data = malloc(size ? size : 1);
	CHECK(s->data, "out of memory");
	for (i = 0; i < size; i++)
		s->data[i] = ut_pattern(i);
	s->size = size;
	s->rng = seed ? seed : 1;
	s->every = every ? every : 1;
	for (m = 0; m < FST_NMETHODS; m++)
		s->next_fault[m] = 1 + os_rand(&s->rng) % (2 * s->every);
}

static OS_UNUSED void fst_fini(struct fst_store *s)
{
	free(s->data);
	pthread_mutex_destroy(&s->lock);
}

#endif
