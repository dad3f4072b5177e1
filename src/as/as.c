// SPDX-License-Identifier: MIT
/*
 * Address spaces other than the mm's own: fork children.
 *
 * The kernel keeps the page cache (inode, address_space) apart from the
 * address spaces that map it (mm_struct); a driver's ->fault() serves a
 * VMA of whichever process faulted.  Here an mm's cache, stores and
 * threads serve its own process and, with UFFD_FEATURE_EVENT_FORK, every
 * child forked from it (and theirs): the kernel copies the registered
 * ranges into the child, bound to a new userfaultfd that it hands over in
 * the UFFD_EVENT_FORK message.
 *
 * A child is a struct uf_as: that userfaultfd, read by the mm's handler
 * threads (a guest of the engine, uffd.c), and a copy of the parent's VMA
 * table as it was at the fork (uf_as_fork), which then follows the child's
 * own events only: its munmap(), mremap(), madvise() and fork().  A
 * child's fault is served by fault.c with a VMA of the child's table:
 *  - object mappings fill the shared cache (the memfd) as any fault does,
 *    through the mm's cache_map, and wake the child's thread through the
 *    child's userfaultfd: its retry maps the cache's page.  Truncate, hole
 *    punch and reclaim act on the memfd, so they reach the child by
 *    themselves;
 *  - operation mappings call ->fault() with the child's VMA, and
 *    uf_vm_insert_page() copies into the child through its userfaultfd.
 *
 * Writes.  The parent's dirty tracking (write-protect, PAGEMAP_SCAN of
 * /proc/self/pagemap) cannot see the child's page tables, and a child's
 * pid is not known (the fork event comes before the child has one).  So
 * every cached page a child's shared mapping of a writable object shows
 * is taken as dirty at each sync, before reclaim evicts, when the child
 * unmaps it, and when the child is gone: more writeback, no lost write.
 *
 * Lifetimes.  A child that exits or execs raises nothing on its
 * userfaultfd; uf_uffd_alive() asks.  It is asked for every child from
 * the handlers' idle tick and by uf_mm_stats() (uf_as_reap).  A child
 * whose mm is destroyed while it lives gets the kernel's poison marker on
 * every page it does not have yet (SIGBUS, never zeros: closing its
 * userfaultfd unpoisoned would let the kernel put zero pages into the
 * shared cache), then its userfaultfd is closed.
 *
 * Locking: mm->as_lock (the list of children) -> as->vma_lock (a child's
 * table) -> obj->invalidate_lock (shared, marking pages dirty); the order
 * is in internal.h.  ->open, ->close and the last object put run with
 * none of them held.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* How often the handlers' idle tick looks for children gone. */
#define REAP_EVERY_NS	(100 * 1000 * 1000)

const struct uf_uffd_ops uf_as_uffd_ops = {
	.fault	= uf_fault_as,
	.event	= uf_as_event,
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* A child's VMA table                                                 */
/* ------------------------------------------------------------------ */

/* Locking: as->vma_lock held (either mode). */
static size_t __as_index(struct uf_as *as, unsigned long addr)
{
	return __uf_table_index(&as->vt, addr);	/* the first VMA whose end is above addr */
}

/* Locking: as->vma_lock held exclusive (or the table is not shared yet). */
static int __as_link(struct uf_as *as, struct uf_vma *v)
{
	return __uf_table_insert(&as->vt, v);
}

/* Locking: as->vma_lock held exclusive. */
static void __as_unlink_at(struct uf_as *as, size_t i)
{
	__uf_table_remove_at(&as->vt, i);
}

/*
 * A copy of @src (of the parent, or of a part of a child's VMA) for @as,
 * covering [start, end) of it.  Its object gains a reference; the caller
 * calls ->open once no lock is held.  NULL without memory.
 */
static struct uf_vma *as_vma_copy(struct uf_as *as, const struct uf_vma *src,
				  unsigned long start, unsigned long end)
{
	size_t idx = (start - src->start) >> PAGE_SHIFT, n = (end - start) >> PAGE_SHIFT;
	struct uf_vma *v;

	/* a record's readahead is not watched in another process: the
	 * kernel maps a page read ahead there with no fault */
	if (src->obj)
		uf_ws_unwatch(src->obj);
	v = uf_nocow_alloc(sizeof(*v));
	if (!v)
		return NULL;
	v->as = as;		/* (before readahead: its state is nocow too) */
	if (src->nl_pgoff) {
		v->nl_pgoff = uf_nocow_alloc(n * sizeof(*v->nl_pgoff));
		if (!v->nl_pgoff) {
			uf_nocow_free(v);
			return NULL;
		}
		memcpy(v->nl_pgoff, src->nl_pgoff + idx, n * sizeof(*v->nl_pgoff));
	}
	if (uf_readahead_init(v)) {
		uf_nocow_free(v->nl_pgoff);
		uf_nocow_free(v);
		return NULL;
	}
	v->mm = as->mm;
	v->id = __atomic_add_fetch(&as->mm->next_vma_id, 1, __ATOMIC_RELAXED);
	v->start = start;
	v->end = end;
	v->pgoff = src->pgoff + idx;
	v->prot = src->prot;
	/* a write-protect registration is the child's now: no tracking here */
	v->flags = __atomic_load_n(&src->flags, __ATOMIC_RELAXED) & ~VMA_WP;
	v->vm_ops = __atomic_load_n(&src->vm_ops, __ATOMIC_ACQUIRE);
	v->private_data = __atomic_load_n(&src->private_data, __ATOMIC_ACQUIRE);
	v->obj = src->obj;
	v->ino = src->ino;
	v->refs = 1;		/* the table's */
	pthread_mutex_init(&v->ref_lock, NULL);
	uf_lockdep_class(&v->ref_lock, UF_LK_VMA_REF);
	pthread_cond_init(&v->ref_cond, NULL);
	if (v->obj)
		uf_object_get(v->obj);
	return v;
}

/*
 * Drop the table's reference: the last uf_vma_put() calls ->close and
 * frees the VMA (vma.c).  No lock held.
 */
static void as_vma_release(struct uf_vma *v)
{
	__atomic_store_n(&v->dead, true, __ATOMIC_RELEASE);
	pthread_mutex_lock(&v->ref_lock);
	v->detached = true;
	pthread_mutex_unlock(&v->ref_lock);
	uf_vma_put(v);
}

/* Can the child have written cached pages of @v that the mm does not
 * know of? */
static bool may_write(const struct uf_vma *v)
{
	return v->obj && (v->flags & VMA_SHARED) && !(v->flags & VMA_PRIV_MAP) &&
	       !v->obj->readonly;
}

/* [s, e) of @v goes from the child's table: what it may have written
 * there is dirty.  Locking: as->vma_lock held. */
static void __as_lost_writes(struct uf_vma *v, unsigned long s, unsigned long e)
{
	if (!may_write(v))
		return;
	pthread_rwlock_rdlock(&v->obj->invalidate_lock);
	__uf_vma_mark_written(v, s, e);
	pthread_rwlock_unlock(&v->obj->invalidate_lock);
}

/* Split @v at @addr: @v keeps [start, addr), a new VMA (on *opened, to be
 * opened) gets the rest.  Locking: as->vma_lock held exclusive. */
static struct uf_vma *__as_split(struct uf_as *as, struct uf_vma *v, unsigned long addr,
				 struct uf_vma **opened)
{
	struct uf_vma *nv = as_vma_copy(as, v, addr, v->end);

	if (!nv)
		return NULL;
	v->end = addr;
	if (__as_link(as, nv)) {
		v->end = nv->end;
		as_vma_release(nv);
		return NULL;
	}
	nv->refs++;		/* for *opened */
	nv->ev_next = *opened;
	*opened = nv;
	return nv;
}

/* [s, e) is unmapped in the child: cut it out of its table; VMAs dropped
 * go on *released.  Locking: as->vma_lock held exclusive. */
static void __as_unmap_range(struct uf_as *as, unsigned long s, unsigned long e,
			     struct uf_vma **opened, struct uf_vma **released)
{
	for (;;) {
		size_t i = __as_index(as, s);
		struct uf_vma *v;

		if (i >= as->vt.n || as->vt.vmas[i]->start >= e)
			return;
		v = as->vt.vmas[i];
		__as_lost_writes(v, v->start > s ? v->start : s, v->end < e ? v->end : e);
		if (v->start < s && v->end > e && !__as_split(as, v, e, opened))
			__as_lost_writes(v, e, v->end);	/* no memory: all of it goes */
		if (v->start < s) {
			v->end = s;
		} else if (v->end > e) {
			size_t idx = (e - v->start) >> PAGE_SHIFT;

			if (v->nl_pgoff)
				memmove(v->nl_pgoff, v->nl_pgoff + idx,
					((v->end - e) >> PAGE_SHIFT) * sizeof(*v->nl_pgoff));
			v->pgoff += idx;
			v->start = e;
		} else {
			__as_unlink_at(as, i);
			v->ev_next = *released;
			*released = v;
		}
	}
}

/* mremap() in the child moved [from, from + len) to @to.
 * Locking: as->vma_lock held exclusive. */
static void __as_move(struct uf_as *as, unsigned long from, unsigned long to, unsigned long len,
		      struct uf_vma **opened, struct uf_vma **released)
{
	struct uf_vma *moved = NULL, *v;
	size_t i;

	__as_unmap_range(as, to, to + len, opened, released);
	i = __as_index(as, from);
	if (i < as->vt.n && as->vt.vmas[i]->start < from && !__as_split(as, as->vt.vmas[i], from, opened))
		return;
	i = __as_index(as, from + len - 1);
	if (i < as->vt.n && as->vt.vmas[i]->start < from + len && as->vt.vmas[i]->end > from + len &&
	    !__as_split(as, as->vt.vmas[i], from + len, opened))
		return;
	for (;;) {
		i = __as_index(as, from);
		if (i >= as->vt.n || as->vt.vmas[i]->start >= from + len)
			break;
		v = as->vt.vmas[i];
		__as_unlink_at(as, i);
		v->ev_next = moved;
		moved = v;
	}
	while ((v = moved)) {
		moved = v->ev_next;
		v->start += to - from;
		v->end += to - from;
		if (__as_link(as, v)) {		/* no memory: it is gone */
			v->ev_next = *released;
			*released = v;
		}
	}
}

static void as_lists_finish(struct uf_vma *opened, struct uf_vma *released)
{
	struct uf_vma *v;

	while ((v = opened)) {
		opened = v->ev_next;
		if (v->vm_ops->open)
			v->vm_ops->open(v);
		uf_vma_put(v);
	}
	while ((v = released)) {
		released = v->ev_next;
		as_vma_release(v);
	}
}

/*
 * uf_as_lookup_get - the child's VMA at @addr with a reference, and the
 * object page the address shows; NULL if its table has none there.
 * Locking: takes as->vma_lock shared.
 */
struct uf_vma *uf_as_lookup_get(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				bool *nonlinear)
{
	struct uf_vma *v = NULL;
	size_t i;

	pthread_rwlock_rdlock(&as->vma_lock);
	i = __as_index(as, addr);
	if (i < as->vt.n && as->vt.vmas[i]->start <= addr) {
		uint64_t idx;

		v = as->vt.vmas[i];
		idx = (addr - v->start) >> PAGE_SHIFT;
		*pgoff = __uf_vma_pgoff(v, addr);
		*nonlinear = v->nl_pgoff && (v->nl_pgoff[idx] & NL_WINDOW);
		pthread_mutex_lock(&v->ref_lock);
		v->refs++;
		pthread_mutex_unlock(&v->ref_lock);
	}
	pthread_rwlock_unlock(&as->vma_lock);
	return v;
}

/*
 * ->event of a child's userfaultfd: the child unmapped, moved, zapped
 * part of its ufault memory, or forked (a grandchild, served the same).
 * Locking: takes as->vma_lock exclusive.
 */
void uf_as_event(void *owner, const struct uffd_msg *msg)
{
	struct uf_as *as = owner;
	struct uf_vma *opened = NULL, *released = NULL;

	if (msg->event == UFFD_EVENT_FORK) {
		uf_as_fork(as->mm, as, msg);
		return;
	}
	pthread_rwlock_wrlock(&as->vma_lock);
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
		__as_unmap_range(as, msg->arg.remove.start, msg->arg.remove.end, &opened, &released);
		break;
	case UFFD_EVENT_REMAP:
		__as_move(as, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len,
			  &opened, &released);
		break;
	case UFFD_EVENT_REMOVE: {
		/* zapped page tables or a punched cache: the cache's bytes
		 * (zeros where punched) are what the store must get */
		unsigned long s = msg->arg.remove.start, e = msg->arg.remove.end;
		size_t i;

		for (i = __as_index(as, s); i < as->vt.n && as->vt.vmas[i]->start < e; i++) {
			struct uf_vma *v = as->vt.vmas[i];

			__as_lost_writes(v, v->start > s ? v->start : s, v->end < e ? v->end : e);
		}
		break;
	}
	default:
		break;
	}
	pthread_rwlock_unlock(&as->vma_lock);
	as_lists_finish(opened, released);
}

/* ------------------------------------------------------------------ */
/* Fork, and children gone                                             */
/* ------------------------------------------------------------------ */

/* Every write the child may have made is dirty now.
 * Locking: as->vma_lock held. */
static void __as_mark_all(struct uf_as *as, const struct uf_object *only)
{
	size_t i;

	for (i = 0; i < as->vt.n; i++) {
		struct uf_vma *v = as->vt.vmas[i];

		if ((!only || v->obj == only) && may_write(v))
			__as_lost_writes(v, v->start, v->end);
	}
}

/*
 * Free @as: its writes marked dirty, its userfaultfd closed (the engine
 * no longer reads it), its VMAs released.  @poison first: nobody serves
 * the child from now on, so every page it has not received gets the
 * poison marker.  With @wait, waits for handlers serving it; else
 * -EBUSY and nothing is done.
 * Locking: none held; @as is off mm->children.
 */
static int as_free(struct uf_as *as, bool poison, bool wait)
{
	struct uf_vma *released = NULL;
	size_t i;

	if (poison) {
		/* the child's events first: its table is the kernel's */
		uf_uffd_settle(&as->uffd);
		pthread_rwlock_rdlock(&as->vma_lock);
		for (i = 0; i < as->vt.n; i++)
			uf_uffd_poison_holes(&as->uffd, as->vt.vmas[i]->start,
					     as->vt.vmas[i]->end - as->vt.vmas[i]->start,
					     as->vt.vmas[i]->flags & VMA_HUGETLB ? UF_HUGE_SIZE
									      : PAGE_SIZE);
		pthread_rwlock_unlock(&as->vma_lock);
	}
	if (uf_uffd_detach(&as->uffd, wait))
		return -EBUSY;
	/* events read and not applied: a grandchild's fork is applied (its
	 * userfaultfd must not be lost), the rest no longer matters */
	uf_uffd_quiesce(&as->uffd);
	pthread_rwlock_wrlock(&as->vma_lock);
	__as_mark_all(as, NULL);
	for (i = 0; i < as->vt.n; i++) {
		as->vt.vmas[i]->ev_next = released;
		released = as->vt.vmas[i];
	}
	as->vt.n = 0;
	pthread_rwlock_unlock(&as->vma_lock);
	uf_uffd_close(&as->uffd);
	as_lists_finish(NULL, released);
	uf_table_free(&as->vt);
	pthread_rwlock_destroy(&as->vma_lock);
	uf_nocow_free(as);
	return 0;
}

/*
 * uf_as_reap - free the children whose process is gone (exited, or
 * exec'ed).  Unless @force, at most every REAP_EVERY_NS.  A child a
 * handler is serving right now is left for the next look.
 * Locking: takes mm->as_lock; none held (the caller may be a handler).
 */
void uf_as_reap(struct uf_mm *mm, bool force)
{
	struct uf_as *gone = NULL, **pp, *as;
	uint64_t now = now_ns(), last = __atomic_load_n(&mm->reap_ns, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&mm->nchildren, __ATOMIC_RELAXED))
		return;
	if (!force && (now - last < REAP_EVERY_NS ||
		       !__atomic_compare_exchange_n(&mm->reap_ns, &last, now, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED)))
		return;
	pthread_mutex_lock(&mm->as_lock);
	for (pp = &mm->children; (as = *pp);) {
		if (!as->owned && !uf_uffd_alive(&as->uffd)) {
			*pp = as->next;
			__atomic_sub_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
			as->next = gone;
			gone = as;
		} else {
			pp = &as->next;
		}
	}
	pthread_mutex_unlock(&mm->as_lock);
	while ((as = gone)) {
		gone = as->next;
		if (as_free(as, false, false) == 0)
			continue;
		/* in use by a handler (maybe this one): back on the list */
		pthread_mutex_lock(&mm->as_lock);
		as->next = mm->children;
		mm->children = as;
		__atomic_add_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&mm->as_lock);
	}
}

/* Does [start, end) overlap a VMA of @as?  Locking: as->vma_lock held. */
static bool __as_overlaps(struct uf_as *as, unsigned long start, unsigned long end)
{
	size_t i = __as_index(as, start);

	return i < as->vt.n && as->vt.vmas[i]->start < end;
}

/* Link a copy of @v into the new @as; false without memory.  Locking: the
 * table @v is on held shared; @as not yet seen by anyone. */
static bool as_fork_copy(struct uf_as *as, const struct uf_vma *v, struct uf_vma **opened)
{
	struct uf_vma *c = as_vma_copy(as, v, v->start, v->end);

	if (!c || __as_link(as, c)) {
		if (c)
			as_vma_release(c);
		return false;
	}
	c->refs++;
	c->ev_next = *opened;
	*opened = c;
	return true;
}

/*
 * uf_as_fork - a UFFD_EVENT_FORK read from the mm's userfaultfd (@parent
 * NULL) or from a child's: the new process's address space is a copy of
 * the parent's table now -- events read before the fork are applied
 * before this one, in order -- and of the mappings another thread's
 * uf_mmap() or uf_munmap() has out of the table meanwhile (the kernel's
 * fork may have copied them while they were registered); served from now
 * on through the new userfaultfd in the message.  A child no memory can
 * be found for gets its holes poisoned and is let go (SIGBUS, not zeros).
 * Locking: takes the parent's table lock shared; none held.
 */
void uf_as_fork(struct uf_mm *mm, struct uf_as *parent, const struct uffd_msg *msg)
{
	int fd = (int)msg->arg.fork.ufd;
	struct uf_vma **src, *b, *opened = NULL;
	pthread_rwlock_t *lock = parent ? &parent->vma_lock : &mm->vma_lock;
	struct uf_as *as;
	size_t n, i;
	bool ok = true;

	/* (children gone are not reaped here: the last put of an object
	 * they held syncs it, and a sync waits for the events being applied,
	 * this one among them) */
	as = uf_nocow_alloc(sizeof(*as));
	if (!as) {
		/* nobody can serve it: its faults would wait for ever */
		close(fd);
		return;
	}
	as->mm = mm;
	pthread_rwlock_init(&as->vma_lock, NULL);
	as->vt.nocow = true;
	uf_lockdep_class(&as->vma_lock, UF_LK_AS_VMA);
	uf_uffd_guest_init(&as->uffd, fd, &mm->uffd, &uf_as_uffd_ops, as);

	pthread_rwlock_rdlock(lock);
	src = parent ? parent->vt.vmas : mm->vt.vmas;
	n = parent ? parent->vt.n : mm->vt.n;
	for (i = 0; i < n && ok; i++)
		ok = as_fork_copy(as, src[i], &opened);
	/* and the mm's own mappings a uf_mmap() or uf_munmap() is making or
	 * taking away: the kernel's fork may have copied them, registered */
	for (b = parent ? NULL : mm->busy; b && ok; b = b->busy_next)
		if (!__as_overlaps(as, b->start, b->end))
			ok = as_fork_copy(as, b, &opened);
	pthread_rwlock_unlock(lock);
	as_lists_finish(opened, NULL);	/* ->open, as the kernel's fork */

	uf_uffd_attach(&as->uffd);
	if (!ok || __atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE)) {
		as_free(as, true, true);
		return;
	}
	pthread_mutex_lock(&mm->as_lock);
	as->next = mm->children;
	mm->children = as;
	__atomic_add_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mm->as_lock);
}

/*
 * uf_as_destroy_all - the mm is being destroyed: every child still alive
 * gets SIGBUS for what it has not received (see as_free), and lets go.
 * Locking: takes mm->as_lock; none held; not from a handler.
 */
void uf_as_destroy_all(struct uf_mm *mm)
{
	struct uf_as *as;

	for (;;) {
		pthread_mutex_lock(&mm->as_lock);
		as = mm->children;
		if (as) {
			mm->children = as->next;
			__atomic_sub_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&mm->as_lock);
		if (!as)
			return;
		as_free(as, true, true);
	}
}

/*
 * uf_as_collect_writes - before a sync of @obj: every cached page a
 * child's shared mapping of it shows may have been written there.
 * Locking: takes mm->as_lock, as->vma_lock, obj->invalidate_lock shared.
 */
void uf_as_collect_writes(struct uf_object *obj)
{
	struct uf_mm *mm = obj->mm;
	struct uf_as *as;

	if (!mm || !__atomic_load_n(&mm->nchildren, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&mm->as_lock);
	for (as = mm->children; as; as = as->next) {
		pthread_rwlock_rdlock(&as->vma_lock);
		__as_mark_all(as, obj);
		pthread_rwlock_unlock(&as->vma_lock);
	}
	pthread_mutex_unlock(&mm->as_lock);
}

/*
 * __uf_as_collect_writes_try - the same, before reclaim evicts pages of
 * @obj, whose invalidate lock it holds exclusive: the children's locks
 * are only tried (they are outside it).  false: not done, evict nothing.
 * Locking: obj->invalidate_lock held exclusive.
 */
bool __uf_as_collect_writes_try(struct uf_object *obj)
{
	struct uf_mm *mm = obj->mm;
	struct uf_as *as;
	bool done = true;
	size_t i;

	if (!mm || !__atomic_load_n(&mm->nchildren, __ATOMIC_RELAXED))
		return true;
	if (pthread_mutex_trylock(&mm->as_lock))
		return false;
	for (as = mm->children; as && done; as = as->next) {
		if (pthread_rwlock_tryrdlock(&as->vma_lock)) {
			done = false;
			break;
		}
		for (i = 0; i < as->vt.n; i++)
			if (as->vt.vmas[i]->obj == obj && may_write(as->vt.vmas[i]))
				__uf_vma_mark_written(as->vt.vmas[i], as->vt.vmas[i]->start,
						      as->vt.vmas[i]->end);
		pthread_rwlock_unlock(&as->vma_lock);
	}
	pthread_mutex_unlock(&mm->as_lock);
	return done;
}

/*
 * uf_as_adopt - serve the address space of another process that handed
 * its userfaultfd @fd over (ufault-serve's clients, serve.c): a table of
 * copies of the @n VMAs @tmpl, which must not overlap, whose faults and
 * events go to @ops with the new address space as owner.  It lives as a
 * fork child does: freed once its process is gone (uf_as_reap), its
 * holes poisoned at uf_mm_destroy().  On success @fd is the address
 * space's (closed with it); on failure the caller keeps it, except after
 * -ECANCELED.  At most one of these:
 *  - with @heldp, *@heldp is the address space, held: it is not freed
 *    until uf_as_unhold() (NULL if the mm was destroyed meanwhile);
 *  - with @asp it is the caller's instead (an attached client, attach.c):
 *    never reaped, freed by uf_as_release(), which the caller must call
 *    before uf_mm_destroy() frees the children.
 * Return: 0, -ENODEV (the mm is being destroyed), -ENOMEM, -ECANCELED
 * (with @asp: the mm was destroyed meanwhile, and @fd closed).
 * Locking: none held.
 */
int uf_as_adopt(struct uf_mm *mm, int fd, struct uf_vma *const *tmpl, size_t n,
		const struct uf_uffd_ops *ops, struct uf_as **heldp, struct uf_as **asp)
{
	struct uf_vma *opened = NULL;
	struct uf_as *as;
	bool ok = true;
	size_t i;

	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		return -ENODEV;
	as = uf_nocow_alloc(sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->mm = mm;
	as->owned = asp != NULL;
	pthread_rwlock_init(&as->vma_lock, NULL);
	as->vt.nocow = true;
	uf_lockdep_class(&as->vma_lock, UF_LK_AS_VMA);
	uf_uffd_guest_init(&as->uffd, fd, &mm->uffd, ops, as);
	for (i = 0; i < n && ok; i++) {
		struct uf_vma *v = as_vma_copy(as, tmpl[i], tmpl[i]->start, tmpl[i]->end);

		ok = v && __as_link(as, v) == 0;
		if (v && !ok)
			as_vma_release(v);
		if (ok) {
			v->refs++;
			v->ev_next = opened;
			opened = v;
		}
	}
	as_lists_finish(opened, NULL);
	if (!ok) {
		as->uffd.fd = -1;	/* the caller's still */
		as_free(as, false, true);
		return -ENOMEM;
	}
	uf_uffd_attach(&as->uffd);
	if (heldp)
		*heldp = NULL;
	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE)) {
		as_free(as, true, true);
		return asp ? -ECANCELED : 0;	/* (the fd is taken: closed) */
	}
	if (heldp) {
		/* before anyone can find it to free it */
		uf_uffd_guest_hold(&as->uffd);
		*heldp = as;
	}
	pthread_mutex_lock(&mm->as_lock);
	as->next = mm->children;
	mm->children = as;
	__atomic_add_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mm->as_lock);
	if (asp)
		*asp = as;
	return 0;
}

/*
 * uf_as_unhold - let an address space uf_as_adopt() returned held be
 * freed again (its process gone, or the mm destroyed, which waits for
 * this).  Locking: none held.
 */
void uf_as_unhold(struct uf_as *as)
{
	uf_uffd_guest_unhold(&as->uffd);
}

/*
 * uf_as_release - free an address space uf_as_adopt() gave its caller:
 * off the list, its writes marked dirty, every page it has not received
 * poisoned (nobody serves it any more: SIGBUS, never zeros), its fd
 * closed.  Waits for handlers serving it.
 * Locking: takes mm->as_lock; none held; not from a handler.
 */
void uf_as_release(struct uf_as *as)
{
	struct uf_mm *mm = as->mm;
	struct uf_as **pp;

	pthread_mutex_lock(&mm->as_lock);
	for (pp = &mm->children; *pp; pp = &(*pp)->next) {
		if (*pp == as) {
			*pp = as->next;
			__atomic_sub_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	pthread_mutex_unlock(&mm->as_lock);
	as_free(as, true, true);
}

/*
 * uf_as_map - the process mapped [tmpl->start, tmpl->end) (an attached
 * client's uf_mmap()): a copy of @tmpl goes into its table, in place of
 * whatever the table showed there.  Return 0 or -ENOMEM.
 * Locking: takes as->vma_lock exclusive; none held.
 */
int uf_as_map(struct uf_as *as, const struct uf_vma *tmpl)
{
	struct uf_vma *opened = NULL, *released = NULL, *v;
	int ret = 0;

	v = as_vma_copy(as, tmpl, tmpl->start, tmpl->end);
	if (!v)
		return -ENOMEM;
	pthread_rwlock_wrlock(&as->vma_lock);
	__as_unmap_range(as, tmpl->start, tmpl->end, &opened, &released);
	if (__as_link(as, v)) {
		ret = -ENOMEM;
		v->ev_next = released;
		released = v;
	} else {
		v->refs++;
		v->ev_next = opened;
		opened = v;
	}
	pthread_rwlock_unlock(&as->vma_lock);
	as_lists_finish(opened, released);
	return ret;
}

/*
 * uf_as_unmap - the process unmapped [start, end) (an attached client's
 * uf_munmap()): what it may have written there is dirty, the table
 * forgets the range.
 * Locking: takes as->vma_lock exclusive; none held.
 */
void uf_as_unmap(struct uf_as *as, unsigned long start, unsigned long end)
{
	struct uf_vma *opened = NULL, *released = NULL;

	pthread_rwlock_wrlock(&as->vma_lock);
	__as_unmap_range(as, start, end, &opened, &released);
	pthread_rwlock_unlock(&as->vma_lock);
	as_lists_finish(opened, released);
}

/*
 * uf_as_protect - the process changed the protection of [start, end) (an
 * attached client's uf_mprotect()): its VMAs there, split at the edges,
 * take @prot.  Return 0 or -ENOMEM (nothing changed).
 * Locking: takes as->vma_lock exclusive; none held.
 */
int uf_as_protect(struct uf_as *as, unsigned long start, unsigned long end, int prot)
{
	struct uf_vma *opened = NULL;
	int ret = 0;
	size_t i;

	pthread_rwlock_wrlock(&as->vma_lock);
	i = __as_index(as, start);
	if (i < as->vt.n && as->vt.vmas[i]->start < start &&
	    !__as_split(as, as->vt.vmas[i], start, &opened))
		ret = -ENOMEM;
	i = __as_index(as, end - 1);
	if (!ret && i < as->vt.n && as->vt.vmas[i]->start < end && as->vt.vmas[i]->end > end &&
	    !__as_split(as, as->vt.vmas[i], end, &opened))
		ret = -ENOMEM;
	for (i = __as_index(as, start); !ret && i < as->vt.n && as->vt.vmas[i]->start < end; i++)
		as->vt.vmas[i]->prot = prot;
	pthread_rwlock_unlock(&as->vma_lock);
	as_lists_finish(opened, NULL);
	return ret;
}
