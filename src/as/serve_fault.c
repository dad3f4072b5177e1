// SPDX-License-Identifier: MIT
/*
 * Serving a fault of another process's memory (serve.c) by copy:
 * serve_fault(), the ->fault of a region's VMA, and the sink that runs
 * ahead of a 4 KiB stream.
 *
 * A page the fault fills is copied over from the fill's own
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
 * Locking: the order at the top of serve.c.
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

/*
 * Copy object pages [pg, pg + n), present in the cache, into the process
 * at @addr, read from the memfd into a bounce buffer.  Return as
 * uf_uffd_copy_mapped().
 * Locking: obj->invalidate_lock held shared (no page of the run leaves
 * the cache meanwhile).
 */
int cache_copy(struct uf_object *obj, struct uf_uffd *u, unsigned long addr, uint64_t pg,
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
 * so), if the set holds it.  The run's place is noted for the push, which
 * goes on after it (serve_push.c).
 */
static bool serve_set_window(struct serve_region *r, struct uf_vma *vma, uint64_t pg,
			     struct uf_ra_req *ra)
{
	const struct uf_ws_run *run = r->set ? uf_ws_set_find(r->set, pg) : NULL;
	uint64_t n;

	if (!run)
		return false;
	__atomic_store_n(&r->set_met_prev, __atomic_exchange_n(&r->set_met,
			 uf_ws_set_place(r->set, run) + 1, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	n = run->start + run->len - pg;
	*ra = (struct uf_ra_req){ .first = pg, .n = n < vma->mm->ra_max ? (size_t)n :
						     vma->mm->ra_max, .idx = -1 };
	if (!ra->n)
		ra->n = 1;
	return true;
}

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
 * The window of the sink: fill object pages [first, first + n) of @w's
 * region, copying them on into the VMAs of the region that show them as
 * they enter the cache; then copy those the cache had, or the fill could
 * not copy.  All but the first page (the marker).  Return 0, or -ESRCH
 * when the process is gone.
 * Locking: none held.
 */
static int __ahead_window(struct serve_ahead_work *w, uint64_t first, uint64_t n)
{
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

/*
 * A window of @w's run-ahead, delivered by @deliver, its time counted to
 * the process's tenant (serve_fair.c); or -EBUSY, nothing delivered, when
 * that tenant is over its share: a tenant over its share is not run
 * ahead of, and the worker, never lowered, would otherwise go on
 * delivering the windows its stream had asked for.
 * Locking: none held.
 */
int ahead_fair(struct serve_ahead_work *w, uint64_t first, uint64_t n,
	       int (*deliver)(struct serve_ahead_work *w, uint64_t first, uint64_t n))
{
	struct serve_fair fair;
	int ret = -EBUSY;

	if (!serve_fair_begin(w->r->tenant, &fair, false, 0))
		ret = deliver(w, first, n);
	serve_fair_end(&fair);
	return ret;
}

/* ->window of the sink (above).  Locking: none held. */
static int ahead_window(struct uf_ra_sink *rs, uint64_t first, uint64_t n)
{
	return ahead_fair((struct serve_ahead_work *)rs, first, n, __ahead_window);
}

/* ->release of the sink.  No lock held. */
void ahead_release(struct uf_ra_sink *rs)
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
 * After a fault of a stream: uf_runahead_kick() (@start, @claimed: as
 * there), then a sink for the worker if it is to be set going.
 * Locking: none held (a handler, which holds the address space);
 * takes the run-ahead's lock alone.
 */
void ahead_kick(struct uf_vma *vma, struct serve_region *r, uint64_t pg, uint64_t end,
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
	bool low;			/* a tenant over its share: the page alone */
	size_t filled, max;
	struct serve_sink sink;
};

/* The pages a try copies at most from the faulting page, its fill's
 * window being @ra (@set: a run of the working set pushed). */
static size_t serve_max(const struct serve_fault_ctx *c, const struct uf_ra_req *ra, bool set)
{
	size_t ra_max = c->vma->mm->ra_max;

	if (c->low)
		return 1;
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
		if (c->low)
			;		/* the page alone */
		else if (!c->rec && !set && c->ahead == UF_RA_IN)
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

/*
 * A fault of a stream that overtook the worker in the window it copies
 * over: claim the window after it and deliver that whole (its fill that
 * window alone, as for a fault inside a run-ahead's range), while the
 * worker finishes its own.  (A tenant over its share never gets here:
 * its faults do not look at the run-ahead.)
 * Locking: none held.
 */
static void serve_beside(const struct serve_fault_ctx *c)
{
	struct uf_vma *vma = c->vma;
	struct serve_region *r = c->r;
	size_t win = vma->mm->ra_max ? vma->mm->ra_max : 1, n;
	uint64_t first, limit = c->pg + ((vma->end - c->addr) >> PAGE_SHIFT);
	struct serve_fault_ctx b;
	bool again = true;
	int tries;

	n = uf_runahead_claim(&r->ahead, vma->as, c->pg, win, limit, &first);
	if (!n)
		return;
	b = (struct serve_fault_ctx){
		.vma = vma, .r = r, .addr = c->addr + ((first - c->pg) << PAGE_SHIFT), .pg = first,
		.end = first, .hi = first + n, .ahead = UF_RA_IN, .max = 1,
		.sink = { .sink = { .obj = vma->obj, .fn = serve_sink_fn }, .vma = vma, .r = r,
			  .pg = first, .end = first },
	};
	for (tries = 0; tries < SERVE_TRIES && again; tries++)
		if (serve_try(&b, &again))
			break;
	uf_runahead_claimed(&r->ahead);
	ahead_kick(vma, r, first, b.end, false, true);
}

/* ->fault: make the page present in the cache, then copy it over. */
struct uf_page *serve_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
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
	struct serve_fair fair;
	int ret = 0, tries;

	uf_huge_busy(vma->mm);		/* a restore: the collapses wait */
	if (r->huge)
		return serve_fault_huge(vma, fdata);
	/* a tenant over its share: served low, late, its page alone, and
	 * not run ahead of */
	c.low = serve_fair_begin(r->tenant, &fair, true, serve_fair_waiters(vma));

	/* recorded: the page alone, so that each page the process touches
	 * is a fault of its own, in the order touched */
	c.rec = uf_ws_serve_recording(vma->obj, r->rec);
	/* a marker of a stream run ahead of: the page alone (the rest of
	 * its window is there, or on its way).  A tenant over its share
	 * does not look: its marker would move the bound on, and the
	 * worker, never lowered, would run ahead of it on and on; so its
	 * run-ahead ends with the windows already wanted */
	if (!c.low && !c.rec && !r->set && vma->mm->worker && !vma->nl_pgoff)
		c.ahead = uf_runahead_check(&r->ahead, vma->as, pg,
					    vma->mm->ra_max ? vma->mm->ra_max : 1, &c.hi);
	/* in a window being copied over: the worker's (the fault copies the
	 * next one beside it) or another fault's; its page comes with it */
	if (c.ahead == UF_RA_MARK || c.ahead == UF_RA_IN) {
		serve_beside(&c);
		uf_runahead_wait(&r->ahead, pg);
	}
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
	if (!ret && !c.low && (c.ahead != UF_RA_NO ||
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
	serve_fair_end(&fair);
	return NULL;
}
