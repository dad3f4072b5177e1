// SPDX-License-Identifier: MIT
/*
 * Memory a fork does not copy, for what only this process's handlers use.
 *
 * After fork() each private page either process writes costs a
 * copy-on-write fault for as long as the child lives: a page copied, a TLB
 * flush on every CPU that runs the parent's threads.  The handler that
 * reads a fork event builds the child's address space at once (as.c: its
 * record, its VMA table, the queues of its userfaultfd) while the parent
 * and the new child run; from the C library, each of those lands on a page
 * the fork has just write-protected, and the first malloc() waits for the
 * forking thread, which holds the C library's malloc locks until its
 * fork() has returned.
 *
 * Blocks from here come from mappings marked MADV_WIPEONFORK: a fork copies
 * no page table of them (the child gets zeros), so the parent goes on
 * writing them as before, and no lock here is one a fork holds.  Only for
 * state no fork child reads: a child finds this allocator empty, and a
 * child's uf_nocow_free() of a block its parent made does nothing (the
 * block reads as zeros there).
 *
 * Size classes of 32 bytes to 64 KiB, a 16-byte header in each block;
 * larger blocks are mappings of their own.  Freed small blocks go on their
 * class's list for the next allocation and are never given back to the
 * system.  Under AddressSanitizer a free block is poisoned.
 *
 * Locking: st->lock, taken under any lock (lockorder.h).
 */
#define _GNU_SOURCE
#include "lib/lib.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define NOCOW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NOCOW_ASAN 1
#endif
#endif
#ifdef NOCOW_ASAN
#include <sanitizer/asan_interface.h>
#define poison(p, n)	ASAN_POISON_MEMORY_REGION(p, n)
#define unpoison(p, n)	ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define poison(p, n)	((void)(p), (void)(n))
#define unpoison(p, n)	((void)(p), (void)(n))
#endif

#define MIN_SHIFT	5			/* 32 bytes */
#define MAX_SHIFT	16			/* 64 KiB */
#define NCLASS		(MAX_SHIFT - MIN_SHIFT + 1)
#define LARGE		NCLASS			/* hdr.cls of a mapping of its own */
#define CHUNK		(128u << 10)		/* carved into small blocks */
#define MAGIC		0x776f636eu		/* "ncow" */

struct hdr {
	uint32_t magic;		/* 0 in a fork child: its parent's block */
	uint32_t cls;
	uint64_t len;		/* LARGE: the mapping's length */
};

struct nocow_state {
	pthread_mutex_t lock;	/* all zeros: PTHREAD_MUTEX_INITIALIZER */
	pid_t pid;		/* whose blocks these are (0 in a fork child) */
	struct hdr *free[NCLASS];
	char *bump, *end;	/* the newest chunk's rest */
};

static struct nocow_state *st;
static pthread_once_t st_once = PTHREAD_ONCE_INIT;

/*
 * uf_nocow_map - an anonymous mapping of @len bytes (a page multiple) that
 * no fork copies, or NULL.  Populated: a block first used as a fork event
 * is read costs no fault.  munmap() it.
 */
void *uf_nocow_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* (4.14, older than any kernel ufault runs on: thread.c needs it too) */
	if (madvise(p, len, MADV_WIPEONFORK) < 0) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

static void st_init(void)
{
	st = uf_nocow_map((size_t)sysconf(_SC_PAGESIZE));
	if (st)
		uf_lockdep_class(&st->lock, UF_LK_NOCOW);
}

/* The state, as this process's (a fork child starts empty).  Locking:
 * st->lock held. */
static void __st_own(void)
{
	pid_t self = uf_pid();

	if (st->pid != self) {
		memset(st->free, 0, sizeof(st->free));
		st->bump = st->end = NULL;
		st->pid = self;
	}
}

static unsigned int size_class(size_t n)
{
	unsigned int c = 0;

	n += sizeof(struct hdr);
	while (c < NCLASS && ((size_t)1 << (c + MIN_SHIFT)) < n)
		c++;
	return c;
}

/* Bytes a block of @h holds. */
static size_t capacity(const struct hdr *h)
{
	if (h->cls == LARGE)
		return h->len - sizeof(*h);
	return ((size_t)1 << (h->cls + MIN_SHIFT)) - sizeof(*h);
}

/*
 * uf_nocow_alloc - @n zeroed bytes (aligned to 16) that a fork does not
 * copy, or NULL.  Free with uf_nocow_free().
 */
void *uf_nocow_alloc(size_t n)
{
	unsigned int c;
	struct hdr *h;

	if (n > SIZE_MAX / 2)
		return NULL;
	c = size_class(n);
	pthread_once(&st_once, st_init);
	if (!st)
		return NULL;
	if (c == LARGE) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t len = (n + sizeof(*h) + page - 1) & ~(page - 1);

		h = uf_nocow_map(len);
		if (!h)
			return NULL;
		*h = (struct hdr){ MAGIC, LARGE, len };
		return h + 1;
	}
	pthread_mutex_lock(&st->lock);
	__st_own();
	h = st->free[c];
	if (h) {
		unpoison(h, (size_t)1 << (c + MIN_SHIFT));
		st->free[c] = *(struct hdr **)(h + 1);
	} else {
		size_t sz = (size_t)1 << (c + MIN_SHIFT);

		if ((size_t)(st->end - st->bump) < sz) {
			/* (the old chunk's rest is left: a few KiB at most) */
			st->bump = uf_nocow_map(CHUNK);
			st->end = st->bump ? st->bump + CHUNK : NULL;
		}
		h = (struct hdr *)st->bump;
		if (h)
			st->bump += sz;
	}
	pthread_mutex_unlock(&st->lock);
	if (!h)
		return NULL;
	*h = (struct hdr){ MAGIC, c, 0 };
	memset(h + 1, 0, capacity(h));
	return h + 1;
}

/* uf_nocow_free - give back a block of uf_nocow_alloc(); NULL is ignored,
 * and so is, in a fork child, a block its parent made. */
void uf_nocow_free(void *p)
{
	struct hdr *h = p ? (struct hdr *)p - 1 : NULL;
	unsigned int c;

	if (!h || h->magic != MAGIC)
		return;
	c = h->cls;
	if (c == LARGE) {
		munmap(h, h->len);
		return;
	}
	pthread_mutex_lock(&st->lock);
	if (st->pid == uf_pid()) {
		h->magic = 0;
		*(struct hdr **)(h + 1) = st->free[c];
		st->free[c] = h;
		poison(h, (size_t)1 << (c + MIN_SHIFT));
	}
	pthread_mutex_unlock(&st->lock);
}

/*
 * uf_nocow_realloc - @p (of uf_nocow_alloc(), or NULL) resized to @n
 * bytes: its bytes kept up to @n, any new ones zero.  NULL without memory,
 * @p then unchanged.
 */
void *uf_nocow_realloc(void *p, size_t n)
{
	struct hdr *h = p ? (struct hdr *)p - 1 : NULL;
	size_t cap;
	void *q;

	if (!h)
		return uf_nocow_alloc(n);
	cap = capacity(h);
	if (n <= cap && size_class(n) == h->cls)
		return p;
	q = uf_nocow_alloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, n < cap ? n : cap);
	uf_nocow_free(p);
	return q;
}
