/* SPDX-License-Identifier: MIT */
/*
 * cache/bounce.h - per-thread bounce buffers for store reads and writes
 * (bounce.c): a thread keeps the buffers it used, and takes and gives
 * them back here, inline; bounce.c makes a new or larger one and frees
 * them at the thread's exit.
 */
#ifndef UF_CACHE_BOUNCE_H
#define UF_CACHE_BOUNCE_H

#include "lib/lib.h"

struct uf_bounce {
	struct uf_bounce *next;
	void *p;
	size_t len;
};

extern __thread struct uf_bounce *uf_bounce_spare;	/* this thread's spare buffers */
extern __thread bool uf_bounce_keyed;		/* its exit frees them */
struct uf_bounce *uf_bounce_get_new(size_t len, void **bufp);
void uf_bounce_keep(void);
void uf_bounce_free(struct uf_bounce *b);

/* A buffer of @len bytes or more at *bufp, or NULL (no memory). */
static inline struct uf_bounce *uf_bounce_get(size_t len, void **bufp)
{
	struct uf_bounce *b = uf_bounce_spare;

	if (!b || b->len < len)
		return uf_bounce_get_new(len, bufp);
	uf_bounce_spare = b->next;
	*bufp = b->p;
	return b;
}

/* Give @b (or NULL) back to this thread's spares. */
static inline void uf_bounce_put(struct uf_bounce *b)
{
	if (!b)
		return;
	b->next = uf_bounce_spare;
	uf_bounce_spare = b;
	if (!uf_bounce_keyed)
		uf_bounce_keep();
}

#endif /* UF_CACHE_BOUNCE_H */
