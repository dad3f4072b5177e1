// SPDX-License-Identifier: MIT
/*
 * A VMA table: the VMAs of one address space (struct uf_as), sorted by
 * start, in an array.  One implementation for every address space: the
 * program's own, fork children's, served processes' and attached
 * clients'.  A table of another process's address space lives in memory
 * a fork does not copy (@nocow: uf_nocow_alloc()).
 *
 * Locking: the address space's table lock (as->vma_lock), shared to read,
 * exclusive to change (or the table is not shared yet).
 */
#define _GNU_SOURCE
#include "as/as.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The index of the first VMA whose end is above @addr (t->n if none).
 * Locking: the table's lock held (either mode). */
size_t __uf_table_index(const struct uf_vma_table *t, unsigned long addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->vmas[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The VMA over @addr, or NULL.  Locking: the table's lock held. */
struct uf_vma *__uf_table_find(const struct uf_vma_table *t, unsigned long addr)
{
	size_t i = __uf_table_index(t, addr);

	return i < t->n && t->vmas[i]->start <= addr ? t->vmas[i] : NULL;
}

/*
 * uf_table_lookup_get - ->lookup_get of an address space (the program's
 * own, a fork child's, a client's): the VMA at @addr with a reference,
 * and the object page the address shows (*nonlinear: inside a window);
 * NULL if the table has none there.
 * Locking: takes as->vma_lock shared, and vma->ref_lock inside it.
 */
struct uf_vma *uf_table_lookup_get(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				   bool *nonlinear)
{
	struct uf_vma *v;

	pthread_rwlock_rdlock(as->vma_lock);
	v = __uf_table_find(&as->vt, addr);
	if (v) {
		uint64_t idx = (addr - v->start) >> PAGE_SHIFT;

		*pgoff = __uf_vma_pgoff(v, addr);
		*nonlinear = v->nl_pgoff && (v->nl_pgoff[idx] & NL_WINDOW);
		pthread_mutex_lock(&v->ref_lock);
		v->refs++;
		pthread_mutex_unlock(&v->ref_lock);
	}
	pthread_rwlock_unlock(as->vma_lock);
	return v;
}

/* Put @v in at its place.  Return 0 or -ENOMEM (nothing changed).
 * Locking: the table's lock held exclusive. */
int __uf_table_insert(struct uf_vma_table *t, struct uf_vma *v)
{
	size_t i;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct uf_vma **p = t->nocow ? uf_nocow_realloc(t->vmas, cap * sizeof(*p))
					     : realloc(t->vmas, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->vmas = p;
		t->cap = cap;
	}
	i = __uf_table_index(t, v->start);
	memmove(&t->vmas[i + 1], &t->vmas[i], (t->n - i) * sizeof(*t->vmas));
	t->vmas[i] = v;
	t->n++;
	return 0;
}

/* Take the VMA at index @i out.  Locking: the table's lock held exclusive. */
void __uf_table_remove_at(struct uf_vma_table *t, size_t i)
{
	memmove(&t->vmas[i], &t->vmas[i + 1], (t->n - i - 1) * sizeof(*t->vmas));
	t->n--;
}

/* The table's memory (its VMAs are the caller's). */
void uf_table_free(struct uf_vma_table *t)
{
	if (t->nocow)
		uf_nocow_free(t->vmas);
	else
		free(t->vmas);
	t->vmas = NULL;
	t->n = t->cap = 0;
}

/* ------------------------------------------------------------------ */
/* Changing an address space's table                                  */
/* ------------------------------------------------------------------ */

/*
 * Where a VMA of the program's own lies, and the object's list of its
 * VMAs, change under obj->rmap_lock exclusive too (besides the table
 * lock): a fill reads them under rmap_lock alone (see src/lib/lockorder.h, RMAP).
 * Another process's VMAs are on no such list.
 */
static void table_rmap_wrlock(struct uf_as *as, struct uf_vma *v)
{
	if (v->obj && !as->ops->remote)
		pthread_rwlock_wrlock(&v->obj->rmap_lock);
}

static void table_rmap_unlock(struct uf_as *as, struct uf_vma *v)
{
	if (v->obj && !as->ops->remote)
		pthread_rwlock_unlock(&v->obj->rmap_lock);
}

/* Put @v in the table (and the program's own on obj->vmas).  Return 0 or
 * -ENOMEM.  Locking: the table lock held exclusive, obj->rmap_lock
 * exclusive for the program's own. */
int __uf_as_link(struct uf_as *as, struct uf_vma *v)
{
	int ret = __uf_table_insert(&as->vt, v);

	if (!ret && v->obj && !as->ops->remote)
		__uf_rmap_link(v);
	return ret;
}

/* Take @v out of the table: it is dead from now on.
 * Locking: the table lock held exclusive. */
void __uf_as_unlink(struct uf_as *as, struct uf_vma *v)
{
	__uf_table_remove_at(&as->vt, __uf_table_index(&as->vt, v->start));
	__atomic_store_n(&v->dead, true, __ATOMIC_RELEASE);
	if (v->obj && !as->ops->remote) {
		table_rmap_wrlock(as, v);
		__uf_rmap_unlink(v);
		table_rmap_unlock(as, v);
	}
}

/*
 * Split @v at @addr: @v keeps [start, addr); a copy with the same object,
 * ops and private data (as->ops->copy) gets [addr, end), is linked, and
 * goes on l->opened (its ->open is called later; the list holds a
 * reference).  Return it, or NULL without memory (nothing changed).
 * Locking: the table lock held exclusive.
 */
struct uf_vma *__uf_as_split(struct uf_as *as, struct uf_vma *v, unsigned long addr,
			     struct uf_vma_lists *l)
{
	struct uf_vma *nv = as->ops->copy(as, v, addr, v->end);
	int ret;

	if (!nv)
		return NULL;
	table_rmap_wrlock(as, v);
	v->end = addr;
	ret = __uf_as_link(as, nv);
	if (ret)
		v->end = nv->end;
	table_rmap_unlock(as, v);
	if (ret) {
		uf_vma_free(nv);
		return NULL;
	}
	if (nv->obj)
		uf_object_get(nv->obj);
	nv->refs++;		/* for l->opened */
	nv->ev_next = l->opened;
	l->opened = nv;
	return nv;
}

/* @v now starts at @addr.  Locking: the table lock held exclusive. */
static void __as_trim_head(struct uf_vma *v, unsigned long addr)
{
	size_t idx = (addr - v->start) >> PAGE_SHIFT;

	if (v->nl_pgoff)
		memmove(v->nl_pgoff, v->nl_pgoff + idx,
			((v->end - addr) >> PAGE_SHIFT) * sizeof(*v->nl_pgoff));
	v->pgoff += idx;
	v->start = addr;
}

/*
 * [s, e) is no longer mapped: cut it out of the table (trim, split, drop);
 * what may have been written there is judged by as->ops->lost_writes.
 * VMAs dropped go on l->released.
 * Locking: the table lock held exclusive.
 */
void __uf_as_unmap_range(struct uf_as *as, unsigned long s, unsigned long e,
			 struct uf_vma_lists *l)
{
	for (;;) {
		size_t i = __uf_table_index(&as->vt, s);
		struct uf_vma *v;

		if (i >= as->vt.n || as->vt.vmas[i]->start >= e)
			return;
		v = as->vt.vmas[i];
		as->ops->lost_writes(v, v->start > s ? v->start : s, v->end < e ? v->end : e);
		if (v->start < s && v->end > e && !__uf_as_split(as, v, e, l)) {
			/* no memory for the tail: it is dropped too (its
			 * pages were judged above only in part) */
			as->ops->lost_writes(v, e, v->end);
		}
		if (v->start < s) {
			table_rmap_wrlock(as, v);
			v->end = s;			/* keep the head */
			table_rmap_unlock(as, v);
		} else if (v->end > e) {
			table_rmap_wrlock(as, v);
			__as_trim_head(v, e);		/* keep the tail */
			table_rmap_unlock(as, v);
		} else {
			__uf_as_unlink(as, v);
			v->ev_next = l->released;
			l->released = v;
		}
	}
}

/*
 * mremap() moved [from, from + len) to @to (registration and page tables
 * went along: UFFD_FEATURE_EVENT_REMAP).  Whole VMAs move: split at the
 * edges first.
 * Locking: the table lock held exclusive.
 */
void __uf_as_move(struct uf_as *as, unsigned long from, unsigned long to, unsigned long len,
		  struct uf_vma_lists *l)
{
	struct uf_vma_table *t = &as->vt;
	struct uf_vma *moved = NULL, *v;
	size_t i;

	/* what the table still shows at the target is stale */
	__uf_as_unmap_range(as, to, to + len, l);
	i = __uf_table_index(t, from);
	if (i < t->n && t->vmas[i]->start < from && !__uf_as_split(as, t->vmas[i], from, l))
		return;
	i = __uf_table_index(t, from + len - 1);
	if (i < t->n && t->vmas[i]->start < from + len && t->vmas[i]->end > from + len &&
	    !__uf_as_split(as, t->vmas[i], from + len, l))
		return;
	/* out of the array, then back in at their new place (there is room) */
	for (;;) {
		i = __uf_table_index(t, from);
		if (i >= t->n || t->vmas[i]->start >= from + len)
			break;
		v = t->vmas[i];
		__uf_table_remove_at(t, i);
		v->ev_next = moved;
		moved = v;
	}
	while ((v = moved)) {
		moved = v->ev_next;
		table_rmap_wrlock(as, v);
		v->start += to - from;
		v->end += to - from;
		table_rmap_unlock(as, v);
		__uf_table_insert(t, v);
	}
}

/* ->open the VMAs a split made, release those dropped.  No lock held. */
void uf_vma_lists_finish(struct uf_vma_lists *l)
{
	struct uf_vma *v;

	while ((v = l->opened)) {
		l->opened = v->ev_next;
		if (v->vm_ops->open)
			v->vm_ops->open(v);
		uf_vma_put(v);		/* held since the split */
	}
	while ((v = l->released)) {
		l->released = v->ev_next;
		uf_vma_release(v);
	}
}
