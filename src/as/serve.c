// SPDX-License-Identifier: MIT
/*
 * Serving another process's anonymous memory from an object's cache:
 * the library half of ufault-serve (tools/ufault-serve.c).
 *
 * A Firecracker VMM maps guest memory MAP_PRIVATE | MAP_ANONYMOUS,
 * registers it MISSING on a userfaultfd of its own and hands that fd over
 * with a table of regions: region i's pages are the memory file's bytes
 * at regions[i].offset.  Anonymous memory cannot map the cache's pages,
 * so each fault is served as the kernel serves a private file mapping's
 * first touch, with a copy into the faulting page with UFFDIO_COPY
 * through the other process's userfaultfd (whose source must be in this
 * process): serve_fault.c.
 *
 * The files: serve.c (this one: uf_object_serve_uffd*(), the regions and
 * their lifetime, the VMAs' ops, the process's events), serve_fault.c
 * (serving a fault by copy, running ahead of a 4 KiB stream),
 * serve_huge.c (hugetlbfs memory, 2 MiB pages), serve_fair.c (a tenant
 * over its share served at a low priority), serve_push.c (a working
 * set pushed into the process); serve.h is theirs alone.
 *
 * The process is an address space of the mm (as.c): a struct uf_as whose
 * VMAs are one per region, with the object attached and these vm_ops.
 * fault.c finds the VMA and calls serve_fault(); a store error gives the
 * faulting access SIGBUS through the other process's userfaultfd (the
 * poison marker), never zeros.  When the process is gone its address
 * space is freed (uf_as_reap); when the mm is destroyed first, every page
 * it has not received is poisoned.
 *
 * Balloon.  The VMM's MADV_DONTNEED of guest memory raises
 * UFFD_EVENT_REMOVE: from then on that range is the process's own
 * anonymous memory, which reads zeros, never the object's bytes again.
 * Each region keeps a bit per page for that, set by serve_event() under
 * the table lock held exclusive and tested under it held shared around
 * every copy, so no copy of the object's bytes lands after the removal
 * was applied.
 *
 * Taking over.  A server may be killed while the process lives on; the
 * process's userfaultfd, kept by someone else (ufault-serve's supervisor,
 * tools/serve/supervisor.c), then goes to the next server with the
 * removals the dead one reported through ->on_remove (struct
 * uf_serve_opts).  Threads of the process may sleep in faults the dead
 * server read and never answered: every region is woken once before it
 * is served, and they fault again, to be read by this mm's handlers.
 *
 * Working sets (ws_record.c, ws_serve.c).  A process recorded gets the faulting
 * page alone, noted once copied; a process served with a working set gets
 * a thread that copies the set into it ahead of its faults (serve_push.c).
 *
 * Locking: as->vma_lock (shared) -> obj->invalidate_lock (shared, which
 * keeps the pages copied from present: reclaim and punch take it
 * exclusive) -> the engine's copy_lock (uffd.c).  The fill runs with the
 * invalidate lock alone: a store read never holds up the table.
 */
#define _GNU_SOURCE
#include "as/as.h"
#include "as/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

bool region_removed(struct serve_region *r, uint64_t pg)
{
	uint64_t i = pg - r->first;

	/* (an attach client's region has no bitmap: nothing is removed) */
	if (i >= r->npages || !r->removed)
		return false;
	return __atomic_load_n(&r->removed[i / BITS_PER_LONG], __ATOMIC_RELAXED) &
	       (1UL << (i % BITS_PER_LONG));
}

static void region_remove(struct serve_region *r, uint64_t pg)
{
	uint64_t i = pg - r->first;

	if (i < r->npages && r->removed)
		__atomic_fetch_or(&r->removed[i / BITS_PER_LONG], 1UL << (i % BITS_PER_LONG),
				  __ATOMIC_RELAXED);
}

/* Does a stream of this region go on at @pg? */
bool region_stream(struct serve_region *r, uint64_t pg)
{
	unsigned int i;

	for (i = 0; i < SERVE_STREAMS; i++)
		if (__atomic_load_n(&r->next[i], __ATOMIC_RELAXED) == pg)
			return true;
	return false;
}

void region_stream_note(struct serve_region *r, uint64_t from, uint64_t to)
{
	unsigned int i;

	for (i = 0; i < SERVE_STREAMS; i++) {
		uint64_t was = from;

		if (__atomic_compare_exchange_n(&r->next[i], &was, to, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
	i = __atomic_fetch_add(&r->clock, 1, __ATOMIC_RELAXED) % SERVE_STREAMS;
	__atomic_store_n(&r->next[i], to, __ATOMIC_RELAXED);
}

/* A region of object pages [first, first + npages), one reference (the
 * caller's), with a bit per page for removals when @removals; NULL
 * without memory. */
static struct serve_region *region_alloc(uint64_t first, uint64_t npages, bool removals)
{
	struct serve_region *r = calloc(1, sizeof(*r));
	unsigned int j;

	if (!r)
		return NULL;
	uf_runahead_init(&r->ahead, first + npages);
	for (j = 0; j < SERVE_STREAMS; j++)
		r->next[j] = UINT64_MAX;
	r->refs = 1;
	r->first = first;
	r->npages = npages;
	/* (untouched pages of a large bitmap cost no memory) */
	if (removals) {
		r->removed = calloc(DIV_ROUND_UP(npages, BITS_PER_LONG), sizeof(unsigned long));
		if (!r->removed) {
			uf_runahead_destroy(&r->ahead);
			free(r);
			return NULL;
		}
	}
	return r;
}

static void serve_open(struct uf_vma *vma)
{
	struct serve_region *r = vma->private_data;

	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

/*
 * Link @n regions into @obj->served (truncate.c's served_busy()), their ends checked
 * against the size again under the invalidate lock: a truncate either
 * sees them and is refused, or ran first and they are (-EINVAL).
 * Locking: none held; takes obj->invalidate_lock shared, obj->page_lock.
 */
static int regions_link(struct uf_object *obj, struct serve_region **r, unsigned int n)
{
	uint64_t end;
	unsigned int i;
	int ret = 0;

	pthread_rwlock_rdlock(&obj->invalidate_lock);
	end = DIV_ROUND_UP(obj->size, PAGE_SIZE);
	for (i = 0; i < n; i++)
		if (r[i]->first + r[i]->npages > end)
			ret = -EINVAL;
	pthread_mutex_lock(&obj->page_lock);
	for (i = 0; !ret && i < n; i++) {
		uf_object_get(obj);
		r[i]->obj = obj;
		r[i]->pin = (struct uf_served_range){ .first = r[i]->first,
						      .npages = r[i]->npages,
						      .next = obj->served,
						      .pprev = &obj->served };
		if (obj->served)
			obj->served->pprev = &r[i]->pin.next;
		obj->served = &r[i]->pin;
	}
	pthread_mutex_unlock(&obj->page_lock);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return ret;
}

static void region_unlink(struct serve_region *r)
{
	struct uf_object *obj = r->obj;

	if (!obj)
		return;
	pthread_mutex_lock(&obj->page_lock);
	*r->pin.pprev = r->pin.next;
	if (r->pin.next)
		r->pin.next->pprev = r->pin.pprev;
	pthread_mutex_unlock(&obj->page_lock);
	uf_object_put(obj);
}

void region_put(struct serve_region *r)
{
	if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		region_unlink(r);
		uf_ws_set_put(r->set);
		uf_runahead_destroy(&r->ahead);
		free(r->removed);
		free(r->hbusy);
		free(r->hdone);
		free(r);
	}
}

static void serve_close(struct uf_vma *vma)
{
	region_put(vma->private_data);
}

/*
 * ->open, ->close and ->fault of a region's VMA.  Called by fault.c from
 * a handler thread with no lock held (->fault), and by as.c with none
 * held (->open at a split or fork of the table, ->close at its release).
 */
const struct uf_vm_operations serve_vm_ops = {
	.open	= serve_open,
	.close	= serve_close,
	.fault	= serve_fault,
};

/*
 * uf_serve_vma_init - make @t, a VMA template of an attach client's
 * table (start, end, pgoff and prot set, attach.c), one served by copy as
 * a VMM's region is: the client's mapping is anonymous memory, and each
 * fault copies the cache's page into it.  For a client the server does
 * not trust with the cache's memfd (a read-only tenant of another uid),
 * which could otherwise fill holes of the cache with zeros by reading
 * them through a plain mapping of its own.  The region is linked on
 * obj->served: a truncate or punch under it is refused (-EBUSY), as under
 * a VMM's.  @t holds a reference to the region, which ->close(@t) drops
 * (the address space's copies take their own, ->open).
 * Return 0, -EINVAL (the object shrank meanwhile), -ENOMEM.
 * Locking: none held; takes obj->invalidate_lock shared, obj->page_lock.
 */
int uf_serve_vma_init(struct uf_object *obj, struct uf_vma *t)
{
	uint64_t npages = (t->end - t->start) >> PAGE_SHIFT, end;
	struct serve_region *r;
	int ret;

	/* pinned up to the end of the object (past it the fill fails: SIGBUS) */
	end = DIV_ROUND_UP(uf_object_size(obj), PAGE_SIZE);
	if (t->pgoff >= end)
		npages = 0;
	else if (npages > end - t->pgoff)
		npages = end - t->pgoff;
	r = region_alloc(t->pgoff, npages, false);
	if (!r)
		return -ENOMEM;
	ret = regions_link(obj, &r, 1);
	if (ret) {
		region_put(r);
		return ret;
	}
	t->flags = VMA_PRIVATE;
	t->vm_ops = &serve_vm_ops;
	t->private_data = r;
	t->obj = obj;
	return 0;
}

/*
 * ->event of the other process's userfaultfd: a removal (the balloon's
 * MADV_DONTNEED) is noted page by page, then the table follows the event
 * as a fork child's does.
 * Locking: takes as->vma_lock exclusive.
 */
static void serve_event(void *owner, const struct uffd_msg *msg)
{
	struct uf_as *as = owner;

	if (msg->event == UFFD_EVENT_REMOVE) {
		unsigned long s = msg->arg.remove.start & PAGE_MASK, e = msg->arg.remove.end;
		void (*report)(void *, uint64_t, uint64_t) = NULL;
		void *arg = NULL;
		size_t i;

		pthread_rwlock_wrlock(as->vma_lock);
		for (i = 0; i < as->vt.n; i++) {
			struct uf_vma *v = as->vt.vmas[i];
			unsigned long a;

			if (v->vm_ops != &serve_vm_ops)
				continue;
			/* every region of the process has the same report */
			report = ((struct serve_region *)v->private_data)->on_remove;
			arg = ((struct serve_region *)v->private_data)->arg;
			if (v->end <= s || v->start >= e)
				continue;
			for (a = v->start > s ? v->start : s; a < v->end && a < e; a += PAGE_SIZE)
				region_remove(v->private_data, __uf_vma_pgoff(v, a));
		}
		pthread_rwlock_unlock(as->vma_lock);
		if (report && e > s)
			report(arg, s, ((e + PAGE_SIZE - 1) & PAGE_MASK) - s);
	}
	uf_as_event(owner, msg);
}

static const struct uf_uffd_ops serve_uffd_ops = {
	.fault	= uf_fault_as,
	.event	= serve_event,
};

static int region_cmp(const void *a, const void *b)
{
	const struct uf_serve_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The regions, checked against @size and each other, sorted into @s. */
static int regions_check(const struct uf_serve_region *regions, unsigned int n, uint64_t size,
			 struct uf_serve_region *s)
{
	uint64_t limit = DIV_ROUND_UP(size, PAGE_SIZE) * PAGE_SIZE;
	unsigned int i;

	if (!n || n > UF_SERVE_MAX_REGIONS)
		return -EINVAL;
	memcpy(s, regions, n * sizeof(*s));
	for (i = 0; i < n; i++) {
		if (!s[i].len || !PAGE_ALIGNED(s[i].start) || !PAGE_ALIGNED(s[i].len) ||
		    !PAGE_ALIGNED(s[i].offset) || s[i].start + s[i].len < s[i].start ||
		    s[i].start + s[i].len > (1ULL << 63) || s[i].offset > limit ||
		    s[i].len > limit - s[i].offset)
			return -EINVAL;
	}
	qsort(s, n, sizeof(*s), region_cmp);
	for (i = 1; i < n; i++)
		if (s[i].start < s[i - 1].start + s[i - 1].len)
			return -EINVAL;
	return 0;
}

/* Mark what @opts says the process removed before; -EINVAL: unaligned. */
static int regions_removed(struct serve_region **r, const struct uf_serve_region *s,
			   unsigned int n, const struct uf_serve_opts *opts)
{
	size_t k;
	unsigned int i;

	for (k = 0; opts && k < opts->nremoved; k++) {
		uint64_t a = opts->removed[k].start, e = a + opts->removed[k].len;

		if (!PAGE_ALIGNED(a) || !PAGE_ALIGNED(opts->removed[k].len) || e < a)
			return -EINVAL;
		for (i = 0; i < n; i++) {
			uint64_t x = a > s[i].start ? a : s[i].start;
			uint64_t y = e < s[i].start + s[i].len ? e : s[i].start + s[i].len;

			for (; x < y; x += PAGE_SIZE)
				region_remove(r[i], r[i]->first + ((x - s[i].start) >> PAGE_SHIFT));
		}
	}
	return 0;
}

UF_EXPORT int uf_object_serve_uffd(struct uf_object *obj, int uffd,
				   const struct uf_serve_region *regions, unsigned int n)
{
	return uf_object_serve_uffd_opts(obj, uffd, regions, n, NULL);
}

/* The regions of @s and the VMAs the address space copies of them, into
 * @r, @tmpl and @tp; -ENOMEM. */
static int regions_make(struct uf_object *obj, const struct uf_serve_region *s, unsigned int n,
			const struct uf_serve_opts *opts, bool huge, uint64_t rec,
			struct uf_ws_set *set, struct serve_region **r, struct uf_vma *tmpl,
			struct uf_vma **tp)
{
	unsigned int i;

	memset(tmpl, 0, n * sizeof(*tmpl));
	for (i = 0; i < n; i++) {
		r[i] = region_alloc(s[i].offset >> PAGE_SHIFT, s[i].len >> PAGE_SHIFT, true);
		if (!r[i])
			return -ENOMEM;
		r[i]->rec = rec;
		r[i]->huge = huge;
		if (huge && huge_region_init(r[i]))
			return -ENOMEM;
		if (set) {
			__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
			r[i]->set = set;
		}
		if (opts) {
			r[i]->on_remove = opts->on_remove;
			r[i]->arg = opts->arg;
			r[i]->tenant = opts->tenant;
		}
		/* the VMA the address space copies (as.c): its ->open is
		 * called for the copy */
		tmpl[i].start = s[i].start;
		tmpl[i].end = s[i].start + s[i].len;
		tmpl[i].pgoff = s[i].offset >> PAGE_SHIFT;
		tmpl[i].prot = PROT_READ | PROT_WRITE;
		tmpl[i].flags = VMA_PRIVATE | (huge ? VMA_HUGETLB : 0);
		tmpl[i].vm_ops = &serve_vm_ops;
		tmpl[i].private_data = r[i];
		tmpl[i].obj = obj;
		tp[i] = &tmpl[i];
	}
	return 0;
}

/* uf_object_serve_uffd_opts(), of hugetlbfs memory with @huge set (its
 * regions checked by the caller). */
static int serve_uffd(struct uf_object *obj, int uffd, const struct uf_serve_region *regions,
		      unsigned int n, const struct uf_serve_opts *opts, bool huge)
{
	struct uf_serve_region s[UF_SERVE_MAX_REGIONS];
	struct uf_vma tmpl[UF_SERVE_MAX_REGIONS], *tp[UF_SERVE_MAX_REGIONS];
	struct serve_region *r[UF_SERVE_MAX_REGIONS] = { NULL };
	struct uf_ws_set *set = NULL;
	struct serve_push *push = NULL;
	struct uf_as *as = NULL;
	unsigned int i;
	uint64_t rec;
	int fl, ret;

	if (!obj || !regions || uffd < 0 || uf_object_orphaned(obj) || obj->attach ||
	    (opts && opts->nremoved && !opts->removed))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	ret = regions_check(regions, n, uf_object_size(obj), s);
	if (ret)
		return ret;
	if (!uf_uffd_fd_is_uffd(uffd))
		return -EBADF;
	/* the handlers read it as the mm's own: an empty read must not block
	 * (the flag is the open file's: the other process's copy too, which
	 * its owner does not read) */
	fl = fcntl(uffd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(uffd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -EBADF;

	/* a record of this process, a working set pushed into it (in 4 KiB
	 * runs: not into hugetlbfs memory) */
	rec = huge ? 0 : uf_ws_serve_claim(obj, &set);
	/* its thread first: it is running by the time the process is ours */
	push = set ? push_create(obj, set, opts ? opts->tenant : 0) : NULL;
	ret = regions_make(obj, s, n, opts, huge, rec, set, r, tmpl, tp);
	if (!ret)
		ret = regions_removed(r, s, n, opts);
	if (!ret)
		ret = regions_link(obj, r, n);
	if (ret)
		goto out;
	/* threads asleep in a fault nobody will answer fault again: their
	 * messages wait for this mm's handlers (see the top of the file) */
	for (i = 0; i < n; i++)
		uf_uffd_fd_wake(uffd, s[i].start, s[i].len);
	ret = uf_as_adopt(obj->mm, uffd, tp, n, &serve_uffd_ops, push ? &as : NULL, NULL);
out:
	for (i = 0; i < n && r[i]; i++)
		region_put(r[i]);
	if (ret)
		uf_ws_serve_unclaim(obj, rec);
	if (push)
		push_go(push, as);	/* (NULL: not adopted; the hold passes) */
	uf_ws_set_put(set);
	return ret;
}

/*
 * uf_object_serve_uffd_opts() and uf_object_serve_uffd_huge() are
 * versioned: UFAULT_0.9's read struct uf_serve_opts' @tenant; the first
 * ones (UFAULT_0.4, UFAULT_0.7; below), bound to programs built before
 * the struct had it, read the four members those programs' structs have.
 */
__asm__(".symver uf_object_serve_uffd_opts_0_9, uf_object_serve_uffd_opts@@UFAULT_0.9");
__asm__(".symver uf_object_serve_uffd_opts_0_4, uf_object_serve_uffd_opts@UFAULT_0.4");
__asm__(".symver uf_object_serve_uffd_huge_0_9, uf_object_serve_uffd_huge@@UFAULT_0.9");
__asm__(".symver uf_object_serve_uffd_huge_0_7, uf_object_serve_uffd_huge@UFAULT_0.7");

UF_EXPORT int uf_object_serve_uffd_opts_0_9(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct uf_serve_opts *opts);
UF_EXPORT int uf_object_serve_uffd_opts_0_9(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct uf_serve_opts *opts)
{
	return serve_uffd(obj, uffd, regions, n, opts, false);
}

UF_EXPORT int uf_object_serve_uffd_huge_0_9(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct uf_serve_opts *opts, size_t page_size);
UF_EXPORT int uf_object_serve_uffd_huge_0_9(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct uf_serve_opts *opts, size_t page_size)
{
	unsigned int i;

	if (page_size == PAGE_SIZE)
		return serve_uffd(obj, uffd, regions, n, opts, false);
	if (page_size != UF_HUGE_SIZE)
		return -EOPNOTSUPP;
	if (!regions || n > UF_SERVE_MAX_REGIONS)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((regions[i].start | regions[i].len | regions[i].offset) & (UF_HUGE_SIZE - 1))
			return -EINVAL;
	for (i = 0; opts && i < opts->nremoved && opts->removed; i++)
		if ((opts->removed[i].start | opts->removed[i].len) & (UF_HUGE_SIZE - 1))
			return -EINVAL;
	return serve_uffd(obj, uffd, regions, n, opts, true);
}

/* struct uf_serve_opts before @tenant (UFAULT_0.4 to 0.8) */
struct serve_opts_0_4 {
	const struct uf_serve_range *removed;
	size_t nremoved;
	void (*on_remove)(void *arg, uint64_t start, uint64_t len);
	void *arg;
};

static const struct uf_serve_opts *opts_0_4(const struct serve_opts_0_4 *old,
					    struct uf_serve_opts *o)
{
	if (!old)
		return NULL;
	*o = (struct uf_serve_opts){ .removed = old->removed, .nremoved = old->nremoved,
				     .on_remove = old->on_remove, .arg = old->arg };
	return o;
}

UF_EXPORT int uf_object_serve_uffd_opts_0_4(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct serve_opts_0_4 *opts);
UF_EXPORT int uf_object_serve_uffd_opts_0_4(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct serve_opts_0_4 *opts)
{
	struct uf_serve_opts o;

	return uf_object_serve_uffd_opts_0_9(obj, uffd, regions, n, opts_0_4(opts, &o));
}

UF_EXPORT int uf_object_serve_uffd_huge_0_7(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct serve_opts_0_4 *opts, size_t page_size);
UF_EXPORT int uf_object_serve_uffd_huge_0_7(struct uf_object *obj, int uffd,
					    const struct uf_serve_region *regions, unsigned int n,
					    const struct serve_opts_0_4 *opts, size_t page_size)
{
	struct uf_serve_opts o;

	return uf_object_serve_uffd_huge_0_9(obj, uffd, regions, n, opts_0_4(opts, &o),
					     page_size);
}
