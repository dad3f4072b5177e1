// SPDX-License-Identifier: MIT
/*
 * The per-page state of an object's cache: a present and a dirty bit per
 * page, kept sparse so that memory and walks cost what is cached, not the
 * object's size (a 16 TiB object with a few cached pages holds a few
 * leaves).  A radix tree of 4 KiB nodes (512 slots) over 8 KiB leaves; a
 * leaf holds both bits of 32768 pages (128 MiB of object).  The tree's
 * height follows the object's size; the root pointer carries it in its
 * low bits, so one atomic load gives both.
 *
 * Locking (the caller's, see pagebits.h): setting, clearing and testing
 * bits needs obj->invalidate_lock held in any mode; they are atomic, and a
 * missing leaf or node is allocated without a lock (compare-and-swap, the
 * loser frees its copy).  Growing the tree (uf_pagebits_grow) and freeing
 * leaves (uf_pagebits_clear_range) need it exclusive: nothing else walks
 * the tree then.
 */
#define _GNU_SOURCE
#include "cache/pagebits.h"

#include <errno.h>
#include <stdlib.h>

/* the test switch of uf_protocol_broken() (pagebits.h), set by uf_mm_create():
 * read by the fills and by the frees of the tree, the lowest of them */
int uf_break_protocol;

/* What *slot holds, or a new zeroed block of @size put there.  NULL: out
 * of memory. */
static void *install(void **slot, size_t size)
{
	void *cur = pb_load(slot), *n;

	if (cur)
		return cur;
	n = calloc(1, size);
	if (!n)
		return NULL;
	if (__atomic_compare_exchange_n(slot, &cur, n, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return n;
	free(n);		/* another thread was first */
	return cur;
}

/*
 * The leaf holding page @pg, allocated on the way with @alloc.  NULL when
 * it is not there (or memory ran out); *skip_to is then the first page
 * after the empty subtree, for walks.
 */
static struct pm_leaf *leaf_of(struct uf_pagebits *pm, uint64_t pg, bool alloc, uint64_t *skip_to)
{
	uintptr_t r = __atomic_load_n(&pm->root, __ATOMIC_ACQUIRE);
	unsigned int h = r & PB_HEIGHT_MASK, l;
	void *p = (void *)(r & ~PB_HEIGHT_MASK);

	if (!alloc)
		return pb_leaf_find(pm, pg, skip_to);
	if (pg >= pb_capacity(h)) {
		*skip_to = UINT64_MAX;
		return NULL;
	}
	if (!p && alloc) {
		void *n = calloc(1, h ? sizeof(struct pm_node) : sizeof(struct pm_leaf));
		uintptr_t want;

		if (!n)
			return NULL;
		want = (uintptr_t)n | h;
		if (__atomic_compare_exchange_n(&pm->root, &r, want, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			p = n;
		} else {
			free(n);
			if ((r & PB_HEIGHT_MASK) != h)	/* grown meanwhile: again */
				return leaf_of(pm, pg, alloc, skip_to);
			p = (void *)(r & ~PB_HEIGHT_MASK);
		}
	}
	if (!p) {
		*skip_to = pb_capacity(h);
		return NULL;
	}
	for (l = h; l >= 1; l--) {
		void **slot = &((struct pm_node *)p)->slot[(pg >> pb_level_shift(l)) & (PB_NODE_SLOTS - 1)];
		void *c = alloc ? install(slot, l > 1 ? sizeof(struct pm_node) : sizeof(struct pm_leaf))
				: pb_load(slot);

		if (!c) {
			*skip_to = ((pg >> pb_level_shift(l)) + 1) << pb_level_shift(l);
			return NULL;
		}
		p = c;
	}
	return p;
}

/* uf_pagebits_set() where @pg's leaf is not there yet: allocate it. */
int uf_pagebits_set_new(struct uf_pagebits *pm, enum uf_pg map, uint64_t pg)
{
	unsigned long m = 1UL << (pg % BITS_PER_LONG);
	uint64_t skip;
	struct pm_leaf *lf = leaf_of(pm, pg, true, &skip);

	if (!lf)
		return -ENOMEM;
	return (__atomic_fetch_or(pb_word_of(lf, map, pg), m, __ATOMIC_ACQ_REL) & m) != 0;
}

/* uf_pagebits_reserve() where a leaf is missing: allocate every one. */
int uf_pagebits_reserve_new(struct uf_pagebits *pm, uint64_t first, uint64_t n)
{
	uint64_t pg, skip;

	if (!n)
		return 0;
	for (pg = first & ~(PB_LEAF_PAGES - 1); pg < first + n; pg += PB_LEAF_PAGES)
		if (!leaf_of(pm, pg, true, &skip))
			return -ENOMEM;
	return 0;
}

uint64_t uf_pagebits_next(struct uf_pagebits *pm, enum uf_pg map, uint64_t from, uint64_t end)
{
	while (from < end) {
		uint64_t skip, base, lend, i;
		struct pm_leaf *lf = leaf_of(pm, from, false, &skip);

		if (!lf) {
			from = skip;
			continue;
		}
		base = from & ~(PB_LEAF_PAGES - 1);
		lend = base + PB_LEAF_PAGES < end ? base + PB_LEAF_PAGES : end;
		for (i = from - base; base + i < lend; i = (i | (BITS_PER_LONG - 1)) + 1) {
			unsigned long w = __atomic_load_n(&lf->w[map][i / BITS_PER_LONG],
							  __ATOMIC_ACQUIRE) & (~0UL << (i % BITS_PER_LONG));

			if (w) {
				uint64_t pg = base + (i & ~(BITS_PER_LONG - 1)) + (uint64_t)__builtin_ctzl(w);

				return pg < end ? pg : end;
			}
		}
		from = lend;
	}
	return end;
}

static bool leaf_empty(const struct pm_leaf *lf)
{
	size_t m, i;

	for (m = 0; m < UF_PG_NMAPS; m++)
		for (i = 0; i < PB_LEAF_WORDS; i++)
			if (lf->w[m][i])
				return false;
	return true;
}

/*
 * Clear the bits of the maps in @mask in [first, end) under *slot (a
 * subtree at @level covering pages from @base); free what becomes empty
 * when @release.  Return whether *slot is empty now.
 */
static bool clear_subtree(void **slot, unsigned int level, uint64_t base, unsigned int mask,
			  uint64_t first, uint64_t end, uint64_t *cleared, bool release)
{
	void *p = *slot;
	bool empty = true;
	unsigned int i;

	if (!p)
		return true;
	if (level == 0) {
		struct pm_leaf *lf = p;
		uint64_t lo = (first > base ? first : base) - base;
		uint64_t hi = (end < base + PB_LEAF_PAGES ? end : base + PB_LEAF_PAGES) - base;
		int m;

		for (m = 0; m < UF_PG_NMAPS; m++) {
			uint64_t b = lo;

			if (!(mask & (1U << m)))
				continue;
			while (b < hi) {
				uint64_t k = BITS_PER_LONG - b % BITS_PER_LONG < hi - b ?
					     BITS_PER_LONG - b % BITS_PER_LONG : hi - b;
				unsigned long bits = (k == BITS_PER_LONG ? ~0UL : ((1UL << k) - 1))
						     << (b % BITS_PER_LONG);
				unsigned long old = __atomic_fetch_and(&lf->w[m][b / BITS_PER_LONG], ~bits,
								       __ATOMIC_ACQ_REL);

				if (m == UF_PG_PRESENT && cleared)
					*cleared += (uint64_t)__builtin_popcountl(old & bits);
				b += k;
			}
		}
		if (!release || !leaf_empty(lf))
			return false;
		free(lf);
		*slot = NULL;
		return true;
	}
	for (i = 0; i < PB_NODE_SLOTS; i++) {
		uint64_t cb = base + ((uint64_t)i << pb_level_shift(level));
		uint64_t ce = cb + (1ULL << pb_level_shift(level));
		struct pm_node *n = p;

		if (n->slot[i] && ce > first && cb < end)
			clear_subtree(&n->slot[i], level - 1, cb, mask, first, end, cleared, release);
		if (n->slot[i])
			empty = false;
	}
	if (!release || !empty)
		return false;
	free(p);
	*slot = NULL;
	return true;
}

uint64_t uf_pagebits_clear_range(struct uf_pagebits *pm, unsigned int mask, uint64_t first,
				uint64_t end)
{
	uintptr_t r = pm->root;
	unsigned int h = r & PB_HEIGHT_MASK;
	void *top = (void *)(r & ~PB_HEIGHT_MASK);
	uint64_t cleared = 0;
	/* a fill running without the invalidate lock (the protocol broken on
	 * purpose, for ufault-stress) may be in the tree: free nothing */
	bool release = !uf_protocol_broken();

	if (first >= end || !top)
		return 0;
	clear_subtree(&top, h, 0, mask, first, end, &cleared, release);
	__atomic_store_n(&pm->root, (uintptr_t)top | h, __ATOMIC_RELEASE);
	return cleared;
}

int uf_pagebits_grow(struct uf_pagebits *pm, uint64_t pages)
{
	uintptr_t r = pm->root;
	unsigned int h = r & PB_HEIGHT_MASK;
	void *top = (void *)(r & ~PB_HEIGHT_MASK);

	while (pb_capacity(h) < pages) {
		if (top) {
			struct pm_node *n = calloc(1, sizeof(*n));

			if (!n)
				return -ENOMEM;
			n->slot[0] = top;
			top = n;
		}
		h++;
		__atomic_store_n(&pm->root, (uintptr_t)top | h, __ATOMIC_RELEASE);
	}
	return 0;
}

static void free_subtree(void *p, unsigned int level)
{
	unsigned int i;

	if (!p)
		return;
	if (level)
		for (i = 0; i < PB_NODE_SLOTS; i++)
			free_subtree(((struct pm_node *)p)->slot[i], level - 1);
	free(p);
}

void uf_pagebits_free(struct uf_pagebits *pm)
{
	free_subtree((void *)(pm->root & ~PB_HEIGHT_MASK), pm->root & PB_HEIGHT_MASK);
	pm->root = 0;
}
