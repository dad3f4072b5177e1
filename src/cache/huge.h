/* SPDX-License-Identifier: MIT */
/*
 * cache/huge.h - what a fill tells the collapse of huge extents (huge.c),
 * inline: a fill that completes no 2 MiB extent runs no code of huge.c.
 * The rest of huge.c's calls are in cache.h.
 */
#ifndef UF_CACHE_HUGE_H
#define UF_CACHE_HUGE_H

#include "cache/cache.h"

#include <time.h>

/* What a fill stamps of mm->huge, inline: huge.c's struct uf_huge begins
 * with it. */
struct uf_huge_fills {
	bool unsupported;		/* MADV_COLLAPSE said EINVAL, no race (atomic) */
	uint64_t last_fill_ns;		/* the mm's latest fill (atomic) */
};
void __uf_huge_queue_full(struct uf_object *obj, uint64_t ext);
/*
 * Pages [first, first + n) of @obj were just filled: stamp the fill (the
 * collapses wait for quiet) and queue the extents they complete
 * (huge.c); no extent, or a watched record (a huge mapping would show
 * pages untouched): nothing more.
 * Locking: obj->invalidate_lock held (any mode).
 */
static inline void __uf_huge_filled(struct uf_object *obj, uint64_t first, uint64_t n)
{
	struct uf_huge_fills *h = obj->mm ? (struct uf_huge_fills *)(void *)obj->mm->huge : NULL;
	uint64_t ext, last_ext, size_ext;

	if (!h || !n || __atomic_load_n(&h->unsupported, __ATOMIC_RELAXED) ||
	    uf_fill_watched(obj))
		return;
	__atomic_store_n(&h->last_fill_ns, uf_now_ns(), __ATOMIC_RELAXED);
	size_ext = __atomic_load_n(&obj->size, __ATOMIC_ACQUIRE) >> UF_HUGE_SHIFT;
	last_ext = (first + n - 1) / UF_HUGE_PAGES;
	for (ext = first / UF_HUGE_PAGES; ext <= last_ext && ext < size_ext; ext++)
		if (uf_pagebits_full(&obj->pages, UF_PG_PRESENT, ext * UF_HUGE_PAGES,
				    UF_HUGE_PAGES))
			__uf_huge_queue_full(obj, ext);
}

#endif /* UF_CACHE_HUGE_H */
