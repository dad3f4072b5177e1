// SPDX-License-Identifier: MIT
/*
 * Address spaces other than the mm's own: fork children, processes served
 * (serve.c) and attached clients (attach.c).  The program's own is
 * mm->self (vma.c); all share one VMA table implementation (table.c) and
 * differ in their struct uf_as_ops (below).
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
 * is src/lib/lockorder.h.  ->open, ->close and the last object put run with
 * none of them held.
 */
#define _GNU_SOURCE
#include "as/as.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/*
 * Fork children alive at once of one process another hands over (a VMM
 * whose userfaultfd has UFFD_FEATURE_EVENT_FORK, an attach client), its
 * descendants included: each costs this process an fd and a table.  Past
 * it a child fails closed: every page it has not received gets the
 * poison marker (SIGBUS there, never zeros, never a hang), and its
 * userfaultfd is closed.  The mm's own fork children are not counted.
 */
#define UF_AS_MAX_FORKS	64

/* A served process's family: its fork descendants alive. */
struct uf_as_family {
	int refs;			/* its members (atomic) */
	int children;			/* members that are fork children (atomic) */
};

/* How often the handlers' idle tick looks for children gone. */
#define REAP_EVERY_NS	(100 * 1000 * 1000)

/* ------------------------------------------------------------------ */
/* Another process's VMAs                                              */
/* ------------------------------------------------------------------ */

/*
 * ->copy: a copy of @src (of the parent, of a part of a child's VMA, or a
 * client's template) for @as, covering [start, end) of it, in nocow
 * memory, unlinked, with no object reference.  NULL without memory.
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
	v->remote = true;	/* (uf_vma_free() gives it back to nocow) */
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
	return v;
}

/* @as's family, made at its first fork (handlers may race: one wins);
 * NULL without memory. */
static struct uf_as_family *as_family(struct uf_as *as)
{
	struct uf_as_family *f = __atomic_load_n(&as->family, __ATOMIC_ACQUIRE), *none = NULL;

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->refs = 1;			/* @as's */
	if (!__atomic_compare_exchange_n(&as->family, &none, f, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(f);
		return none;
	}
	return f;
}

/* @as leaves its family (as_free). */
static void as_family_leave(struct uf_as *as)
{
	struct uf_as_family *f = as->family;

	if (!f)
		return;
	if (as->forked)
		__atomic_sub_fetch(&f->children, 1, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(f);
}

/* Link a copy of [start, end) of @src into @as, to be opened (l->opened);
 * false without memory.  Locking: as->vma_lock held exclusive (or @as not
 * yet seen by anyone), and the table lock of @src. */
static bool __as_copy_link(struct uf_as *as, const struct uf_vma *src, unsigned long start,
			   unsigned long end, struct uf_vma_lists *l)
{
	struct uf_vma *v = as_vma_copy(as, src, start, end);

	if (!v)
		return false;
	if (__uf_as_link(as, v)) {
		uf_vma_free(v);
		return false;
	}
	if (v->obj)
		uf_object_get(v->obj);
	v->refs++;		/* for l->opened */
	v->ev_next = l->opened;
	l->opened = v;
	return true;
}

/* Can the child have written cached pages of @v that the mm does not
 * know of? */
static bool may_write(const struct uf_vma *v)
{
	return v->obj && (v->flags & VMA_SHARED) && !(v->flags & VMA_PRIV_MAP) &&
	       !v->obj->readonly;
}

/* ->lost_writes: what the child may have written in [s, e) of @v is
 * dirty.  Locking: as->vma_lock held. */
static void as_lost_writes(struct uf_vma *v, unsigned long s, unsigned long e)
{
	if (!may_write(v))
		return;
	pthread_rwlock_rdlock(&v->obj->invalidate_lock);
	__uf_vma_mark_written(v, s, e);
	pthread_rwlock_unlock(&v->obj->invalidate_lock);
}

/* ->lookup_get: uf_table_lookup_get(), again once the events read are
 * applied (a move not yet applied?).  Locking: none held. */
static struct uf_vma *as_lookup_get(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				    bool *nonlinear)
{
	struct uf_vma *v = uf_table_lookup_get(as, addr, pgoff, nonlinear);

	if (v)
		return v;
	uf_uffd_quiesce(as->uffd);
	return uf_table_lookup_get(as, addr, pgoff, nonlinear);
}

/*
 * ->no_vma: a child's fault at @page_addr that its table does not cover,
 * once its events are applied: not a mapping ufault knows of in that
 * process (one uf_munmap() took away as it forked).  SIGBUS, never a
 * fault served for ever.
 */
static void as_no_vma(struct uf_as *as, unsigned long page_addr)
{
	uf_add(&as->mm->stats.sigbus, 1);
	uf_count_sigbus_cause(as->mm, NULL, UF_SIGBUS_OUTSIDE);
	if (uf_uffd_poison_holes(as->uffd, page_addr, PAGE_SIZE, PAGE_SIZE))
		uf_uffd_wake(as->uffd, page_addr, PAGE_SIZE);
}

/* ->wp_fault: a child's writes are all taken as dirty (see above): let
 * it write. */
static void as_wp_fault(struct uf_vma *vma, unsigned long addr, uint64_t pgoff)
{
	unsigned long page_addr = addr & PAGE_MASK;

	(void)pgoff;
	if (uf_uffd_writeprotect(vma->as->uffd, page_addr, PAGE_SIZE, false, false))
		uf_uffd_wake(vma->as->uffd, page_addr, PAGE_SIZE);
}

/*
 * ->sigbus: an object page keeps its poison marker in another process,
 * as an operation mapping's does: its page tables cannot be zapped from
 * here.  Without the poison ioctl, or when the page is there already, a
 * wake: the child's pid is not known, and its retry faults again.
 */
static void as_sigbus(struct uf_vma *vma, unsigned long addr, pid_t tid)
{
	(void)tid;
	if (uf_fault_poison_page(vma, addr & PAGE_MASK))
		uf_uffd_wake(vma->as->uffd, addr & PAGE_MASK, PAGE_SIZE);
}

/* Faults in a row one thread of an attached client may take at one
 * address whose page the cache held already, before that access gets
 * SIGBUS (as_unresolved). */
#define AS_MAX_UNRESOLVED	8

/*
 * uf_as_lie_billed - an attached client's lie (as_lied()) is billed once
 * both the lie and its connection (@as->hangup_fd, with its peer) are
 * known: its uid is banned (attach_ban.c), then the reading end of its
 * connection shut, which wakes its server thread (attach_srv.c) to free
 * it, poisoning what it has not received.  The ban comes first, so that
 * a server that sees the client hang up finds it.
 * Locking: none held; a handler's, or the server thread's (the fd is
 * open: uf_as_release() waits for the handlers).
 */
void uf_as_lie_billed(struct uf_as *as)
{
	int fd = __atomic_load_n(&as->hangup_fd, __ATOMIC_ACQUIRE), lied = 1;

	if (fd < 0 || !__atomic_compare_exchange_n(&as->lied, &lied, 2, false, __ATOMIC_ACQ_REL,
						   __ATOMIC_ACQUIRE))
		return;
	uf_attach_ban(as->mm, as->peer_uid, as->peer_pid);
	shutdown(fd, SHUT_RD);
}

/* @as lied: served no more. */
static void as_lied(struct uf_as *as)
{
	int honest = 0;

	if (__atomic_compare_exchange_n(&as->lied, &honest, 1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		uf_as_lie_billed(as);
}

/*
 * ->unresolved of an attached client: its fault (a hole of its own
 * mapping of the cache) at @page_addr, by @tid, on a page its table says
 * the cache held before this fault was served (@cached).  The wake cannot
 * resolve it when the table names another page than the client maps (a
 * client that lies about its offsets): the same thread faults at the same
 * address again, for ever.  Honest faults meet a cached page only when it
 * came or went meanwhile, never many times in a row.  Return true when
 * the access is to get SIGBUS instead of another wake: then the client
 * lied, and is served no more (as_lied()).
 */
static bool as_unresolved(struct uf_as *as, pid_t tid, unsigned long page_addr, bool cached)
{
	unsigned int n;

	if (cached && __atomic_load_n(&as->lied, __ATOMIC_ACQUIRE))
		return true;
	if (!cached || __atomic_load_n(&as->stuck_addr, __ATOMIC_RELAXED) != page_addr ||
	    __atomic_load_n(&as->stuck_tid, __ATOMIC_RELAXED) != tid) {
		__atomic_store_n(&as->stuck_addr, cached ? page_addr : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&as->stuck_tid, tid, __ATOMIC_RELAXED);
		__atomic_store_n(&as->stuck_n, cached ? 1 : 0, __ATOMIC_RELAXED);
		return false;
	}
	n = __atomic_add_fetch(&as->stuck_n, 1, __ATOMIC_RELAXED);
	if (n < AS_MAX_UNRESOLVED)
		return false;
	as_lied(as);
	return true;
}

static void as_destroy(struct uf_as *as);

/* A fork child's, a VMM's, a served process's address space. */
const struct uf_as_ops uf_child_as_ops = {
	.remote		= true,
	.copy		= as_vma_copy,
	.lost_writes	= as_lost_writes,
	.lookup_get	= as_lookup_get,
	.no_vma		= as_no_vma,
	.wp_fault	= as_wp_fault,
	.sigbus		= as_sigbus,
	.destroy	= as_destroy,
};

/* An attached client's (attach.c): a child's, and a lying client's
 * faults end. */
const struct uf_as_ops uf_client_as_ops = {
	.remote		= true,
	.copy		= as_vma_copy,
	.lost_writes	= as_lost_writes,
	.lookup_get	= as_lookup_get,
	.no_vma		= as_no_vma,
	.wp_fault	= as_wp_fault,
	.sigbus		= as_sigbus,
	.unresolved	= as_unresolved,
	.destroy	= as_destroy,
};

/* ->fault and ->event of another process's userfaultfd. */
const struct uf_uffd_ops uf_as_uffd_ops = {
	.fault	= uf_fault_as,
	.event	= uf_as_event,
};

/*
 * ->event of a child's userfaultfd: the child unmapped, moved, zapped
 * part of its ufault memory, or forked (a grandchild, served the same).
 * Locking: takes as->vma_lock exclusive.
 */
void uf_as_event(void *owner, const struct uffd_msg *msg)
{
	struct uf_as *as = owner;
	struct uf_vma_lists l = { NULL, NULL };

	if (msg->event == UFFD_EVENT_FORK) {
		uf_as_fork(as, msg);
		return;
	}
	pthread_rwlock_wrlock(as->vma_lock);
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
		__uf_as_unmap_range(as, msg->arg.remove.start, msg->arg.remove.end, &l);
		break;
	case UFFD_EVENT_REMAP:
		__uf_as_move(as, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len, &l);
		break;
	case UFFD_EVENT_REMOVE: {
		/* zapped page tables or a punched cache: the cache's bytes
		 * (zeros where punched) are what the store must get */
		unsigned long s = msg->arg.remove.start, e = msg->arg.remove.end;
		size_t i;

		for (i = __uf_table_index(&as->vt, s); i < as->vt.n && as->vt.vmas[i]->start < e;
		     i++) {
			struct uf_vma *v = as->vt.vmas[i];

			as_lost_writes(v, v->start > s ? v->start : s, v->end < e ? v->end : e);
		}
		break;
	}
	default:
		break;
	}
	pthread_rwlock_unlock(as->vma_lock);
	uf_vma_lists_finish(&l);
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

		if (!only || v->obj == only)
			as_lost_writes(v, v->start, v->end);
	}
}

/*
 * A new address space of another process for @mm, served through its
 * userfaultfd @fd (events and faults to @uffd_ops), with @ops; its table
 * empty.  NULL without memory.
 */
static struct uf_as *as_new(struct uf_mm *mm, int fd, const struct uf_as_ops *ops,
			    const struct uf_uffd_ops *uffd_ops)
{
	struct uf_as *as = uf_nocow_alloc(sizeof(*as));

	if (!as)
		return NULL;
	as->mm = mm;
	as->ops = ops;
	as->uffd = &as->guest;
	as->vma_lock = &as->guest_lock;
	as->vt.nocow = true;
	as->hangup_fd = -1;
	pthread_rwlock_init(&as->guest_lock, NULL);
	uf_lockdep_class(&as->guest_lock, UF_LK_AS_VMA);
	uf_uffd_guest_init(&as->guest, fd, &mm->uffd, uffd_ops, as);
	return as;
}

/* Put @as on the mm's list of address spaces.  Locking: takes mm->as_lock. */
static void as_list_add(struct uf_as *as)
{
	struct uf_mm *mm = as->mm;

	pthread_mutex_lock(&mm->as_lock);
	as->next = mm->children;
	mm->children = as;
	__atomic_add_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mm->as_lock);
}

/* Every page of @as's mappings it has not received gets the poison
 * marker.  Locking: takes as->vma_lock shared. */
static void as_poison_all(struct uf_as *as)
{
	size_t i;

	/* the child's events first: its table is the kernel's */
	uf_uffd_settle(as->uffd);
	pthread_rwlock_rdlock(as->vma_lock);
	for (i = 0; i < as->vt.n; i++) {
		struct uf_vma *v = as->vt.vmas[i];

		uf_uffd_poison_holes(as->uffd, v->start, v->end - v->start,
				     v->flags & VMA_HUGETLB ? UF_HUGE_SIZE : PAGE_SIZE);
	}
	pthread_rwlock_unlock(as->vma_lock);
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
	struct uf_vma_lists l = { NULL, NULL };
	size_t i;

	if (poison)
		as_poison_all(as);
	if (uf_uffd_detach(as->uffd, wait))
		return -EBUSY;
	/* events read and not applied: a grandchild's fork is applied (its
	 * userfaultfd must not be lost), the rest no longer matters */
	uf_uffd_quiesce(as->uffd);
	pthread_rwlock_wrlock(as->vma_lock);
	__as_mark_all(as, NULL);
	for (i = 0; i < as->vt.n; i++) {
		__atomic_store_n(&as->vt.vmas[i]->dead, true, __ATOMIC_RELEASE);
		as->vt.vmas[i]->ev_next = l.released;
		l.released = as->vt.vmas[i];
	}
	as->vt.n = 0;
	pthread_rwlock_unlock(as->vma_lock);
	uf_uffd_close(as->uffd);
	uf_vma_lists_finish(&l);
	as_family_leave(as);
	uf_table_free(&as->vt);
	pthread_rwlock_destroy(&as->guest_lock);
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
	uint64_t now = uf_now_ns(), last = __atomic_load_n(&mm->reap_ns, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&mm->nchildren, __ATOMIC_RELAXED))
		return;
	if (!force && (now - last < REAP_EVERY_NS ||
		       !__atomic_compare_exchange_n(&mm->reap_ns, &last, now, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED)))
		return;
	pthread_mutex_lock(&mm->as_lock);
	for (pp = &mm->children; (as = *pp);) {
		if (!as->owned && !uf_uffd_alive(as->uffd)) {
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
		if (as_free(as, false, false) != 0)
			as_list_add(as);  /* in use by a handler (maybe this one) */
	}
}

/*
 * uf_as_fork - a UFFD_EVENT_FORK read from the userfaultfd of @parent (the
 * mm's own address space, or another process's): the new process's
 * address space is a copy of the parent's table now -- events read before
 * the fork are applied before this one, in order -- and of the mappings
 * another thread's uf_mmap() or uf_munmap() has out of the table
 * meanwhile (the kernel's fork may have copied them while they were
 * registered); served from now on through the new userfaultfd in the
 * message.  A child no memory can be found for gets its holes poisoned
 * and is let go (SIGBUS, not zeros).
 * Locking: takes the parent's table lock shared; none held.
 */
void uf_as_fork(struct uf_as *parent, const struct uffd_msg *msg)
{
	struct uf_mm *mm = parent->mm;
	struct uf_vma_lists l = { NULL, NULL };
	struct uf_vma *b;
	struct uf_as *as;
	size_t i;
	struct uf_as_family *fam = NULL;
	bool ok = true, over = false;

	/* (children gone are not reaped here: the last put of an object
	 * they held syncs it, and a sync waits for the events being applied,
	 * this one among them) */
	as = as_new(mm, (int)msg->arg.fork.ufd, &uf_child_as_ops, &uf_as_uffd_ops);
	if (!as) {
		/* nobody can serve it: its faults would wait for ever */
		close((int)msg->arg.fork.ufd);
		return;
	}
	/* a served process's child: counted, and past the limit failed
	 * closed (below, once its table is known); the program's own
	 * descendants are the program's */
	if (parent->adopted) {
		as->adopted = true;
		fam = as_family(parent);
		if (fam) {
			__atomic_add_fetch(&fam->refs, 1, __ATOMIC_RELAXED);
			as->family = fam;
			as->forked = true;
			over = __atomic_add_fetch(&fam->children, 1, __ATOMIC_RELAXED) >
			       UF_AS_MAX_FORKS;
		}
		over = over || !fam;
	}

	pthread_rwlock_rdlock(parent->vma_lock);
	for (i = 0; i < parent->vt.n && ok; i++)
		ok = __as_copy_link(as, parent->vt.vmas[i], parent->vt.vmas[i]->start,
				    parent->vt.vmas[i]->end, &l);
	/* and the mm's own mappings a uf_mmap() or uf_munmap() is making or
	 * taking away: the kernel's fork may have copied them, registered */
	for (b = parent == &mm->self ? mm->busy : NULL; b && ok; b = b->busy_next) {
		i = __uf_table_index(&as->vt, b->start);
		if (i >= as->vt.n || as->vt.vmas[i]->start >= b->end)
			ok = __as_copy_link(as, b, b->start, b->end, &l);
	}
	pthread_rwlock_unlock(parent->vma_lock);
	uf_vma_lists_finish(&l);	/* ->open, as the kernel's fork */

	if (over) {
		/* never read: no fault of it is served meanwhile */
		as_free(as, true, true);
		return;
	}
	uf_uffd_attach(as->uffd);
	if (!ok || __atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE)) {
		as_free(as, true, true);
		return;
	}
	as_list_add(as);
}

/*
 * uf_as_next_gone - the mm is being destroyed: take the next address
 * space of another process off its list (NULL: none left), for its
 * ->destroy.  Locking: takes mm->as_lock; none held; not from a handler.
 */
struct uf_as *uf_as_next_gone(struct uf_mm *mm)
{
	struct uf_as *as;

	pthread_mutex_lock(&mm->as_lock);
	as = mm->children;
	if (as) {
		mm->children = as->next;
		__atomic_sub_fetch(&mm->nchildren, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&mm->as_lock);
	return as;
}

/* ->destroy: SIGBUS for what it has not received (see as_free); let go. */
static void as_destroy(struct uf_as *as)
{
	as_free(as, true, true);
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
		pthread_rwlock_rdlock(as->vma_lock);
		__as_mark_all(as, obj);
		pthread_rwlock_unlock(as->vma_lock);
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
		if (pthread_rwlock_tryrdlock(as->vma_lock)) {
			done = false;
			break;
		}
		for (i = 0; i < as->vt.n; i++)
			if (as->vt.vmas[i]->obj == obj && may_write(as->vt.vmas[i]))
				__uf_vma_mark_written(as->vt.vmas[i], as->vt.vmas[i]->start,
						      as->vt.vmas[i]->end);
		pthread_rwlock_unlock(as->vma_lock);
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
 *  - with @asp it is the caller's instead (an attached client, attach.c,
 *    with uf_client_as_ops): never reaped, freed by uf_as_release(),
 *    which the caller must call before uf_mm_destroy() frees the children.
 * Return: 0, -ENODEV (the mm is being destroyed), -ENOMEM, -ECANCELED
 * (with @asp: the mm was destroyed meanwhile, and @fd closed).
 * Locking: none held.
 */
int uf_as_adopt(struct uf_mm *mm, int fd, struct uf_vma *const *tmpl, size_t n,
		const struct uf_uffd_ops *ops, struct uf_as **heldp, struct uf_as **asp)
{
	struct uf_vma_lists l = { NULL, NULL };
	struct uf_as *as;
	bool ok = true;
	size_t i;

	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		return -ENODEV;
	as = as_new(mm, fd, asp ? &uf_client_as_ops : &uf_child_as_ops, ops);
	if (!as)
		return -ENOMEM;
	as->owned = asp != NULL;
	as->adopted = true;
	for (i = 0; i < n && ok; i++)
		ok = __as_copy_link(as, tmpl[i], tmpl[i]->start, tmpl[i]->end, &l);
	uf_vma_lists_finish(&l);
	if (!ok) {
		as->guest.fd = -1;	/* the caller's still */
		as_free(as, false, true);
		return -ENOMEM;
	}
	uf_uffd_attach(as->uffd);
	if (heldp)
		*heldp = NULL;
	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE)) {
		as_free(as, true, true);
		return asp ? -ECANCELED : 0;	/* (the fd is taken: closed) */
	}
	if (heldp) {
		/* before anyone can find it to free it */
		uf_uffd_guest_hold(as->uffd);
		*heldp = as;
	}
	as_list_add(as);
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
	uf_uffd_guest_unhold(as->uffd);
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
	struct uf_vma_lists l = { NULL, NULL };
	int ret = 0;

	pthread_rwlock_wrlock(as->vma_lock);
	__uf_as_unmap_range(as, tmpl->start, tmpl->end, &l);
	if (!__as_copy_link(as, tmpl, tmpl->start, tmpl->end, &l))
		ret = -ENOMEM;
	pthread_rwlock_unlock(as->vma_lock);
	uf_vma_lists_finish(&l);
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
	struct uf_vma_lists l = { NULL, NULL };

	pthread_rwlock_wrlock(as->vma_lock);
	__uf_as_unmap_range(as, start, end, &l);
	pthread_rwlock_unlock(as->vma_lock);
	uf_vma_lists_finish(&l);
}

/*
 * uf_as_protect - the process changed the protection of [start, end) (an
 * attached client's uf_mprotect()): its VMAs there, split at the edges,
 * take @prot.  Return 0 or -ENOMEM (nothing changed).
 * Locking: takes as->vma_lock exclusive; none held.
 */
int uf_as_protect(struct uf_as *as, unsigned long start, unsigned long end, int prot)
{
	struct uf_vma_lists l = { NULL, NULL };
	struct uf_vma_table *t = &as->vt;
	int ret = 0;
	size_t i;

	pthread_rwlock_wrlock(as->vma_lock);
	i = __uf_table_index(t, start);
	if (i < t->n && t->vmas[i]->start < start && !__uf_as_split(as, t->vmas[i], start, &l))
		ret = -ENOMEM;
	i = __uf_table_index(t, end - 1);
	if (!ret && i < t->n && t->vmas[i]->start < end && t->vmas[i]->end > end &&
	    !__uf_as_split(as, t->vmas[i], end, &l))
		ret = -ENOMEM;
	for (i = __uf_table_index(t, start); !ret && i < t->n && t->vmas[i]->start < end; i++)
		t->vmas[i]->prot = prot;
	pthread_rwlock_unlock(as->vma_lock);
	uf_vma_lists_finish(&l);
	return ret;
}
