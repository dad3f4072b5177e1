/* SPDX-License-Identifier: MIT */
/*
 * cache/pagebits.h - the present and dirty bits of an object's pages
 * (pagebits.c: the tree, its growth and its walks): the lookups a fill
 * makes on every page, inline, as the kernel's bitmap helpers are, so
 * that testing or setting a bit whose leaf is there runs no code of
 * pagebits.c.  A leaf holds both bits of 32768 pages (128 MiB of
 * object); the tree over the leaves is pagebits.c's.
 *
 * Locking: bit operations need obj->invalidate_lock held (any mode);
 * growing the map and freeing its empty parts (uf_pagebits_grow,
 * uf_pagebits_clear_range) need it exclusive.
 */
#ifndef UF_CACHE_PAGEBITS_H
#define UF_CACHE_PAGEBITS_H

#include "cache/mm_types.h"

enum uf_pg { UF_PG_PRESENT, UF_PG_DIRTY, UF_PG_NMAPS };
#define UF_PG_MASK_ALL	((1U << UF_PG_PRESENT) | (1U << UF_PG_DIRTY))

#define PB_LEAF_SHIFT	15
#define PB_LEAF_PAGES	(1ULL << PB_LEAF_SHIFT)
#define PB_LEAF_WORDS	(PB_LEAF_PAGES / BITS_PER_LONG)
#define PB_NODE_SHIFT	9
#define PB_NODE_SLOTS	(1U << PB_NODE_SHIFT)
#define PB_HEIGHT_MASK	7UL	/* the root pointer's low bits: the height */

struct pm_leaf {
	unsigned long w[UF_PG_NMAPS][PB_LEAF_WORDS];
};

struct pm_node {
	void *slot[PB_NODE_SLOTS];
};

/* pages a tree of height @h covers */
static inline uint64_t pb_capacity(unsigned int h)
{
	unsigned int shift = PB_LEAF_SHIFT + PB_NODE_SHIFT * h;

	return shift >= 64 ? UINT64_MAX : 1ULL << shift;
}

/* the index shift of a node at level @l (1: its slots hold leaves) */
static inline unsigned int pb_level_shift(unsigned int l)
{
	return PB_LEAF_SHIFT + PB_NODE_SHIFT * (l - 1);
}

static inline void *pb_load(void *const *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/*
 * The leaf holding page @pg, or NULL when it is not there; *skip_to is
 * then the first page after the empty subtree, for walks.
 */
static inline struct pm_leaf *pb_leaf_find(struct uf_pagebits *pm, uint64_t pg,
					   uint64_t *skip_to)
{
	uintptr_t r = __atomic_load_n(&pm->root, __ATOMIC_ACQUIRE);
	unsigned int h = r & PB_HEIGHT_MASK, l;
	void *p = (void *)(r & ~PB_HEIGHT_MASK);

	if (pg >= pb_capacity(h)) {
		*skip_to = UINT64_MAX;
		return NULL;
	}
	if (!p) {
		*skip_to = pb_capacity(h);
		return NULL;
	}
	for (l = h; l >= 1; l--) {
		void *c = pb_load(&((struct pm_node *)p)->slot[(pg >> pb_level_shift(l)) &
							       (PB_NODE_SLOTS - 1)]);

		if (!c) {
			*skip_to = ((pg >> pb_level_shift(l)) + 1) << pb_level_shift(l);
			return NULL;
		}
		p = c;
	}
	return p;
}

static inline unsigned long *pb_word_of(struct pm_leaf *lf, enum uf_pg map, uint64_t pg)
{
	return &lf->w[map][(pg & (PB_LEAF_PAGES - 1)) / BITS_PER_LONG];
}

/* pagebits.c: the calls that allocate or walk */
int uf_pagebits_set_new(struct uf_pagebits *pm, enum uf_pg map, uint64_t pg);
int uf_pagebits_reserve_new(struct uf_pagebits *pm, uint64_t first, uint64_t n);
/* The first page in [from, end) whose bit is set, or @end. */
uint64_t uf_pagebits_next(struct uf_pagebits *pm, enum uf_pg map, uint64_t from, uint64_t end);
/* Clear the maps in @mask over [first, end) and free the parts left
 * empty; return how many present bits were cleared.  @mask 0: only free. */
uint64_t uf_pagebits_clear_range(struct uf_pagebits *pm, unsigned int mask, uint64_t first,
				uint64_t end);
int uf_pagebits_grow(struct uf_pagebits *pm, uint64_t pages);
void uf_pagebits_free(struct uf_pagebits *pm);

static inline bool uf_pagebits_test(struct uf_pagebits *pm, enum uf_pg map, uint64_t pg)
{
	uint64_t skip;
	struct pm_leaf *lf = pb_leaf_find(pm, pg, &skip);

	return lf && (__atomic_load_n(pb_word_of(lf, map, pg), __ATOMIC_ACQUIRE) >>
		      (pg % BITS_PER_LONG)) & 1;
}

/* 1: was set, 0: newly set, -ENOMEM (no leaf; uf_pagebits_reserve() first) */
static inline int uf_pagebits_set(struct uf_pagebits *pm, enum uf_pg map, uint64_t pg)
{
	unsigned long m = 1UL << (pg % BITS_PER_LONG);
	uint64_t skip;
	struct pm_leaf *lf = pb_leaf_find(pm, pg, &skip);

	if (!lf)
		return uf_pagebits_set_new(pm, map, pg);
	return (__atomic_fetch_or(pb_word_of(lf, map, pg), m, __ATOMIC_ACQ_REL) & m) != 0;
}

static inline bool uf_pagebits_clear(struct uf_pagebits *pm, enum uf_pg map, uint64_t pg)
{
	unsigned long m = 1UL << (pg % BITS_PER_LONG);
	uint64_t skip;
	struct pm_leaf *lf = pb_leaf_find(pm, pg, &skip);

	return lf && (__atomic_fetch_and(pb_word_of(lf, map, pg), ~m, __ATOMIC_ACQ_REL) & m);
}

/* Make sure setting bits of [first, first + n) needs no allocation. */
static inline int uf_pagebits_reserve(struct uf_pagebits *pm, uint64_t first, uint64_t n)
{
	uint64_t pg, skip;

	for (pg = first & ~(PB_LEAF_PAGES - 1); n && pg < first + n; pg += PB_LEAF_PAGES)
		if (!pb_leaf_find(pm, pg, &skip))
			return uf_pagebits_reserve_new(pm, first, n);
	return 0;
}

/* Are the bits of all of [first, first + n) set (e.g. a 2 MiB extent)? */
static inline bool uf_pagebits_full(struct uf_pagebits *pm, enum uf_pg map, uint64_t first,
				    uint64_t n)
{
	uint64_t pg = first, end = first + n;

	while (pg < end) {
		uint64_t skip, i = pg % BITS_PER_LONG;
		uint64_t k = BITS_PER_LONG - i < end - pg ? BITS_PER_LONG - i : end - pg;
		unsigned long want = (k == BITS_PER_LONG ? ~0UL : ((1UL << k) - 1)) << i;
		struct pm_leaf *lf = pb_leaf_find(pm, pg, &skip);

		if (!lf || (__atomic_load_n(pb_word_of(lf, map, pg), __ATOMIC_ACQUIRE) & want) != want)
			return false;
		pg += k;
	}
	return true;
}

/* Test switch (UFAULT_BREAK_PROTOCOL, read by uf_mm_create; pagebits.c
 * holds it): fills skip the invalidate lock, so that ufault-stress can show it finds the race. */
extern int uf_break_protocol;
static inline bool uf_protocol_broken(void)
{
	return __atomic_load_n(&uf_break_protocol, __ATOMIC_RELAXED);
}

#endif /* UF_CACHE_PAGEBITS_H */
