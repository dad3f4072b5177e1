/* SPDX-License-Identifier: MIT */
/*
 * cache/reclaim.h - the cache budget's calls on the fill path (reclaim.c):
 * with no budget (mm->budget_pages 0) they are answered here, and no code
 * of reclaim.c runs.
 */
#ifndef UF_CACHE_RECLAIM_H
#define UF_CACHE_RECLAIM_H

#include "cache/cache.h"

long uf_reclaim_budget(struct uf_mm *mm, size_t room);
long uf_cache_charge_budget(struct uf_mm *mm, size_t want, size_t need);

/* uf_reclaim - make room for @room more pages (uf_reclaim_budget()). */
static inline long uf_reclaim(struct uf_mm *mm, size_t room)
{
	return mm->budget_pages ? uf_reclaim_budget(mm, room) : 0;
}

/* uf_cache_charge - reserve room for @want new pages, @need of them at
 * least (uf_cache_charge_budget()); with no budget, all of them. */
static inline long uf_cache_charge(struct uf_mm *mm, size_t want, size_t need)
{
	if (!mm || !mm->budget_pages || !want)
		return (long)want;
	return uf_cache_charge_budget(mm, want, need);
}

#endif /* UF_CACHE_RECLAIM_H */
