// SPDX-License-Identifier: MIT
/*
 * Per-thread bounce buffers for store reads and writes: uf_bounce_get(),
 * uf_bounce_put() (inline, bounce.h: a buffer a thread has kept is taken
 * and given back there); here, a new or larger buffer and the list's
 * freeing at thread exit.
 */
#define _GNU_SOURCE
#include "cache/bounce.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>


/* ------------------------------------------------------------------ */
/* Per-thread bounce buffers for store reads and writes                */
/* ------------------------------------------------------------------ */

/*
 * A thread keeps the buffers it has used on a free list and takes one per
 * level of nesting: a store's ->read may call uf_object_pread() on another
 * object (an overlay), whose fill needs a buffer of its own while the
 * outer fill's buffer is still in use.  Buffers are reused (a fresh
 * multi-MiB buffer per fill is 6-15x slower here) and freed at thread exit.
 *
 * A buffer of BOUNCE_HUGE or more is made a whole number of transparent
 * huge pages, where the system gives them on request: a new thread's first
 * large fill (a prefetch's fillers are new threads) otherwise pays a fault
 * for each 4 KiB page of its buffer as the store's read first writes it,
 * about 10 us each on this VM (5 ms for 2 MiB), against one fault of about
 * 70 us for a 2 MiB huge page.  Not below 1 MiB: a thread keeps its
 * buffers, and a smaller one would grow to 2 MiB.
 *
 * Even a huge page costs its zeroing, and on a guest whose host backs
 * memory lazily far more: so a large buffer that a thread leaves (at its
 * exit) or the insert thread no longer needs goes to a pool of the
 * process, POOL_SLOTS at most, where the next thread short of a large
 * buffer finds it.  A served process's handlers, its run-ahead worker and
 * an mm's insert thread come and go with their mm; the pool outlives them.
 * The slots are taken and filled with atomic exchanges, no lock: a buffer
 * may be given back from under any lock, and a fork child's copy of the
 * pool is its own.
 *
 * A large buffer is a mapping of its own, marked MADV_WIPEONFORK: after a
 * fork() each of its pages the parent's next read writes would otherwise
 * be copied on write, 4 KiB at a time (the kernel splits a shared huge
 * page to copy it), as long as the child lives; the child finds it
 * zeroed, still its own.
 */
#define BOUNCE_HUGE	(1u << 20)
#define HUGE_BYTES	((size_t)2 << 20)
#define POOL_SLOTS	40		/* large buffers the process keeps */
static struct uf_bounce *pool[POOL_SLOTS];
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
__thread struct uf_bounce *uf_bounce_spare;	/* this thread's spare buffers */
__thread bool uf_bounce_keyed;		/* bounce_key is set */

/* @len bytes of buffer: a mapping of whole huge pages, of its own, not
 * copied by a fork (above), for BOUNCE_HUGE or more; or NULL. */
static void *buf_alloc(size_t len)
{
	size_t span = len + HUGE_BYTES;
	char *p, *a;

	if (len < BOUNCE_HUGE)
		return aligned_alloc(PAGE_SIZE, len);
	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + len, (size_t)(p + span - (a + len)));
	(void)madvise(a, len, MADV_HUGEPAGE);		/* hints: */
	(void)madvise(a, len, MADV_WIPEONFORK);		/* both are */
	return a;
}

/* Free @p of buf_alloc(@len) (NULL: nothing). */
static void buf_free(void *p, size_t len)
{
	if (p && len >= BOUNCE_HUGE)
		munmap(p, len);
	else
		free(p);
}

/* A large buffer from the pool of at least @len bytes, or NULL.  One too
 * small is put back (or freed, where another took its slot). */
static struct uf_bounce *pool_take(size_t len)
{
	struct uf_bounce *b;
	size_t i;

	for (i = 0; i < POOL_SLOTS; i++) {
		if (!__atomic_load_n(&pool[i], __ATOMIC_RELAXED))
			continue;
		b = __atomic_exchange_n(&pool[i], NULL, __ATOMIC_ACQUIRE);
		if (b && b->len >= len)
			return b;
		if (b)
			uf_bounce_free(b);
	}
	return NULL;
}

/* Free @b (its buffer too), or keep it in the pool if it is large. */
void uf_bounce_free(struct uf_bounce *b)
{
	struct uf_bounce *none;
	size_t i;

	if (!b)
		return;
	b->next = NULL;
	if (b->len >= BOUNCE_HUGE) {
		/* the kernel may take it back (before another thread can
		 * take it and write it) */
		(void)madvise(b->p, b->len, MADV_FREE);
		for (i = 0; i < POOL_SLOTS; i++) {
			none = NULL;
			if (__atomic_compare_exchange_n(&pool[i], &none, b, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				return;
		}
	}
	buf_free(b->p, b->len);
	free(b);
}

static void bounce_free_all(void *arg)
{
	struct uf_bounce *b = *(struct uf_bounce **)arg, *next;

	for (; b; b = next) {
		next = b->next;
		uf_bounce_free(b);
	}
	uf_bounce_spare = NULL;
}

static void bounce_key_init(void)
{
	pthread_key_create(&bounce_key, bounce_free_all);
}

/* uf_bounce_get() (bounce.h) where this thread has no spare buffer as
 * large as @len. */
struct uf_bounce *uf_bounce_get_new(size_t len, void **bufp)
{
	struct uf_bounce *b = uf_bounce_spare;

	if (b) {
		uf_bounce_spare = b->next;
	} else {
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
	}
	if (b->len < len) {
		size_t size = (len + PAGE_SIZE - 1) & PAGE_MASK;
		struct uf_bounce *pb;
		void *p;

		if (size >= BOUNCE_HUGE && (pb = pool_take(size))) {
			uf_bounce_free(b);	/* (too small: pooled or freed) */
			*bufp = pb->p;
			return pb;
		}
		if (size >= BOUNCE_HUGE)
			size = (size + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
		p = buf_alloc(size);
		if (!p) {
			uf_bounce_put(b);
			return NULL;
		}
		buf_free(b->p, b->len);
		b->p = p;
		b->len = size;
	}
	*bufp = b->p;
	return b;
}

/* The first buffer a thread gives back: its exit frees the list (once
 * per thread: the key holds the list's head pointer, not the head). */
void uf_bounce_keep(void)
{
	pthread_once(&bounce_once, bounce_key_init);
	pthread_setspecific(bounce_key, &uf_bounce_spare);
	uf_bounce_keyed = true;
}
