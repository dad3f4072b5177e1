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
 */
#define BOUNCE_HUGE	(1u << 20)
#define HUGE_BYTES	((size_t)2 << 20)
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
__thread struct uf_bounce *uf_bounce_spare;	/* this thread's spare buffers */
__thread bool uf_bounce_keyed;		/* bounce_key is set */

static void bounce_free_all(void *arg)
{
	struct uf_bounce *b = *(struct uf_bounce **)arg, *next;

	for (; b; b = next) {
		next = b->next;
		free(b->p);
		free(b);
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
		void *p;

		if (size >= BOUNCE_HUGE) {
			size = (size + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
			if (posix_memalign(&p, HUGE_BYTES, size))
				p = NULL;
			else
				(void)madvise(p, size, MADV_HUGEPAGE);	/* a hint */
		} else {
			p = aligned_alloc(PAGE_SIZE, size);
		}
		if (!p) {
			uf_bounce_put(b);
			return NULL;
		}
		free(b->p);
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
