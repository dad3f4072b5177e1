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
 * process).  A page the fault fills is copied over from the fill's own
 * buffer as it enters the cache (struct uf_fill_sink): one store read,
 * one copy into the cache, one into the process.  A page the cache holds
 * already is read from the memfd into a bounce buffer first.  Not from
 * cache_map: the copy's source read is a kernel-mode fault there, which
 * this kernel refuses in a registered range (EFAULT).  Nor from an
 * unregistered shared mapping of the memfd: measured slower on this VM
 * (each page newly mapped there costs more than the read it saves).  Pages a
 * sequential stream has in the cache are copied on with it in one call,
 * as far as the readahead window reaches: a restore reading its memory in
 * order takes one fault per window, not one per page, and once its
 * stream is established the mm's worker copies the next windows in
 * while it touches the one it has (running ahead, below).  A fault that is
 * no stream copies its page alone: every page copied is the other
 * process's memory for good.
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
 * Working sets (workingset.c).  A process recorded gets the faulting
 * page alone, noted once copied; a process served with a working set gets
 * a thread that copies the set into it ahead of its faults (below).
 *
 * Locking: as->vma_lock (shared) -> obj->invalidate_lock (shared, which
 * keeps the pages copied from present: reclaim and punch take it
 * exclusive) -> the engine's copy_lock (uffd.c).  The fill runs with the
 * invalidate lock alone: a store read never holds up the table.
 */
#define _GNU_SOURCE
#include "as/as.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Sequential streams per region whose next page is remembered. */
#define SERVE_STREAMS	4
/* Attempts to copy a page that reclaim keeps evicting between the fill
 * and the copy, before the access gets SIGBUS. */
#define SERVE_TRIES	16
/* How long a fault waits for room in a full cache (serve_fill()). */
#define SERVE_ROOM_TRIES	1000
#define SERVE_ROOM_WAIT_US	2000
/* Huge pages a stream's fault in hugetlbfs memory copies past its own. */
#define SERVE_HUGE_AHEAD	2

struct serve_region {
	int refs;			/* VMAs sharing it (splits, forks): atomic */
	uint64_t first, npages;		/* its object pages */
	/* obj->served, under obj->page_lock, with a reference to @obj
	 * (regions_link: truncate and punch leave these pages alone) */
	struct uf_object *obj;
	struct uf_served_range pin;	/* on obj->served */
	unsigned long *removed;		/* a bit per page (atomic ops) */
	uint64_t next[SERVE_STREAMS];	/* where recent runs ended (atomic) */
	unsigned int clock;		/* the next slot of @next (atomic) */
	/* the caller's report of a removal (struct uf_serve_opts) */
	void (*on_remove)(void *arg, uint64_t start, uint64_t len);
	void *arg;
	uint64_t rec;			/* the process's record (uf_ws_serve_claim) */
	struct uf_ws_set *set;		/* the working set pushed into it, or NULL */
	/* running ahead of a sequential stream (readahead.c; below): its
	 * owner is the process of the stream (a region may be a fork
	 * child's too) */
	struct uf_runahead ahead;
	bool huge;			/* hugetlbfs memory: 2 MiB pages (below) */
};

static bool region_removed(struct serve_region *r, uint64_t pg)
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
static bool region_stream(struct serve_region *r, uint64_t pg)
{
	unsigned int i;

	for (i = 0; i < SERVE_STREAMS; i++)
		if (__atomic_load_n(&r->next[i], __ATOMIC_RELAXED) == pg)
			return true;
	return false;
}

static void region_stream_note(struct serve_region *r, uint64_t from, uint64_t to)
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

/*
 * Copy object pages [pg, pg + n), present in the cache, into the process
 * at @addr, read from the memfd into a bounce buffer.  Return as
 * uf_uffd_copy_mapped().
 * Locking: obj->invalidate_lock held shared (no page of the run leaves
 * the cache meanwhile).
 */
static int cache_copy(struct uf_object *obj, struct uf_uffd *u, unsigned long addr, uint64_t pg,
		      size_t n, unsigned int mode, size_t *copied)
{
	size_t len = n << PAGE_SHIFT;
	struct uf_bounce *bounce;
	char *buf;
	int ret;

	bounce = uf_bounce_get(len, (void **)&buf);
	if (!bounce)
		return -ENOMEM;
	if (pread(obj->memfd, buf, len, (off_t)(pg << PAGE_SHIFT)) != (ssize_t)len)
		ret = -EIO;
	else
		ret = uf_uffd_copy_mapped(u, addr, buf, len, mode, copied);
	uf_bounce_put(bounce);
	return ret;
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

static void region_put(struct serve_region *r)
{
	if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		region_unlink(r);
		uf_ws_set_put(r->set);
		uf_runahead_destroy(&r->ahead);
		free(r->removed);
		free(r);
	}
}

static void serve_close(struct uf_vma *vma)
{
	region_put(vma->private_data);
}

/*
 * Put the page at @addr (object page @pg) into the other process: the
 * zero page where the range was removed, else the cache's page and, up to
 * @max pages in all, the present pages after it; a stream at @from goes
 * on after them.  The VMA's table lock is held across the test and the
 * copy (see the top of the file).
 * Return 0 (done, or the retry meets what is there now), -ENOENT (the
 * cache page went meanwhile: fill again), or -errno; *@endp: where the
 * run copied from @pg ends, when one was.
 * Locking: takes as->vma_lock shared, then obj->invalidate_lock shared.
 */
static int serve_install(struct uf_vma *vma, struct serve_region *r, unsigned long addr,
			 uint64_t pg, bool write, size_t max, uint64_t from, uint64_t *endp)
{
	static const char zeros[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));
	struct uf_object *obj = vma->obj;
	struct uf_uffd *u = vma->as->uffd;
	size_t n, copied;
	int ret;

	for (;;) {
		pthread_rwlock_rdlock(vma->as->vma_lock);
		if (__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || addr < vma->start ||
		    addr >= vma->end) {
			pthread_rwlock_unlock(vma->as->vma_lock);
			return 0;
		}
		if (region_removed(r, pg)) {
			/* a write would copy the zero page at once: a page */
			ret = write ? uf_uffd_copy_mapped(u, addr, zeros, PAGE_SIZE,
							  UF_UFFD_DONTWAKE, NULL)
				    : uf_uffd_zeropage_mapped(u, addr, PAGE_SIZE, UF_UFFD_DONTWAKE);
			pthread_rwlock_unlock(vma->as->vma_lock);
			if (ret == -EAGAIN) {
				uf_uffd_settle(u);
				continue;
			}
			*endp = pg + 1;
			break;
		}
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pg)) {
			pthread_rwlock_unlock(&obj->invalidate_lock);
			pthread_rwlock_unlock(vma->as->vma_lock);
			return -ENOENT;
		}
		if (max > (vma->end - addr) >> PAGE_SHIFT)
			max = (vma->end - addr) >> PAGE_SHIFT;
		for (n = 1; n < max; n++) {
			uint64_t q = pg + n;

			if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q) || region_removed(r, q) ||
			    __uf_vma_pgoff(vma, addr + (n << PAGE_SHIFT)) != q)
				break;
		}
		copied = 0;
		ret = cache_copy(obj, u, addr, pg, n, UF_UFFD_DONTWAKE, &copied);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		pthread_rwlock_unlock(vma->as->vma_lock);
		if (ret == -EAGAIN && !copied) {
			uf_uffd_settle(u);	/* an event first */
			continue;
		}
		if (copied || !ret)
			*endp = pg + (copied ? copied >> PAGE_SHIFT : n);
		/* a stream goes on after its run, however short (a background
		 * window may still be coming in) */
		if (max > 1)
			region_stream_note(r, from, pg + (copied ? copied >> PAGE_SHIFT : n));
		break;
	}
	/*
	 * EEXIST: the page is there (another thread's fault, or a run
	 * copied it); ENOENT, ESRCH: the process changed its layout, or is
	 * gone; EAGAIN after a part: the pages left fault on their own.
	 */
	if (ret == -EEXIST || ret == -ENOENT || ret == -ESRCH || ret == -EAGAIN)
		ret = 0;
	return ret;
}

/*
 * A fault's fill, copied into the process as it is inserted into the
 * cache (struct uf_fill_sink): from the fill's own buffer, so a cold
 * page costs the store read and two copies, none read back from the
 * memfd.  @end: where the run of pages copied from @pg ends (@pg while
 * the faulting page is not in).
 */
struct serve_sink {
	struct uf_fill_sink sink;
	struct uf_vma *vma;
	struct serve_region *r;
	uint64_t pg, end;
};

/*
 * ->fn of struct serve_sink: copy the pages just inserted at @q into the
 * process where the VMA shows them, past the balloon's removals, never
 * over a page it has (EEXIST).  Best effort: what this leaves out, the
 * fault copies from the cache (serve_install).
 * Locking: obj->invalidate_lock held shared; as->vma_lock only tried
 * (it comes before the invalidate lock, and is held exclusive only while
 * the table follows an event).
 */
static void serve_sink_fn(struct uf_fill_sink *sink, uint64_t q, const char *buf, size_t n)
{
	struct serve_sink *k = (struct serve_sink *)sink;
	struct uf_vma *vma = k->vma;
	struct uf_as *as = vma->as;
	uint64_t a, b, e, vend;
	int ret = 0;

	if (pthread_rwlock_tryrdlock(as->vma_lock))
		return;
	vend = vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT);
	a = q > vma->pgoff ? q : vma->pgoff;
	b = q + n < vend ? q + n : vend;
	if (__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || vma->nl_pgoff)
		a = b;
	while (a < b && !ret) {
		size_t copied = 0;

		if (region_removed(k->r, a)) {
			a++;
			continue;
		}
		for (e = a + 1; e < b && !region_removed(k->r, e); e++)
			;
		ret = uf_uffd_copy_mapped(as->uffd, vma->start + ((a - vma->pgoff) << PAGE_SHIFT),
					  buf + ((a - q) << PAGE_SHIFT), (size_t)(e - a) << PAGE_SHIFT,
					  UF_UFFD_DONTWAKE, &copied);
		if (k->pg >= a && k->pg < a + (copied >> PAGE_SHIFT))
			k->end = a + (copied >> PAGE_SHIFT);
		else if (k->end > k->pg && k->end == a)
			k->end += copied >> PAGE_SHIFT;
		a += copied >> PAGE_SHIFT;
		if (ret == -EEXIST) {
			a++;		/* the process has that page */
			ret = 0;
		}
	}
	pthread_rwlock_unlock(as->vma_lock);
}

/*
 * The window of a fault on @pg from the working set pushed into the
 * process: the rest of the page's recorded run (the push would copy it
 * so), if the set holds it.
 */
static bool serve_set_window(struct serve_region *r, struct uf_vma *vma, uint64_t pg,
			     struct uf_ra_req *ra)
{
	const struct uf_ws_run *run = r->set ? uf_ws_set_find(r->set, pg) : NULL;
	uint64_t n;

	if (!run)
		return false;
	n = run->start + run->len - pg;
	*ra = (struct uf_ra_req){ .first = pg, .n = n < vma->mm->ra_max ? (size_t)n :
						     vma->mm->ra_max, .idx = -1 };
	if (!ra->n)
		ra->n = 1;
	return true;
}

/*
 * Running ahead of a sequential stream: readahead.c's run-ahead decides
 * the windows (ra_max pages each, the first page of each a marker left to
 * the process's fault) and runs the worker; the sink below delivers them.
 * A fault that overtook the worker copies the rest of that window itself,
 * as far as the cache has it, and the worker stops its window at the
 * first page the process has: a window costs a fault, or two, however
 * the worker is scheduled.
 *
 * The sink's copies are the push's (__push_vma): under as->vma_lock
 * shared and obj->invalidate_lock shared, past the balloon's removals,
 * never over a page the process has (EEXIST: skipped), stopped for good
 * when the process is gone (ESRCH).  It fills as a fault does, making
 * room first (the cache stays inside its budget), and copies the pages
 * it fills on from the fill's buffer (ahead_fill_fn); the memfd is read
 * back only for those the cache had.  Each sink holds the address space
 * (uf_uffd_guest_hold), the object and the region.
 */
struct serve_ahead_work {
	struct uf_ra_sink sink;		/* readahead.c's: first */
	struct uf_as *as;		/* held */
	struct uf_object *obj;		/* referenced */
	struct serve_region *r;		/* referenced */
	/* the window being copied: a bit per page the process has from it;
	 * pages from @cut on are left to the process's faults */
	uint64_t first, n, cut;
	unsigned long *done;
};

static bool ahead_done(const struct serve_ahead_work *w, uint64_t q)
{
	return w->done[(q - w->first) / BITS_PER_LONG] & (1UL << ((q - w->first) % BITS_PER_LONG));
}

static void ahead_set_done(struct serve_ahead_work *w, uint64_t q, uint64_t n)
{
	for (; n; n--, q++)
		w->done[(q - w->first) / BITS_PER_LONG] |= 1UL << ((q - w->first) % BITS_PER_LONG);
}

/*
 * Copy object pages [a, b) of @v into the process from @buf (page @a's
 * bytes first), where @ok says (present in the cache, when the pages are
 * the cache's), past the removals and the pages it has.  Return 0,
 * -EAGAIN, -ESRCH, -ENOENT (the layout changed) or -EIO.
 * Locking: as->vma_lock held shared; obj->invalidate_lock held shared.
 */
static int __ahead_copy_buf(struct serve_ahead_work *w, struct uf_vma *v, uint64_t a,
			    uint64_t b, const char *buf, bool cache)
{
	struct uf_object *obj = w->obj;
	uint64_t q = a, e;
	int ret = 0;

#define AHEAD_OK(x)	((x) < w->cut && !ahead_done(w, (x)) && !region_removed(w->r, (x)) &&	\
			 (!cache || uf_pagebits_test(&obj->pages, UF_PG_PRESENT, (x))))
	while (q < b && !ret) {
		size_t copied = 0;

		if (!AHEAD_OK(q)) {
			q++;
			continue;
		}
		for (e = q + 1; e < b && AHEAD_OK(e); e++)
			;
		ret = uf_uffd_copy_mapped(w->as->uffd, v->start + ((q - v->pgoff) << PAGE_SHIFT),
					  buf + ((q - a) << PAGE_SHIFT), (size_t)(e - q) << PAGE_SHIFT,
					  0, &copied);
		ahead_set_done(w, q, copied >> PAGE_SHIFT);
		q += copied >> PAGE_SHIFT;
		if (ret == -EEXIST) {
			/* the process has that page: its fault went ahead of
			 * this window and copies the rest (see above) */
			if (q < w->cut)
				w->cut = q;
			ret = 0;
		}
	}
#undef AHEAD_OK
	return ret;
}

/*
 * Copy the pages of [a, b) of @v that the cache holds and the fill did
 * not copy over, read from the memfd a run at a time.  Return as
 * __ahead_copy_buf().
 * Locking: as->vma_lock held shared; takes obj->invalidate_lock shared.
 */
static int __ahead_copy(struct serve_ahead_work *w, struct uf_vma *v, uint64_t a, uint64_t b)
{
	struct uf_object *obj = w->obj;
	struct uf_bounce *bounce = NULL;
	uint64_t q = a, e;
	char *buf = NULL;
	int ret = 0;

	pthread_rwlock_rdlock(&obj->invalidate_lock);
	while (q < b && q < w->cut && !ret) {
		if (ahead_done(w, q) || region_removed(w->r, q) ||
		    !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q)) {
			q++;
			continue;
		}
		for (e = q + 1; e < b && !ahead_done(w, e) && !region_removed(w->r, e) &&
				uf_pagebits_test(&obj->pages, UF_PG_PRESENT, e); e++)
			;
		if (!bounce) {
			bounce = uf_bounce_get((size_t)(b - a) << PAGE_SHIFT, (void **)&buf);
			if (!bounce) {
				ret = -ENOMEM;
				break;
			}
		}
		if (pread(obj->memfd, buf, (size_t)(e - q) << PAGE_SHIFT, (off_t)(q << PAGE_SHIFT)) !=
		    (ssize_t)((e - q) << PAGE_SHIFT))
			ret = -EIO;
		else
			ret = __ahead_copy_buf(w, v, q, e, buf, true);
		q = e;
	}
	pthread_rwlock_unlock(&obj->invalidate_lock);
	if (bounce)
		uf_bounce_put(bounce);
	return ret == -ENOENT ? 0 : ret;	/* (ENOENT: the layout changed) */
}

/* The VMAs of @w's process that show [first, first + n) of its region
 * (but the marker), each overlap in [*a, *b); false past the last.
 * Locking: as->vma_lock held. */
static bool ahead_next_vma(struct serve_ahead_work *w, size_t *i, uint64_t first, uint64_t n,
			   struct uf_vma **vp, uint64_t *a, uint64_t *b)
{
	struct uf_as *as = w->as;

	for (; *i < as->vt.n; (*i)++) {
		struct uf_vma *v = as->vt.vmas[*i];

		*a = v->pgoff;
		*b = v->pgoff + ((v->end - v->start) >> PAGE_SHIFT);
		if (v->private_data != w->r || v->nl_pgoff ||
		    __atomic_load_n(&v->dead, __ATOMIC_ACQUIRE))
			continue;
		*a = *a > w->first + 1 ? *a : w->first + 1;
		*a = *a > first ? *a : first;
		*b = *b < first + n ? *b : first + n;
		*b = *b < w->first + w->n ? *b : w->first + w->n;
		if (*a < *b) {
			*vp = v;
			(*i)++;
			return true;
		}
	}
	return false;
}

/*
 * struct uf_fill_sink of the worker's fill: the pages just inserted into
 * the cache go on into the process from the fill's buffer, as a fault's
 * do (serve_sink_fn): best effort, what this leaves out the copy from
 * the cache does after the fill.
 * Locking: obj->invalidate_lock held shared; as->vma_lock only tried.
 */
struct ahead_fill {
	struct uf_fill_sink sink;
	struct serve_ahead_work *w;
	bool gone;
};

static void ahead_fill_fn(struct uf_fill_sink *sink, uint64_t q, const char *buf, size_t n)
{
	struct ahead_fill *k = (struct ahead_fill *)sink;
	struct serve_ahead_work *w = k->w;
	struct uf_vma *v;
	uint64_t a, b;
	size_t i = 0;
	int ret = 0;

	if (k->gone || pthread_rwlock_tryrdlock(w->as->vma_lock))
		return;
	while (!ret && ahead_next_vma(w, &i, q, n, &v, &a, &b))
		ret = __ahead_copy_buf(w, v, a, b, buf + ((a - q) << PAGE_SHIFT), false);
	pthread_rwlock_unlock(w->as->vma_lock);
	if (ret == -ESRCH)
		k->gone = true;
}

/*
 * ->window of the sink: fill object pages [first, first + n) of @w's
 * region, copying them on into the VMAs of the region that show them as
 * they enter the cache; then copy those the cache had, or the fill could
 * not copy.  All but the first page (the marker).  Return 0, or -ESRCH
 * when the process is gone.
 * Locking: none held.
 */
static int ahead_window(struct uf_ra_sink *rs, uint64_t first, uint64_t n)
{
	struct serve_ahead_work *w = (struct serve_ahead_work *)rs;
	struct ahead_fill sink = { .sink = { .obj = w->obj, .fn = ahead_fill_fn }, .w = w };
	struct uf_object *obj = w->obj;
	struct uf_mm *mm = obj->mm;
	struct uf_as *as = w->as;
	size_t filled = 0, i;
	int ret = 0, tries;
	struct uf_vma *v;
	uint64_t q, a, b;

	w->first = first;
	w->n = n;
	w->cut = first + n;
	uf_huge_busy(mm);		/* a restore: the collapses wait */
	memset(w->done, 0, DIV_ROUND_UP(n, BITS_PER_LONG) * sizeof(unsigned long));
	for (q = first; q < first + n; q++)
		if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q) && !region_removed(w->r, q))
			break;
	if (q < first + n) {
		uf_reclaim(mm, (size_t)n);	/* room, as a fault makes it */
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		uf_fill_sink = &sink.sink;
		uf_object_fill(obj, first, (size_t)n, UF_FILL_ANY, &filled, NULL, NULL);
		uf_fill_sink = NULL;
		pthread_rwlock_unlock(&obj->invalidate_lock);
		uf_add(&mm->stats.readahead_pages, filled);
		if (sink.gone)
			return -ESRCH;
	}
	for (tries = 0; tries < SERVE_TRIES && n > 1; tries++) {
		pthread_rwlock_rdlock(as->vma_lock);
		for (i = 0, ret = 0; !ret && ahead_next_vma(w, &i, first, n, &v, &a, &b);)
			ret = __ahead_copy(w, v, a, b);
		pthread_rwlock_unlock(as->vma_lock);
		if (ret != -EAGAIN)
			break;
		uf_uffd_settle(as->uffd);	/* an event first (what is done stays) */
	}
	return ret == -ESRCH ? ret : 0;
}

/* ->release of the sink.  No lock held. */
static void ahead_release(struct uf_ra_sink *rs)
{
	struct serve_ahead_work *w = (struct serve_ahead_work *)rs;

	uf_as_unhold(w->as);
	uf_object_put(w->obj);
	region_put(w->r);
	free(w->done);
	free(w);
}

static const struct uf_ra_sink_ops ahead_sink_ops = {
	.window		= ahead_window,
	.release	= ahead_release,
};

/*
 * Hugetlbfs memory (uf_object_serve_uffd_huge).  A VMM's guest memory
 * mapped from hugetlbfs takes UFFDIO_COPY in whole huge pages only (a
 * 2 MiB-aligned destination and length), each a huge page of the pool
 * for that process, and no UFFDIO_ZEROPAGE.  So a fault there makes the
 * object's 512 pages of its huge page present in the cache, and the huge
 * page goes on into the process from the fill's own buffer as it enters
 * the cache (huge_fill_fn: one store read, one copy into the cache, one
 * into the process, nothing done per 4 KiB page); one the cache had is
 * read from the memfd first.  A balloon's removal (2 MiB granular in
 * hugetlbfs) is answered with 2 MiB of zeros.  A stream is run ahead of
 * as a 4 KiB one is (readahead.c), in windows of whole huge pages
 * (huge_win(): the first huge page of each is its marker) delivered by
 * the sink below a huge page at a time; with no worker, a stream's fault
 * copies SERVE_HUGE_AHEAD huge pages more after its own, which is woken
 * first.  Where the process can get no huge page (ENOMEM: the pool is
 * empty) or the store fails, the faulting huge page gets the poison
 * marker: the access takes SIGBUS, never zeros, never a hang (the worker
 * only stops).  Working sets are not recorded or pushed here (4 KiB runs).
 */
#define SERVE_HUGE_WIN_MIN	4	/* huge pages in a window, at least */
#define SERVE_HUGE_WIN_MAX	64	/* and at most (a bit each) */

static char huge_zeros[UF_HUGE_SIZE] __attribute__((aligned(PAGE_SIZE)));	/* never written */

static bool huge_present(struct uf_object *obj, uint64_t pg)
{
	uint64_t q;

	for (q = pg; q < pg + UF_HUGE_PAGES; q++)
		if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q))
			return false;
	return true;
}

/* Pages in a run-ahead window of huge pages: ra_max rounded up to whole
 * huge pages, a marker and SERVE_HUGE_WIN_MIN - 1 more at least. */
static size_t huge_win(const struct uf_mm *mm)
{
	size_t n = DIV_ROUND_UP(mm->ra_max, UF_HUGE_PAGES);

	if (n < SERVE_HUGE_WIN_MIN)
		n = SERVE_HUGE_WIN_MIN;
	if (n > SERVE_HUGE_WIN_MAX)
		n = SERVE_HUGE_WIN_MAX;
	return n * UF_HUGE_PAGES;
}

/*
 * The VMA of @as that shows huge page @pg of @r whole, at *@addr; NULL
 * when none does.
 * Locking: as->vma_lock held.
 */
static struct uf_vma *__huge_vma(struct uf_as *as, struct serve_region *r, uint64_t pg,
				 unsigned long *addr)
{
	size_t i;

	for (i = 0; i < as->vt.n; i++) {
		struct uf_vma *v = as->vt.vmas[i];
		uint64_t vend = v->pgoff + ((v->end - v->start) >> PAGE_SHIFT);

		if (v->private_data != r || v->nl_pgoff || pg < v->pgoff ||
		    pg + UF_HUGE_PAGES > vend || __atomic_load_n(&v->dead, __ATOMIC_ACQUIRE))
			continue;
		*addr = v->start + ((pg - v->pgoff) << PAGE_SHIFT);
		if (!(*addr & (UF_HUGE_SIZE - 1)))
			return v;
	}
	return NULL;
}

/*
 * struct uf_fill_sink of a fill of huge pages: each whole huge page just
 * inserted into the cache goes on into the process from the fill's
 * buffer (woken), past the removals.  @done: a bit per huge page from
 * @base on that the process has now (copied; for the worker also EEXIST:
 * there already).  @err: the worker stops (ESRCH: the process is gone;
 * ENOMEM: its pool is empty).  Best effort: what this leaves out is
 * copied from the cache after the fill.
 * Locking: obj->invalidate_lock held shared; as->vma_lock only tried
 * (as serve_sink_fn).
 */
struct huge_fill {
	struct uf_fill_sink sink;
	struct uf_as *as;
	struct serve_region *r;
	uint64_t base, done;
	bool worker;
	int err;
};

static void huge_fill_fn(struct uf_fill_sink *sink, uint64_t q, const char *buf, size_t n)
{
	struct huge_fill *k = (struct huge_fill *)sink;
	uint64_t h = (q + UF_HUGE_PAGES - 1) & ~(uint64_t)(UF_HUGE_PAGES - 1), bit, i;
	unsigned long addr;
	int ret;

	if (k->err || pthread_rwlock_tryrdlock(k->as->vma_lock))
		return;
	for (; h + UF_HUGE_PAGES <= q + n && !k->err; h += UF_HUGE_PAGES) {
		i = (h - k->base) / UF_HUGE_PAGES;
		if (h < k->base || i >= 64 || region_removed(k->r, h))
			continue;
		bit = 1ULL << i;
		if ((k->done & bit) || !__huge_vma(k->as, k->r, h, &addr))
			continue;
		ret = uf_uffd_copy_mapped(k->as->uffd, addr, buf + ((h - q) << PAGE_SHIFT),
					  UF_HUGE_SIZE, 0, NULL);
		if (!ret || (ret == -EEXIST && k->worker))
			k->done |= bit;
		else if (ret == -ESRCH || (ret == -ENOMEM && k->worker))
			k->err = ret;
	}
	pthread_rwlock_unlock(k->as->vma_lock);
}

/*
 * Copy huge page @pg of the object (or zeros, where it was removed) into
 * the process at @addr of @vma, reading it from the memfd into *@buf
 * (*@bounce: got on first use).  Return 0 (copied), 1 (a page of it is
 * not in the cache), -EEXIST (there already), -EAGAIN (an event first),
 * or -errno.  With @probe, a copy that fails EEXIST is tried with the
 * poison marker: this kernel reports a pool with no huge page as EEXIST
 * where the page table is there already, and the marker goes only where
 * no page is (then -ENOMEM, the marker placed: the access takes SIGBUS,
 * never a fault for ever).
 * Locking: as->vma_lock held shared; takes obj->invalidate_lock shared.
 */
static int __huge_copy(struct uf_vma *vma, struct serve_region *r, unsigned long addr, uint64_t pg,
		       bool probe, struct uf_bounce **bounce, char **buf)
{
	struct uf_object *obj = vma->obj;
	struct uf_uffd *u = vma->as->uffd;
	int ret;

	if (region_removed(r, pg)) {
		ret = uf_uffd_copy_mapped(u, addr, huge_zeros, UF_HUGE_SIZE, 0, NULL);
	} else {
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		if (!huge_present(obj, pg))
			ret = 1;
		else if (!*bounce && !(*bounce = uf_bounce_get(UF_HUGE_SIZE, (void **)buf)))
			ret = -ENOMEM;
		else if (pread(obj->memfd, *buf, UF_HUGE_SIZE, (off_t)(pg << PAGE_SHIFT)) !=
			 (ssize_t)UF_HUGE_SIZE)
			ret = -EIO;
		else
			ret = uf_uffd_copy_mapped(u, addr, *buf, UF_HUGE_SIZE, 0, NULL);
		pthread_rwlock_unlock(&obj->invalidate_lock);
	}
	if (ret == -EEXIST && probe && !uf_uffd_poison_mapped(u, addr, UF_HUGE_SIZE))
		ret = -ENOMEM;
	return ret;
}

/*
 * Copy huge page @pg (as __huge_copy) into the process at @addr of the
 * faulting @vma.  Return 0 (copied, or there already, or the process
 * changed or went), 1 (a page of it left the cache: fill again), -ENOMEM
 * (no huge page for it), or -errno.
 * Locking: takes as->vma_lock shared, then obj->invalidate_lock shared.
 */
static int huge_copy(struct uf_vma *vma, struct serve_region *r, unsigned long addr, uint64_t pg,
		     bool probe)
{
	struct uf_bounce *bounce = NULL;
	char *buf = NULL;
	int ret;

	for (;;) {
		pthread_rwlock_rdlock(vma->as->vma_lock);
		if (__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || addr < vma->start ||
		    addr + UF_HUGE_SIZE > vma->end)
			ret = 0;
		else
			ret = __huge_copy(vma, r, addr, pg, probe, &bounce, &buf);
		pthread_rwlock_unlock(vma->as->vma_lock);
		if (ret != -EAGAIN)
			break;
		uf_uffd_settle(vma->as->uffd);	/* an event first */
	}
	uf_bounce_put(bounce);
	/* EEXIST: there (another thread's fault); ENOENT, ESRCH: the process
	 * changed its layout, or is gone */
	return ret == -EEXIST || ret == -ENOENT || ret == -ESRCH ? 0 : ret;
}

/*
 * Make huge page @pg present in the cache (making room as a fault does),
 * copied into the process at @addr from the fill's buffer, or else from
 * the cache (@probe: as huge_copy()).  Return as huge_copy(), but never
 * 1; *@major: read from the store.
 * Locking: none held.
 */
static int huge_serve(struct uf_vma *vma, struct serve_region *r, unsigned long addr, uint64_t pg,
		      bool probe, bool *major, size_t *filled)
{
	struct uf_object *obj = vma->obj;
	struct huge_fill hf = { .sink = { .obj = obj, .fn = huge_fill_fn }, .as = vma->as, .r = r,
				.base = pg };
	int ret = 1, tries;

	for (tries = 0; tries < SERVE_TRIES && ret == 1; tries++) {
		if (!region_removed(r, pg) && !huge_present(obj, pg)) {
			size_t n = 0;
			bool maj = false;

			uf_reclaim(vma->mm, UF_HUGE_PAGES);
			pthread_rwlock_rdlock(&obj->invalidate_lock);
			uf_fill_sink = &hf.sink;
			ret = uf_object_fill(obj, pg, UF_HUGE_PAGES, UF_FILL_ALL, &n, &maj, vma);
			uf_fill_sink = NULL;
			pthread_rwlock_unlock(&obj->invalidate_lock);
			*filled += n;
			*major = *major || n;
			if (ret)
				return ret;
			if (hf.done & 1)
				return 0;	/* straight from the fill */
		}
		ret = huge_copy(vma, r, addr, pg, probe);
	}
	return ret == 1 ? -EIO : ret;
}

/*
 * Copy huge page @pg, present in the cache, into whichever VMA of @w's
 * process shows it.  Return 0, or -ESRCH (the process is gone), -ENOMEM
 * (its pool is empty).
 * Locking: takes as->vma_lock shared, then obj->invalidate_lock shared.
 */
static int huge_copy_ahead(struct serve_ahead_work *w, uint64_t pg)
{
	struct uf_bounce *bounce = NULL;
	unsigned long addr;
	struct uf_vma *v;
	char *buf = NULL;
	int ret = 0, tries;

	for (tries = 0; tries < SERVE_TRIES; tries++) {
		pthread_rwlock_rdlock(w->as->vma_lock);
		v = __huge_vma(w->as, w->r, pg, &addr);
		ret = v ? __huge_copy(v, w->r, addr, pg, false, &bounce, &buf) : 0;
		pthread_rwlock_unlock(w->as->vma_lock);
		if (ret != -EAGAIN)
			break;
		uf_uffd_settle(w->as->uffd);	/* an event first */
	}
	uf_bounce_put(bounce);
	return ret == -ESRCH || ret == -ENOMEM ? ret : 0;
}

/*
 * ->window of the sink of a stream of huge pages: the huge pages of
 * [first, first + n) but the first (the marker), one at a time, each
 * filled (room made first) and copied on from the fill's buffer, or
 * copied from the cache where it had them; a removed one is left to its
 * fault (zeros), one the process has is skipped (EEXIST).  Return 0, or
 * -ESRCH when the process is gone.
 * Locking: none held.
 */
static int huge_window(struct uf_ra_sink *rs, uint64_t first, uint64_t n)
{
	struct serve_ahead_work *w = (struct serve_ahead_work *)rs;
	struct uf_object *obj = w->obj;
	struct uf_mm *mm = obj->mm;
	struct huge_fill hf = { .sink = { .obj = obj, .fn = huge_fill_fn }, .as = w->as,
				.r = w->r, .base = first, .worker = true };
	size_t filled = 0;
	uint64_t h;
	int ret = 0;

	uf_huge_busy(mm);		/* a restore: the collapses wait */
	for (h = first + UF_HUGE_PAGES; h < first + n && !ret && !hf.err; h += UF_HUGE_PAGES) {
		if (region_removed(w->r, h))
			continue;
		if (!huge_present(obj, h)) {
			uf_reclaim(mm, UF_HUGE_PAGES);	/* room, as a fault makes it */
			pthread_rwlock_rdlock(&obj->invalidate_lock);
			uf_fill_sink = &hf.sink;
			uf_object_fill(obj, h, UF_HUGE_PAGES, UF_FILL_ANY, &filled, NULL, NULL);
			uf_fill_sink = NULL;
			pthread_rwlock_unlock(&obj->invalidate_lock);
		}
		if (!hf.err && !(hf.done & (1ULL << ((h - first) / UF_HUGE_PAGES))))
			ret = huge_copy_ahead(w, h);
	}
	uf_add(&mm->stats.readahead_pages, filled);
	return ret == -ESRCH || hf.err == -ESRCH ? -ESRCH : 0;
}

static const struct uf_ra_sink_ops huge_sink_ops = {
	.window		= huge_window,
	.release	= ahead_release,
};

/*
 * After a fault of a stream: uf_runahead_kick() (@start, @claimed: as
 * there), then a sink for the worker if it is to be set going.
 * Locking: none held (a handler, which holds the address space);
 * takes the run-ahead's lock alone.
 */
static void ahead_kick(struct uf_vma *vma, struct serve_region *r, uint64_t pg, uint64_t end,
		       bool start, bool claimed)
{
	struct uf_mm *mm = vma->mm;
	size_t win = r->huge ? huge_win(mm) : mm->ra_max ? mm->ra_max : 1;
	struct serve_ahead_work *w;

	if (!uf_runahead_kick(&r->ahead, vma->as, pg, end, win, start, claimed))
		return;
	w = malloc(sizeof(*w));
	if (w) {
		*w = (struct serve_ahead_work){ .sink = { .ops = r->huge ? &huge_sink_ops : &ahead_sink_ops, .mm = mm,
							  .owner = vma->as, .win = win },
						.as = vma->as, .obj = vma->obj, .r = r };
		w->done = calloc(DIV_ROUND_UP(win, BITS_PER_LONG), sizeof(unsigned long));
		if (!w->done) {
			free(w);
			w = NULL;
		}
	}
	if (w) {
		uf_uffd_guest_hold(vma->as->uffd);
		uf_object_get(vma->obj);
		__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
	}
	uf_runahead_start(&r->ahead, w ? &w->sink : NULL);
}

/*
 * Put the poison marker on the huge page at @addr: its access, retried,
 * takes SIGBUS.  Return 0 or -errno.
 * Locking: takes as->vma_lock shared.
 */
static int huge_poison(struct uf_vma *vma, unsigned long addr)
{
	struct uf_uffd *u = vma->as->uffd;
	int ret;

	for (;;) {
		pthread_rwlock_rdlock(vma->as->vma_lock);
		ret = __atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || addr < vma->start ||
		      addr + UF_HUGE_SIZE > vma->end ? 0 : uf_uffd_poison_mapped(u, addr, UF_HUGE_SIZE);
		pthread_rwlock_unlock(vma->as->vma_lock);
		if (ret != -EAGAIN)
			break;
		uf_uffd_settle(u);
	}
	if (!ret)
		uf_uffd_wake(u, addr, UF_HUGE_SIZE);
	return ret == -EEXIST ? 0 : ret;
}

/*
 * ->fault of a region in hugetlbfs memory (above): its huge page, then
 * the rest of a window it claimed at the run-ahead's end, or (no worker)
 * of a stream, the next SERVE_HUGE_AHEAD; then the run-ahead is kicked.
 */
static struct uf_page *serve_fault_huge(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct serve_region *r = vma->private_data;
	struct uf_mm *mm = vma->mm;
	unsigned long addr = fdata->address & ~(UF_HUGE_SIZE - 1);
	uint64_t pg = fdata->pgoff - (((fdata->address & PAGE_MASK) - addr) >> PAGE_SHIFT), hi;
	bool runahead = mm->worker && !vma->nl_pgoff, streamed = region_stream(r, pg);
	enum uf_ra_where where = UF_RA_NO;
	bool major = false;
	size_t filled = 0, n = 1, i;
	int ret = 0;

	if (runahead)
		where = uf_runahead_check(&r->ahead, vma->as, pg, huge_win(mm), &hi);
	if (where == UF_RA_NEXT)
		n = huge_win(mm) / UF_HUGE_PAGES;
	else if (!runahead && streamed)
		n = 1 + SERVE_HUGE_AHEAD;
	/* before the copies, which wake the process: its next fault may come
	 * before this one returns, and is to find the stream, and the
	 * worker under way on the window after it */
	region_stream_note(r, pg, pg + (uint64_t)n * UF_HUGE_PAGES);
	if (runahead && (where != UF_RA_NO || streamed))
		ahead_kick(vma, r, pg, pg + (uint64_t)n * UF_HUGE_PAGES, where == UF_RA_NO, false);
	for (i = 0; i < n && addr + ((unsigned long)i << UF_HUGE_SHIFT) < vma->end; i++) {
		ret = huge_serve(vma, r, addr + ((unsigned long)i << UF_HUGE_SHIFT),
				 pg + (uint64_t)i * UF_HUGE_PAGES, !i, i ? &(bool){ false } : &major,
				 &filled);
		if (ret)
			break;
	}
	if (filled > UF_HUGE_PAGES || (filled && !major)) {
		uint64_t ra = filled - (major ? UF_HUGE_PAGES : 0);

		uf_add(&vma->stats.readahead_pages, ra);
		uf_add(&mm->stats.readahead_pages, ra);
	}
	if (ret && !i) {
		/* the faulting page: SIGBUS, never zeros (fault.c's marker is
		 * a 4 KiB one, which hugetlbfs refuses: it only wakes) */
		huge_poison(vma, addr);
		fdata->type = ret == -ENOMEM || ret == -ENOBUFS ? UF_FAULT_OOM : UF_FAULT_SIGBUS;
		return NULL;
	}
	if (where == UF_RA_NEXT && i < n)	/* the rest of its claim was not copied */
		ahead_kick(vma, r, pg, pg + (uint64_t)i * UF_HUGE_PAGES, false, true);
	fdata->type = major ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
	return NULL;
}

/*
 * A fault's fill: @ra's pages, @pg among them, copied over as they enter
 * the cache (@sink).  Under a budget, room is made first (direct reclaim,
 * as for a fault on a mapping of the cache) and, when there is none, waited
 * for: the cache is then full of pages other faults are filling or copying
 * out, which leave within their copy's time.  SIGBUS is the store's alone:
 * its read errors, or dirty pages it refuses to take (uf_reclaim's -EIO).
 * Locking: none held; takes obj->invalidate_lock shared.
 */
static int serve_fill(struct uf_vma *vma, struct uf_ra_req *ra, uint64_t pg,
		      struct serve_sink *sink, size_t *filled, bool *major)
{
	struct uf_object *obj = vma->obj;
	int ret, tries;

	for (tries = 0;; tries++) {
		long freed = uf_reclaim(vma->mm, ra->n);

		pthread_rwlock_rdlock(&obj->invalidate_lock);
		uf_fill_sink = &sink->sink;
		ret = uf_object_fill(obj, ra->first, ra->n, pg, filled, major, vma);
		uf_fill_sink = NULL;
		pthread_rwlock_unlock(&obj->invalidate_lock);
		if (ret != -ENOBUFS || freed < 0 || tries == SERVE_ROOM_TRIES)
			return ret;
		usleep(SERVE_ROOM_WAIT_US);
	}
}

/* A fault answered with SIGBUS, counted by cause (struct uf_stats):
 * @ret is serve_fill()'s error when @fill_failed, else the copy's. */
static void serve_sigbus(struct uf_vma *vma, struct uf_fault_data *fdata, int ret,
			 bool fill_failed)
{
	enum uf_sigbus_cause why = UF_SIGBUS_OTHER;

	if (ret == -ENOBUFS)
		why = UF_SIGBUS_ROOM;
	else if (fill_failed && ret != -ERANGE)
		why = UF_SIGBUS_STORE;
	uf_count_sigbus_cause(vma->mm, vma, why);
	fdata->type = UF_FAULT_SIGBUS;
}

/* One fault of serve_fault(), as its steps see it. */
struct serve_fault_ctx {
	struct uf_vma *vma;
	struct serve_region *r;
	unsigned long addr;
	uint64_t pg, end;		/* the page; where its run copied ends */
	uint64_t hi;			/* UF_RA_IN: where the run-ahead's range ends */
	enum uf_ra_where ahead;		/* where the page stands to the run-ahead */
	bool write, rec, seq, major, fill_failed;
	size_t filled, max;
	struct serve_sink sink;
};

/* The pages a try copies at most from the faulting page, its fill's
 * window being @ra (@set: a run of the working set pushed). */
static size_t serve_max(const struct serve_fault_ctx *c, const struct uf_ra_req *ra, bool set)
{
	size_t ra_max = c->vma->mm->ra_max;

	if (set)
		return ra->n;		/* the rest of its run */
	if (c->seq)
		return ra->first + ra->n > c->pg + ra_max ? ra->first + ra->n - c->pg : ra_max;
	if (c->ahead == UF_RA_IN)	/* the rest of the range's window */
		return c->hi - c->pg < ra_max ? (size_t)(c->hi - c->pg) : ra_max;
	return 1;
}

/*
 * One try of serve_fault(): fill the page and its window unless the cache
 * has it, then copy it over.  Return 0 or -errno; *@again: the cache page
 * went meanwhile (-ENOENT), try again.
 * Locking: none held.
 */
static int serve_try(struct serve_fault_ctx *c, bool *again)
{
	struct uf_vma *vma = c->vma;
	struct serve_region *r = c->r;
	struct uf_object *obj = vma->obj;
	struct uf_ra_req ra = { .first = c->pg, .n = 1, .idx = -1 };
	bool cached, set = !c->rec && serve_set_window(r, vma, c->pg, &ra);
	int ret;

	*again = false;
	/* a removed page needs no fill (an unlocked look: a removal racing
	 * it is seen under the lock, below) */
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	cached = region_removed(r, c->pg) || uf_pagebits_test(&obj->pages, UF_PG_PRESENT, c->pg);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	if (!cached) {
		/* as for a mapping of the cache: only a miss reaches readahead
		 * (pages a background window brought in are no fault there,
		 * and must not end its stream here); a fault that overtook
		 * the worker reads the rest of the window itself (the holes of
		 * it the worker has not filled yet) */
		if (!c->rec && !set && c->ahead == UF_RA_IN)
			ra.n = c->hi - c->pg < vma->mm->ra_max ? (size_t)(c->hi - c->pg)
							       : vma->mm->ra_max;
		else if (!c->rec && !set && c->ahead != UF_RA_MARK)
			uf_readahead_window(vma, c->pg, &ra);
		ret = serve_fill(vma, &ra, c->pg, &c->sink, &c->filled, &c->major);
		uf_readahead_submit(vma, &ra);
		c->fill_failed = ret != 0;
		if (ret)
			return ret;
		c->seq = c->seq || (!set && c->ahead == UF_RA_NO && (ra.n > 1 || ra.bg_n));
	}
	c->max = serve_max(c, &ra, set);
	/* what the fill copied over already (a stream's run goes on from
	 * its end) */
	if (c->sink.end > c->pg) {
		uint64_t done = c->sink.end - c->pg;

		ret = 0;
		c->end = c->sink.end;
		if (done < c->max && !region_removed(r, c->sink.end))
			ret = serve_install(vma, r, c->addr + (done << PAGE_SHIFT), c->sink.end,
					    c->write, c->max - (size_t)done, c->pg, &c->end);
		if (ret == -ENOENT || (!ret && done >= c->max && c->max > 1))
			region_stream_note(r, c->pg, c->sink.end);
		return 0;	/* the faulting page is in: an error after it is the
				   next fault's */
	}
	ret = serve_install(vma, r, c->addr, c->pg, c->write, c->max, c->pg, &c->end);
	*again = ret == -ENOENT;
	return ret;
}

/* ->fault: make the page present in the cache, then copy it over. */
static struct uf_page *serve_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct serve_region *r = vma->private_data;
	uint64_t pg = fdata->pgoff;
	struct serve_fault_ctx c = {
		.vma = vma, .r = r, .addr = fdata->address & PAGE_MASK, .pg = pg, .end = pg,
		.ahead = UF_RA_NO, .write = fdata->flags & UF_FAULT_FLAG_WRITE, .max = 1,
		.sink = { .sink = { .obj = vma->obj, .fn = serve_sink_fn }, .vma = vma, .r = r,
			  .pg = pg, .end = pg },
	};
	bool streamed, again = true;
	int ret = 0, tries;

	uf_huge_busy(vma->mm);		/* a restore: the collapses wait */
	if (r->huge)
		return serve_fault_huge(vma, fdata);

	/* recorded: the page alone, so that each page the process touches
	 * is a fault of its own, in the order touched */
	c.rec = uf_ws_serve_recording(vma->obj, r->rec);
	/* a marker of a stream run ahead of: the page alone (the rest of
	 * its window is there, or on its way) */
	if (!c.rec && !r->set && vma->mm->worker && !vma->nl_pgoff)
		c.ahead = uf_runahead_check(&r->ahead, vma->as, pg,
					    vma->mm->ra_max ? vma->mm->ra_max : 1, &c.hi);
	streamed = !c.rec && c.ahead == UF_RA_NO && region_stream(r, pg);
	c.seq = streamed || c.ahead == UF_RA_NEXT;
	for (tries = 0; tries < SERVE_TRIES && again; tries++)
		ret = serve_try(&c, &again);
	if (!ret && c.rec && !region_removed(r, pg))
		uf_ws_serve_note(vma->obj, r->rec, pg);
	/* a lone page may be where a stream starts: a fault just after it
	 * goes on as one (pages the cache holds reach no readahead, which
	 * finds the streams of the others) */
	if (!ret && !c.rec && c.ahead == UF_RA_NO && c.max == 1 && c.end > pg)
		region_stream_note(r, pg, c.end);
	/* the worker runs ahead of a stream from where this fault's run
	 * ended: of one that went on from a window of its own, grown to half
	 * the largest at least (as the kernel's readahead ramps up: a short
	 * run readahead took for a stream is not worth windows more) */
	if (!ret && (c.ahead != UF_RA_NO ||
		     (streamed && !r->set && vma->mm->worker && !vma->nl_pgoff &&
		      c.end - pg >= (vma->mm->ra_max > 1 ? vma->mm->ra_max / 2 : 1))))
		ahead_kick(vma, r, pg, c.end, c.ahead == UF_RA_NO, c.ahead == UF_RA_NEXT);
	if (c.filled > (c.major ? 1u : 0u)) {
		uint64_t ra = c.filled - (c.major ? 1 : 0);

		uf_add(&vma->stats.readahead_pages, ra);
		uf_add(&vma->mm->stats.readahead_pages, ra);
	}
	/* never UF_FAULT_FLAG_EOF: anonymous memory has no EOF to meet, the
	 * retry would fault for ever; regions lie inside the object */
	if (ret == -ENOMEM)
		fdata->type = UF_FAULT_OOM;
	else if (ret)
		serve_sigbus(vma, fdata, ret, c.fill_failed);
	else
		fdata->type = c.major ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
	return NULL;
}

/*
 * ->open, ->close and ->fault of a region's VMA.  Called by fault.c from
 * a handler thread with no lock held (->fault), and by as.c with none
 * held (->open at a split or fork of the table, ->close at its release).
 */
static const struct uf_vm_operations serve_vm_ops = {
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

/* ------------------------------------------------------------------ */
/* Pushing a working set into a process                                */
/* ------------------------------------------------------------------ */

/*
 * A thread per process served with a working set (uf_object_serve_prefetch)
 * walks the set in recorded order, in batches of pieces (at most ra_max
 * pages of a run each) cut as a prefetch's claims are (uf_ws_cut(),
 * workingset.c): fills a batch's holes in the cache as the prefetch does
 * (uf_object_fill_runs(): one batched read of the store, one copy per
 * group of pages that touch; making room as a fault does: the cache stays
 * inside its budget), copying them on into the process from the fill's
 * buffer, then copies over what the cache had, with UFFDIO_COPY, which
 * never overwrites: a page the process already has
 * (its own fault's, or one it wrote) fails with EEXIST and is skipped,
 * and so is a page the balloon removed.  The handler threads serve the
 * process's faults meanwhile and never wait for it: a fault on a page of
 * the set that is not there yet reads the rest of its run at once
 * (serve_set_window).  The thread holds the address space (uf_as_adopt),
 * a reference to the object and one to the set; it stops when the set is
 * done, the process is gone, or the mm is being destroyed.
 */
struct serve_push {
	struct uf_object *obj;
	struct uf_as *as;
	struct uf_ws_set *set;
};

/*
 * Copy the pages of object pages [a, b) of @v that the cache holds into
 * the process.  Return 0, or -EAGAIN (an event first), -ESRCH (the
 * process is gone), -ENOMEM, -EIO.
 * Locking: as->vma_lock held shared; takes obj->invalidate_lock shared.
 */
static int __push_vma(struct uf_vma *v, uint64_t a, uint64_t b)
{
	struct serve_region *r = v->private_data;
	struct uf_object *obj = v->obj;
	struct uf_uffd *u = v->as->uffd;
	uint64_t q = a, e;
	int ret = 0;

	pthread_rwlock_rdlock(&obj->invalidate_lock);
	while (q < b && !ret) {
		size_t copied = 0;

		if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q) || region_removed(r, q)) {
			q++;
			continue;
		}
		for (e = q + 1; e < b && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, e) &&
				!region_removed(r, e); e++)
			;
		ret = cache_copy(obj, u, v->start + ((q - v->pgoff) << PAGE_SHIFT), q,
				 (size_t)(e - q), 0, &copied);
		if (ret == -EEXIST) {
			/* the process has that page: the rest may still go */
			q += (copied >> PAGE_SHIFT) + 1;
			ret = 0;
		} else if (!ret) {
			q = e;
		}
	}
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return ret == -ENOENT ? 0 : ret;	/* (ENOENT: the layout changed) */
}

/*
 * Copy object pages [first, first + n) into every region of the process
 * that shows them.  Return 0, or -ESRCH when the process is gone.
 * Locking: takes as->vma_lock shared.
 */
static int push_copy(struct serve_push *p, uint64_t first, uint64_t n)
{
	struct uf_as *as = p->as;
	int ret = 0, tries;
	size_t i;

	for (tries = 0; tries < SERVE_TRIES; tries++) {
		pthread_rwlock_rdlock(as->vma_lock);
		for (i = 0, ret = 0; i < as->vt.n && !ret; i++) {
			struct uf_vma *v = as->vt.vmas[i];
			uint64_t a = v->pgoff, b = v->pgoff + ((v->end - v->start) >> PAGE_SHIFT);

			if (v->vm_ops != &serve_vm_ops || v->obj != p->obj ||
			    __atomic_load_n(&v->dead, __ATOMIC_ACQUIRE))
				continue;
			a = a > first ? a : first;
			b = b < first + n ? b : first + n;
			if (a < b)
				ret = __push_vma(v, a, b);
		}
		pthread_rwlock_unlock(as->vma_lock);
		if (ret != -EAGAIN)
			break;
		uf_uffd_settle(as->uffd);	/* an event first (what is done stays) */
	}
	return ret == -ESRCH ? ret : 0;
}

/*
 * The push's fill sink: the pages a batch's fill inserts go on into the
 * process from the fill's buffer (no read back from the memfd), and each
 * piece counts its pages so copied; push_copy() does the rest after.
 * @pc: the batch's pieces by first page (they do not overlap).
 */
struct push_sink {
	struct uf_fill_sink sink;
	struct serve_push *p;
	struct uf_ws_run *pc;
	uint64_t *done;			/* pages of pc[i] copied on */
	size_t npc;
	bool gone;			/* the process is (ESRCH) */
};

/*
 * Copy object pages [a, b) of @v from @buf (page @a's bytes first) into
 * the process, past the balloon's removals and the pages it has.  Return
 * 0, or -EAGAIN, -ESRCH, -ENOMEM.
 * Locking: as->vma_lock held shared; obj->invalidate_lock held shared.
 */
static int __push_vma_buf(struct uf_vma *v, uint64_t a, uint64_t b, const char *buf)
{
	struct serve_region *r = v->private_data;
	uint64_t q = a, e;
	int ret = 0;

	while (q < b && !ret) {
		size_t copied = 0;

		if (region_removed(r, q)) {
			q++;
			continue;
		}
		for (e = q + 1; e < b && !region_removed(r, e); e++)
			;
		ret = uf_uffd_copy_mapped(v->as->uffd, v->start + ((q - v->pgoff) << PAGE_SHIFT),
					  buf + ((q - a) << PAGE_SHIFT), (size_t)(e - q) << PAGE_SHIFT,
					  0, &copied);
		if (ret == -EEXIST) {
			q += (copied >> PAGE_SHIFT) + 1;
			ret = 0;
		} else if (!ret) {
			q = e;
		}
	}
	return ret == -ENOENT ? 0 : ret;
}

/* Credit pages [q, q + n) to the pieces holding them. */
static void push_done(struct push_sink *k, uint64_t q, uint64_t n)
{
	size_t lo = 0, hi = k->npc;

	while (lo < hi) {		/* the first piece ending after q */
		size_t mid = lo + (hi - lo) / 2;

		if (k->pc[mid].start + k->pc[mid].len <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < k->npc && k->pc[lo].start < q + n; lo++) {
		uint64_t a = k->pc[lo].start > q ? k->pc[lo].start : q;
		uint64_t b = k->pc[lo].start + k->pc[lo].len < q + n ?
			     k->pc[lo].start + k->pc[lo].len : q + n;

		k->done[lo] += b - a;
	}
}

/* Locking: obj->invalidate_lock held shared (the fill's); as->vma_lock
 * is only tried (it comes first in the lock order). */
static void push_sink_fn(struct uf_fill_sink *sink, uint64_t q, const char *buf, size_t n)
{
	struct push_sink *k = (struct push_sink *)sink;
	struct uf_as *as = k->p->as;
	size_t i;
	int ret = 0;

	if (k->gone || pthread_rwlock_tryrdlock(as->vma_lock))
		return;
	for (i = 0; !ret && i < as->vt.n; i++) {
		struct uf_vma *v = as->vt.vmas[i];
		uint64_t a = v->pgoff, b = v->pgoff + ((v->end - v->start) >> PAGE_SHIFT);

		if (v->vm_ops != &serve_vm_ops || v->obj != k->p->obj || v->nl_pgoff ||
		    __atomic_load_n(&v->dead, __ATOMIC_ACQUIRE))
			continue;
		a = a > q ? a : q;
		b = b < q + n ? b : q + n;
		if (a < b)
			ret = __push_vma_buf(v, a, b, buf + ((a - q) << PAGE_SHIFT));
	}
	pthread_rwlock_unlock(as->vma_lock);
	if (!ret)
		push_done(k, q, n);
	else if (ret == -ESRCH)
		k->gone = true;
}

static int run_by_start(const void *a, const void *b)
{
	const struct uf_ws_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * One batch of pieces, as a prefetch's claim (workingset.c): its holes
 * filled by one batched read of the store where it has one (best effort:
 * a page the store cannot give stays a hole, and its own fault reports
 * the error) and copied on into the process from the fill's buffer, then
 * what the cache had copied over from it.  Return 0, or -ESRCH / -ENODEV
 * to stop.
 * Locking: none held; takes obj->invalidate_lock shared around the fill.
 */
static int push_batch(struct serve_push *p, const struct uf_ws_run *pc, size_t npc,
		      uint64_t pages, struct uf_ws_run *sorted, uint64_t *done)
{
	struct push_sink sink = { .sink = { .obj = p->obj, .fn = push_sink_fn }, .p = p,
				  .pc = sorted, .done = done, .npc = npc };
	struct uf_object *obj = p->obj;
	struct uf_mm *mm = obj->mm;
	size_t filled = 0, i;
	int ret = 0;

	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		return -ENODEV;
	memcpy(sorted, pc, npc * sizeof(*pc));
	qsort(sorted, npc, sizeof(*sorted), run_by_start);
	memset(done, 0, npc * sizeof(*done));
	uf_reclaim(mm, (size_t)pages);	/* room, as a fault makes it */
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	uf_fill_sink = &sink.sink;
	if (uf_object_fill_runs(obj, pc, npc, &filled, NULL))
		for (i = 0; i < npc; i++)
			uf_object_fill(obj, pc[i].start, (size_t)pc[i].len, UF_FILL_ANY, &filled,
				       NULL, NULL);
	uf_fill_sink = NULL;
	pthread_rwlock_unlock(&obj->invalidate_lock);
	uf_add(&mm->stats.readahead_pages, filled);
	if (sink.gone)
		return -ESRCH;
	/* what the cache had, or the sink could not copy; pieces that touch
	 * go in one copy */
	for (i = 0; i < npc && !ret; i++) {
		uint64_t first = sorted[i].start, end = first + sorted[i].len;
		bool all = done[i] == sorted[i].len;

		while (i + 1 < npc && sorted[i + 1].start == end) {
			all = all && done[i + 1] == sorted[i + 1].len;
			end += sorted[++i].len;
		}
		if (!all)
			ret = push_copy(p, first, end - first);
	}
	return ret;
}

/* A push thread's batch: its pieces in recorded order and by first page,
 * and the pages of each copied on by the sink. */
struct push_buf {
	struct uf_ws_run pc[UF_READV_PAGES], sorted[UF_READV_PAGES];
	uint64_t done[UF_READV_PAGES];
};

/* The push thread: the set in batches of pieces, as a prefetch claims
 * them.  Locking: none held. */
static void *push_thread(void *arg)
{
	struct serve_push *p = arg;
	struct uf_object *obj = p->obj;
	uint64_t piece = obj->mm->ra_max ? obj->mm->ra_max : 1, off = 0, pages;
	uint64_t batch = UF_WS_BATCH_FIRST;
	uint64_t max = __atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE) ? UF_READV_PAGES :
		       UF_WS_BATCH_LOCAL;
	bool batched = uf_object_batched_reads(obj);
	struct push_buf *pb = malloc(sizeof(*pb));
	size_t next = 0, npc;
	sigset_t all;

	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (piece > UF_READV_PAGES)
		piece = UF_READV_PAGES;
	while (pb && (npc = uf_ws_cut(p->set->runs, p->set->nruns, &next, &off, piece,
				      batched ? batch : piece, pb->pc, &pages))) {
		if (batch < max)
			batch *= 2;
		if (push_batch(p, pb->pc, npc, pages, pb->sorted, pb->done))
			break;
	}
	free(pb);
	uf_as_unhold(p->as);
	uf_ws_set_put(p->set);
	uf_object_put(p->obj);
	free(p);
	return NULL;
}

/* Start pushing @set into held @as (both references pass to the thread).
 * Locking: none held. */
static void push_start(struct uf_object *obj, struct uf_as *as, struct uf_ws_set *set)
{
	struct serve_push *p = malloc(sizeof(*p));
	pthread_attr_t attr;
	pthread_t t;
	int err = -1;

	if (p) {
		*p = (struct serve_push){ .obj = obj, .as = as, .set = set };
		uf_object_get(obj);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&t, &attr, push_thread, p);
		pthread_attr_destroy(&attr);
	}
	if (!err)
		return;
	/* no thread: the process is served lazily */
	if (p)
		uf_object_put(obj);
	free(p);
	uf_as_unhold(as);
	uf_ws_set_put(set);
}

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

/* uf_object_serve_uffd_opts(), of hugetlbfs memory with @huge set (its
 * regions checked by the caller). */
static int serve_uffd(struct uf_object *obj, int uffd, const struct uf_serve_region *regions,
		      unsigned int n, const struct uf_serve_opts *opts, bool huge)
{
	struct uf_serve_region s[UF_SERVE_MAX_REGIONS];
	struct uf_vma tmpl[UF_SERVE_MAX_REGIONS], *tp[UF_SERVE_MAX_REGIONS];
	struct serve_region *r[UF_SERVE_MAX_REGIONS] = { NULL };
	struct uf_ws_set *set = NULL;
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
	ret = -ENOMEM;
	memset(tmpl, 0, n * sizeof(*tmpl));
	for (i = 0; i < n; i++) {
		r[i] = region_alloc(s[i].offset >> PAGE_SHIFT, s[i].len >> PAGE_SHIFT, true);
		if (!r[i])
			goto out;
		r[i]->rec = rec;
		r[i]->huge = huge;
		if (set) {
			__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
			r[i]->set = set;
		}
		if (opts) {
			r[i]->on_remove = opts->on_remove;
			r[i]->arg = opts->arg;
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
	ret = regions_removed(r, s, n, opts);
	if (!ret)
		ret = regions_link(obj, r, n);
	if (ret)
		goto out;
	/* threads asleep in a fault nobody will answer fault again: their
	 * messages wait for this mm's handlers (see the top of the file) */
	for (i = 0; i < n; i++)
		uf_uffd_fd_wake(uffd, s[i].start, s[i].len);
	ret = uf_as_adopt(obj->mm, uffd, tp, n, &serve_uffd_ops, set ? &as : NULL, NULL);
out:
	for (i = 0; i < n && r[i]; i++)
		region_put(r[i]);
	if (ret)
		uf_ws_serve_unclaim(obj, rec);
	if (as) {
		push_start(obj, as, set);	/* (its reference to the set) */
		set = NULL;
	}
	uf_ws_set_put(set);
	return ret;
}

UF_EXPORT int uf_object_serve_uffd_opts(struct uf_object *obj, int uffd,
					const struct uf_serve_region *regions, unsigned int n,
					const struct uf_serve_opts *opts)
{
	return serve_uffd(obj, uffd, regions, n, opts, false);
}

UF_EXPORT int uf_object_serve_uffd_huge(struct uf_object *obj, int uffd,
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
