// SPDX-License-Identifier: MIT
/*
 * Memory budget and reclaim.
 *
 * With uf_mm_config.cache_budget set, the page caches of all objects of an
 * mm are kept near the budget: after a fault or a pread/pwrite, when the
 * cached pages exceed it, pages are evicted down to 15/16 of it.  A victim
 * that is dirty is written to the store first; victims leave the cache in
 * runs, one hole punch per run, which also zaps them from every mapping.
 *
 * Policies:
 *  - CLOCK (second chance, the default).  A page is "referenced" when a
 *    shared mapping has it mapped (PAGEMAP_SCAN, PAGE_IS_PRESENT): the
 *    kernel's accessed bit, as far as user space can see it.  The hand
 *    passes over a referenced page once and clears the reference by
 *    unmapping the page from the shared mappings, so that the next access
 *    maps it again (a cheap kernel minor fault) and shows it is still in
 *    use.  A fill maps the page in the faulting mapping, so a new page
 *    starts referenced, as in the textbook CLOCK.  Shared mappings of a
 *    budgeted mm are registered WP, which turns the kernel's fault-around
 *    off: a mapped page is one the program touched.  Without PAGEMAP_SCAN
 *    (before 6.7) nothing is referenced and the hand evicts in page order.
 *  - FIFO: the page filled first goes first, whatever its use.
 *
 * Writes are never lost: an mm with a budget tracks dirty pages with
 * synchronous write-protect (writeback.c), so a clean page is protected in
 * every shared writable mapping.  A write to a victim blocks in its
 * write-protect fault on obj->invalidate_lock, which reclaim holds
 * exclusive; when it goes on, the page is gone (its protection marker
 * stays) and the write faults the page in again from the store.
 *
 * Slack: fillers add pages while they hold the invalidate lock shared, so
 * the cache can exceed the budget by the fills in flight: at most one
 * readahead window (budget/8, see mm.c) per handler thread, and one
 * pread/pwrite chunk (the same size) per thread calling those.
 *
 * Locks (the order is in lockorder.h): mm->reclaim_lock, then per object
 * mm->vma_lock shared and obj->invalidate_lock exclusive; mm->obj_lock
 * only to list the objects.
 */
#define _GNU_SOURCE
#include "cache/reclaim.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * A page was filled.  FIFO: append it to the object's ring.  An entry of a
 * page that left the cache otherwise (truncate, hole punch) is skipped
 * when it comes up.
 * Locking: obj->invalidate_lock held (any mode); takes obj->page_lock
 * unless @page_locked (the caller holds it).
 */
void __uf_reclaim_note_fill(struct uf_object *obj, uint64_t pgoff, bool page_locked)
{
	struct uf_mm *mm = obj->mm;

	if (!page_locked)
		pthread_mutex_lock(&obj->page_lock);
	if (mm->policy == UF_RECLAIM_FIFO) {
		if (obj->fifo_tail - obj->fifo_head == obj->fifo_cap) {
			uint64_t cap = obj->fifo_cap ? 2 * obj->fifo_cap : 1024, i;
			uint64_t *n = malloc(cap * sizeof(*n));

			if (!n)
				goto out;	/* the page is just not in FIFO order */
			for (i = obj->fifo_head; i < obj->fifo_tail; i++)
				n[i - obj->fifo_head] = obj->fifo[i % obj->fifo_cap];
			free(obj->fifo);
			obj->fifo = n;
			obj->fifo_tail -= obj->fifo_head;
			obj->fifo_head = 0;
			obj->fifo_cap = cap;
		}
		obj->fifo[obj->fifo_tail++ % obj->fifo_cap] = pgoff;
	}
out:
	if (!page_locked)
		pthread_mutex_unlock(&obj->page_lock);
}

struct mapped {
	struct uf_pagebits *map;
	uint64_t end;
};

static void mark_mapped(void *arg, uint64_t pg)
{
	struct mapped *m = arg;

	/* (out of memory: the page looks unmapped) */
	if (pg < m->end)
		uf_pagebits_set(m->map, UF_PG_PRESENT, pg);
}

/*
 * Mark referenced every page that a shared mapping of @obj has mapped now.
 * Locking: mm->vma_lock held shared, obj->invalidate_lock exclusive; takes
 * obj->rmap_lock shared.
 */
static void __sample_mapped(struct uf_object *obj, struct uf_pagebits *mapped, uint64_t end)
{
	struct mapped m = { mapped, end };
	struct uf_mm *mm = obj->mm;
	struct uf_vma *vma;

	if (mm->pagemap_fd < 0)
		return;
	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(vma, obj)
		if (vma->flags & VMA_SHARED)
			uf_vma_present(mm->pagemap_fd, vma, vma->start, vma->end, mark_mapped, &m);
	pthread_rwlock_unlock(&obj->rmap_lock);
}

/* Ranges to unmap, gathered so that one uf_vma_zap() call (one helper
 * thread: see uffd.c) does them all. */
struct zap_list {
	struct uf_range *r;
	size_t n, cap;
};

/* Unmap object pages [lo, hi) from the shared linear mappings of @obj
 * (at the end of the pass), so the next access (a kernel minor fault)
 * shows whether a page is still in use.  Out of memory, pages just stay
 * mapped.
 * Locking: mm->vma_lock held shared, obj->invalidate_lock exclusive; takes
 * obj->rmap_lock shared. */
static void __unmap_pages(struct uf_object *obj, uint64_t lo, uint64_t hi, struct zap_list *z)
{
	struct uf_vma *vma;

	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(vma, obj) {
		uint64_t vend = vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT);
		uint64_t a = lo > vma->pgoff ? lo : vma->pgoff, b = hi < vend ? hi : vend;

		if (!(vma->flags & VMA_SHARED) || vma->nl_pgoff || a >= b)
			continue;
		if (z->n == z->cap) {
			size_t cap = z->cap ? 2 * z->cap : 8;
			struct uf_range *r = realloc(z->r, cap * sizeof(*r));

			if (!r)
				break;
			z->r = r;
			z->cap = cap;
		}
		z->r[z->n++] = (struct uf_range){ vma->start + ((a - vma->pgoff) << PAGE_SHIFT),
						  vma->start + ((b - vma->pgoff) << PAGE_SHIFT) };
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
}

/* Can pages of @obj be evicted without losing a write?
 * Locking: obj->invalidate_lock held exclusive; takes obj->rmap_lock shared. */
static bool __evictable(struct uf_object *obj)
{
	struct uf_vma *vma;
	bool ok = true;

	if (obj->mm->wp_sync)
		return true;
	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(vma, obj) {
		if ((vma->flags & VMA_SHARED) && (vma->prot & PROT_WRITE)) {
			ok = false;
			break;
		}
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
	return ok;
}

/* Pick up to @want victims into @vict (sorted by the caller).
 * Locking: mm->vma_lock held shared, obj->invalidate_lock exclusive. */
static size_t __pick_victims(struct uf_object *obj, uint64_t *vict, size_t want)
{
	uint64_t end = DIV_ROUND_UP(obj->size, PAGE_SIZE), scanned = 0;
	size_t n = 0;

	if (!end)
		return 0;

	if (obj->mm->policy == UF_RECLAIM_FIFO) {
		/* (a page can stand twice after a truncate: the caller
		 * drops duplicates) */
		while (n < want && obj->fifo_head < obj->fifo_tail) {
			uint64_t pg = obj->fifo[obj->fifo_head++ % obj->fifo_cap];

			if (pg < end && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pg))
				vict[n++] = pg;
		}
		return n;
	}

	/* CLOCK: one turn of the hand at most: a page passed over now is
	 * taken by a later call if nothing maps it again by then */
	struct uf_pagebits mapped = { 0 };
	struct zap_list z = { 0 };
	uint64_t from = obj->clock_hand % end;
	bool second = false;

	if (!uf_pagebits_grow(&mapped, end))
		__sample_mapped(obj, &mapped, end);
	while (n < want && scanned < end) {
		uint64_t at = obj->clock_hand % end;
		uint64_t pg = uf_pagebits_next(&obj->pages, UF_PG_PRESENT, at, end);

		/* the hand passes over what is not cached at once */
		if (pg == end) {
			scanned += end - at;
			obj->clock_hand += end - at;
			continue;
		}
		scanned += pg - at + 1;
		obj->clock_hand += pg - at + 1;
		if (uf_pagebits_test(&mapped, UF_PG_PRESENT, pg)) {
			second = true;	/* unmapped below */
			continue;
		}
		vict[n++] = pg;
	}
	uf_pagebits_free(&mapped);
	/*
	 * Second chance: the pages passed over are unmapped, with one zap
	 * per mapping over all the hand swept (the victims in it are punched
	 * next, and what is not mapped loses nothing).  Unmapping keeps
	 * nothing from being written back: a clean page keeps its protection
	 * marker, a dirty one is protected again by writeback before its
	 * bytes are read.
	 */
	if (second) {
		__unmap_pages(obj, from, from + scanned < end ? from + scanned : end, &z);
		if (from + scanned > end)
			__unmap_pages(obj, 0, from + scanned - end, &z);
		obj->mm->ops->zap(obj->mm, z.r, z.n);
	}
	free(z.r);
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Punch [lo, hi] out of the cache: one call, which zaps the pages from
 * every mapping.  Return the pages that left.
 * Locking: obj->invalidate_lock held exclusive.
 */
static uint64_t __evict_run(struct uf_object *obj, uint64_t lo, uint64_t hi)
{
	uint64_t k, done = 0;

	if (fallocate(obj->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(lo << PAGE_SHIFT), (off_t)((hi + 1 - lo) << PAGE_SHIFT)) < 0)
		return 0;
	for (k = lo; k <= hi; k++)
		if (uf_pagebits_clear(&obj->pages, UF_PG_PRESENT, k)) {
			uf_add(&obj->npresent, (uint64_t)-1);
			done++;
		}
	return done + __uf_huge_evicted(obj, lo, hi + 1);	/* a split refused */
}

/*
 * Evict up to @want pages of @obj.  Return the number evicted; set
 * *@wb_failed when a dirty victim could not be written back (it stays, and
 * so does its place in FIFO order; its clean neighbours go).
 * Locking: takes mm->vma_lock shared, obj->invalidate_lock exclusive.
 */
static uint64_t evict_object(struct uf_object *obj, size_t want, bool *wb_failed)
{
	struct uf_mm *mm = obj->mm;
	uint64_t *vict, done = 0, lo_all = UINT64_MAX, hi_all = 0;
	size_t n, i, j;

	vict = malloc(want * sizeof(*vict));
	if (!vict)
		return 0;
	/*
	 * Try, never wait: reclaim runs in handler threads, and a thread that
	 * holds the invalidate lock (pread/pwrite copying into a ufault
	 * mapping) may be waiting for this very handler.  A busy object is
	 * left for the next round.
	 */
	pthread_rwlock_rdlock(&mm->vma_lock);
	if (pthread_rwlock_trywrlock(&obj->invalidate_lock)) {
		pthread_rwlock_unlock(&mm->vma_lock);
		free(vict);
		return 0;
	}
	/* what fork children may have written is dirty first (as.c) */
	if (!__evictable(obj) || !mm->ops->collect_writes_try(obj))
		goto out;
	n = __pick_victims(obj, vict, want);
	qsort(vict, n, sizeof(*vict), cmp_u64);
	for (i = j = 0; i < n; i++)
		if (!j || vict[i] != vict[j - 1])
			vict[j++] = vict[i];
	n = j;

	for (i = 0; i < n; i = j) {
		uint64_t k, lo, hi, a;

		/* a run of consecutive victims; a huge extent goes whole */
		for (j = i + 1; j < n && vict[j] == vict[j - 1] + 1; j++)
			;
		lo = vict[i];
		hi = vict[j - 1];
		__uf_huge_widen(obj, &lo, &hi);
		if (lo < lo_all)
			lo_all = lo;
		if (hi > hi_all)
			hi_all = hi;
		/* dirty victims go to the store first */
		k = uf_pagebits_next(&obj->pages, UF_PG_DIRTY, lo, hi + 1);
		if (k > hi || !__uf_object_writeback(obj, lo, hi)) {
			done += __evict_run(obj, lo, hi);
			continue;
		}
		/* the store refused: the dirty pages stay, the clean ones go */
		*wb_failed = true;
		for (a = lo; a <= hi; a = k + 1) {
			k = uf_pagebits_next(&obj->pages, UF_PG_DIRTY, a, hi + 1);
			if (k > a)
				done += __evict_run(obj, a, k - 1);
		}
		if (mm->policy == UF_RECLAIM_FIFO)
			for (k = i; k < j; k++)
				if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, vict[k]))
					__uf_reclaim_note_fill(obj, vict[k], false);
	}
	/* the page state memory of what is left empty goes too */
	if (n)
		uf_pagebits_clear_range(&obj->pages, 0, lo_all, hi_all + 1);
	uf_add(&mm->stats.evicted_pages, done);
out:
	pthread_rwlock_unlock(&obj->invalidate_lock);
	pthread_rwlock_unlock(&mm->vma_lock);
	free(vict);
	return done;
}

static uint64_t cache_total(struct uf_mm *mm)
{
	struct uf_object *obj;
	uint64_t total = 0;

	pthread_mutex_lock(&mm->obj_lock);
	for (obj = mm->objects; obj; obj = obj->mm_next)
		total += uf_load(&obj->npresent);
	pthread_mutex_unlock(&mm->obj_lock);
	return total;
}

/* What the cache holds and what fills in flight are about to add. */
static uint64_t cache_used(struct uf_mm *mm)
{
	return cache_total(mm) + uf_load(&mm->charged);
}

/*
 * uf_cache_charge_budget - uf_cache_charge() (cache.h) under a budget:
 * reserve room for @want (> 0) new pages of cache, of which
 * @need must be had.  Pages beyond @need (readahead) are granted only up
 * to the budget; the @need pages may take the slack above it, one
 * readahead window, which covers faults that land while reclaim catches
 * up.  So cached + charged never exceeds budget + ra_max, whatever the
 * number of threads filling.  Return the pages granted (@need <= granted
 * <= @want), or -ENOBUFS when even @need does not fit; the caller gives
 * back what it does not use with uf_cache_uncharge() once the pages it
 * added are counted as present.
 * Locking: any; takes mm->charge_lock, then mm->obj_lock.
 */
long uf_cache_charge_budget(struct uf_mm *mm, size_t want, size_t need)
{
	uint64_t used, room;
	long granted;

	pthread_mutex_lock(&mm->charge_lock);
	used = cache_used(mm);
	room = used < mm->budget_pages ? mm->budget_pages - used : 0;
	granted = (long)(want < room ? want : room);
	if ((size_t)granted < need)
		granted = used + need <= mm->budget_pages + mm->ra_max ? (long)need : -ENOBUFS;
	if (granted > 0)
		uf_add(&mm->charged, (uint64_t)granted);
	pthread_mutex_unlock(&mm->charge_lock);
	return granted;
}

/*
 * uf_reclaim_budget - uf_reclaim() (cache.h) under a budget: make room
 * for @room more pages: when what
 * is cached and charged leaves less, evict down to 15/16 of the budget (or
 * lower, for a large @room).  One thread reclaims at a time: a caller with
 * @room waits for the one reclaiming (it needs the room: direct reclaim),
 * one without goes on (the slack covers it).
 * Return: the pages evicted, or -EIO when none were and a dirty page could
 * not be written back (waiting will not make room while the store
 * refuses).
 * Locking: no ufault lock held.
 */
long uf_reclaim_budget(struct uf_mm *mm, size_t room)
{
	uint64_t total, low, evicted = 0;
	bool wb_failed = false;
	int rounds = 0;

	if (cache_used(mm) + room <= mm->budget_pages)
		return 0;
	if (room)
		pthread_mutex_lock(&mm->reclaim_lock);
	else if (pthread_mutex_trylock(&mm->reclaim_lock))
		return 0;
	low = mm->budget_pages - mm->budget_pages / 16;
	if (room > mm->budget_pages / 16)
		low = room < mm->budget_pages ? mm->budget_pages - room : 0;
	while ((total = cache_total(mm)) + uf_load(&mm->charged) > low && rounds++ < 4) {
		struct uf_object **snap, *obj;
		size_t nobj = 0, i, largest = 0;
		uint64_t freed = 0, over = total + uf_load(&mm->charged) - low;

		pthread_mutex_lock(&mm->obj_lock);
		for (obj = mm->objects; obj; obj = obj->mm_next)
			nobj++;
		snap = calloc(nobj ? nobj : 1, sizeof(*snap));
		for (obj = mm->objects, i = 0; snap && obj; obj = obj->mm_next)
			if (uf_object_tryget(obj))
				snap[i++] = obj;
		nobj = i;
		pthread_mutex_unlock(&mm->obj_lock);
		if (!snap)
			break;
		/*
		 * Each object gives in proportion to what it holds, rounded
		 * down: an object with a page or two (the one a fault has just
		 * filled, say) is not made to give it back while another
		 * object, busy, holds the cache; that would only thrash.  When
		 * every share rounds to nothing, the largest object gives.
		 */
		for (i = 0; total && i < nobj; i++) {
			uint64_t have = uf_load(&snap[i]->npresent);
			uint64_t want = have * over / total;

			if (want > have)
				want = have;
			if (want)
				freed += evict_object(snap[i], want, &wb_failed);
			if (have > uf_load(&snap[largest]->npresent))
				largest = i;
		}
		if (!freed && nobj)
			freed = evict_object(snap[largest], over, &wb_failed);
		for (i = 0; i < nobj; i++)
			uf_object_put(snap[i]);
		free(snap);
		evicted += freed;
		if (!freed)
			break;
	}
	pthread_mutex_unlock(&mm->reclaim_lock);
	return !evicted && wb_failed ? -EIO : (long)evicted;
}
