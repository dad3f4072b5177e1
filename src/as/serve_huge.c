// SPDX-License-Identifier: MIT
/*
 * Serving another process's hugetlbfs memory (serve.c): a fault of a
 * 2 MiB page, and the sink that runs ahead of a stream of them.
 * Locking: the order at the top of serve.c.
 */
#define _GNU_SOURCE
#include "as/as.h"
#include "as/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Hugetlbfs memory (uf_object_serve_uffd_huge).  A VMM's guest memory
 * mapped from hugetlbfs takes UFFDIO_COPY in whole huge pages only (a
 * 2 MiB-aligned destination and length), each a huge page of the pool
 * for that process, and no UFFDIO_ZEROPAGE.  So a fault there makes the
 * object's 512 pages of its huge page present in the cache, and the huge
 * page goes on into the process from the fill's own buffer (huge_fill_fn:
 * one store read, one copy into the process, one into the cache, nothing
 * done per 4 KiB page; of a read-only object the process's copy comes
 * first, from the store's bytes, and the copy into the cache, as costly
 * as the other two together, after it: struct uf_fill_sink's early); one
 * the cache had is read from the memfd first.  A balloon's removal (2 MiB
 * granular in hugetlbfs) is answered with 2 MiB of zeros.  A stream is
 * run ahead of as a 4 KiB one is (readahead.c), in windows of whole huge
 * pages (huge_win(): the first huge page of each is its marker) delivered
 * by the sink below a huge page at a time; each huge page is delivered by
 * one thread, the worker or a fault's handler (huge_claim: a fault on one
 * being delivered waits for it, never reads it twice).  With no worker, a
 * stream's fault copies SERVE_HUGE_AHEAD huge pages more after its own,
 * which is woken first.  Where the process can get no huge page (ENOMEM:
 * the pool is empty) or the store fails, the faulting huge page gets the
 * poison marker: the access takes SIGBUS, never zeros, never a hang (the
 * worker only stops).  Working sets are not recorded or pushed here (4 KiB runs).
 */
#define SERVE_HUGE_WIN_MIN	4	/* huge pages in a window, at least */
#define SERVE_HUGE_WIN_MAX	64	/* and at most (a bit each) */

/* A fault of a huge page another thread is delivering waits for it (a
 * futex), HUGE_WAIT_MS at most (a delivery takes a millisecond or two),
 * then is answered with a wake: the page is there (the delivery's copy
 * woke it already), or the access faults again and is served.  Short: the
 * delivery may itself wait for the handlers to read an event of the
 * process first (uf_uffd_settle), which a handler waiting here does not. */
#define HUGE_WAIT_MS		20

static char huge_zeros[UF_HUGE_SIZE] __attribute__((aligned(PAGE_SIZE)));	/* never written */

static bool huge_present(struct uf_object *obj, uint64_t pg)
{
	uint64_t q;

	for (q = pg; q < pg + UF_HUGE_PAGES; q++)
		if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q))
			return false;
	return true;
}

/* A region's bits of its huge pages (struct serve_region): 0 or -ENOMEM. */
int huge_region_init(struct serve_region *r)
{
	size_t n = DIV_ROUND_UP(DIV_ROUND_UP(r->npages, UF_HUGE_PAGES), BITS_PER_LONG);

	r->hbusy = calloc(n, sizeof(unsigned long));
	r->hdone = calloc(n, sizeof(unsigned long));
	return r->hbusy && r->hdone ? 0 : -ENOMEM;
}

/* Huge page @pg's bit in @bits: its word, and the bit in *@bit. */
static unsigned long *huge_bit(struct serve_region *r, unsigned long *bits, uint64_t pg,
			       unsigned long *bit)
{
	uint64_t i = (pg - r->first) / UF_HUGE_PAGES;

	*bit = 1UL << (i % BITS_PER_LONG);
	return &bits[i / BITS_PER_LONG];
}

/* Take huge page @pg of @r to deliver it: false when another thread is
 * delivering it now. */
static bool huge_claim(struct serve_region *r, uint64_t pg)
{
	unsigned long bit, *w = huge_bit(r, r->hbusy, pg, &bit);

	return !(__atomic_fetch_or(w, bit, __ATOMIC_ACQUIRE) & bit);
}

/* The delivery of huge page @pg ends: the faults waiting for one are
 * woken (huge_wait). */
static void huge_unclaim(struct serve_region *r, uint64_t pg)
{
	unsigned long bit, *w = huge_bit(r, r->hbusy, pg, &bit);

	__atomic_fetch_and(w, ~bit, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->hwaiters, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&r->hgen, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &r->hgen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	}
}

/* Wait (HUGE_WAIT_MS at most) for the thread delivering huge page @pg. */
static void huge_wait(struct serve_region *r, uint64_t pg)
{
	unsigned long bit, *w = huge_bit(r, r->hbusy, pg, &bit);
	struct timespec ts = { .tv_nsec = 1000000 };	/* 1 ms a try */
	uint32_t gen;
	int i;

	__atomic_add_fetch(&r->hwaiters, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < HUGE_WAIT_MS; i++) {
		gen = __atomic_load_n(&r->hgen, __ATOMIC_SEQ_CST);
		if (!(__atomic_load_n(w, __ATOMIC_SEQ_CST) & bit))
			break;
		syscall(SYS_futex, &r->hgen, FUTEX_WAIT_PRIVATE, gen, &ts, NULL, 0);
	}
	__atomic_sub_fetch(&r->hwaiters, 1, __ATOMIC_SEQ_CST);
}

/* Huge page @pg was delivered (@set), or was it?  The run-ahead skips
 * those (a page the process has is only read back from the cache to meet
 * EEXIST); a fault never trusts it. */
static bool huge_done(struct serve_region *r, uint64_t pg, bool set)
{
	unsigned long bit, *w = huge_bit(r, r->hdone, pg, &bit);

	if (set)
		__atomic_fetch_or(w, bit, __ATOMIC_RELAXED);
	return __atomic_load_n(w, __ATOMIC_RELAXED) & bit;
}

/* Huge page @pg is to be served again: its next fault copies it. */
static void huge_undone(struct serve_region *r, uint64_t pg)
{
	unsigned long bit, *w = huge_bit(r, r->hdone, pg, &bit);

	__atomic_fetch_and(w, ~bit, __ATOMIC_RELAXED);
}

/* Pages in a run-ahead window of huge pages: ra_max rounded up to whole
 * huge pages, a marker and SERVE_HUGE_WIN_MIN - 1 more at least. */
size_t huge_win(const struct uf_mm *mm)
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
	k->sink.taken = !(q & (UF_HUGE_PAGES - 1)) && !(n & (UF_HUGE_PAGES - 1));
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
	/* every huge page of the span delivered: the cache's copy may wait */
	for (h = q; k->sink.taken && h < q + n; h += UF_HUGE_PAGES)
		k->sink.taken = h >= k->base && (h - k->base) / UF_HUGE_PAGES < 64 &&
				(k->done >> ((h - k->base) / UF_HUGE_PAGES) & 1);
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
	struct huge_fill hf = { .sink = { .obj = obj, .fn = huge_fill_fn, .early = true,
				  .defer = true }, .as = vma->as, .r = r,
				.base = pg };
	bool flushed = false;
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
			if (ret == -ENOBUFS && !flushed) {
				/* the room pending inserts hold: evictable once in */
				uf_inserts_flush(vma->mm);
				flushed = true;
				ret = 1;
				continue;
			}
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
 * Deliver huge page @h of the window of @w (not the marker), as @hf's
 * fills: filled (room made first) and copied on from the fill's buffer
 * (before the copy into the cache: @hf is early), or copied from the cache
 * where it had it; a removed one is left to its fault (zeros), one a
 * fault delivers now or did is skipped, one the process has too (EEXIST).
 * Return 0, -ESRCH or -ENOMEM (stop).  *@filled: pages filled.
 * Locking: none held.
 */
static int huge_window_page(struct serve_ahead_work *w, struct huge_fill *hf, uint64_t h,
			    size_t *filled)
{
	struct uf_object *obj = w->obj;
	uint64_t bit = 1ULL << ((h - hf->base) / UF_HUGE_PAGES);
	int ret;

	if (region_removed(w->r, h) || huge_done(w->r, h, false) || !huge_claim(w->r, h))
		return 0;	/* (a fault delivers it, or did) */
	if (!huge_present(obj, h)) {
		uf_reclaim(obj->mm, UF_HUGE_PAGES);	/* room, as a fault makes it */
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		uf_fill_sink = &hf->sink;
		uf_object_fill(obj, h, UF_HUGE_PAGES, UF_FILL_ANY, filled, NULL, NULL);
		uf_fill_sink = NULL;
		pthread_rwlock_unlock(&obj->invalidate_lock);
	}
	ret = hf->err ? hf->err : hf->done & bit ? 0 : huge_copy_ahead(w, h);
	if (hf->done & bit)
		huge_done(w->r, h, true);
	huge_unclaim(w->r, h);
	return ret;
}

/*
 * ->window of the sink of a stream of huge pages: the huge pages of
 * [first, first + n) but the first (the marker), one at a time
 * (huge_window_page).  The process's faults on the window's pages the
 * worker has not come to are served by the handlers meanwhile, each huge
 * page by one thread (huge_claim).  Return 0, or -ESRCH when the process
 * is gone.
 * Locking: none held.
 */
static int __huge_window(struct serve_ahead_work *w, uint64_t first, uint64_t n)
{
	struct uf_mm *mm = w->obj->mm;
	struct huge_fill hf = { .sink = { .obj = w->obj, .fn = huge_fill_fn, .early = true,
				  .defer = true },
				.as = w->as, .r = w->r, .base = first, .worker = true };
	size_t filled = 0;
	uint64_t h;
	int ret = 0;

	uf_huge_busy(mm);		/* a restore: the collapses wait */
	for (h = first + UF_HUGE_PAGES; h < first + n && !ret; h += UF_HUGE_PAGES)
		ret = huge_window_page(w, &hf, h, &filled);
	uf_add(&mm->stats.readahead_pages, filled);
	return ret == -ESRCH ? -ESRCH : 0;
}

/* ->window of the sink, as a tenant's share allows (ahead_fair()). */
static int huge_window(struct uf_ra_sink *rs, uint64_t first, uint64_t n)
{
	return ahead_fair((struct serve_ahead_work *)rs, first, n, __huge_window);
}

const struct uf_ra_sink_ops huge_sink_ops = {
	.window		= huge_window,
	.release	= ahead_release,
};

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
 * A fault of a region in hugetlbfs memory (above): its huge page, then
 * the rest of a window it claimed at the run-ahead's end, or (no worker)
 * of a stream, the next SERVE_HUGE_AHEAD; then the run-ahead is kicked.
 * With @low (a tenant over its share), its huge page alone.
 */
static void fault_huge(struct uf_vma *vma, struct uf_fault_data *fdata, bool low)
{
	struct serve_region *r = vma->private_data;
	struct uf_mm *mm = vma->mm;
	unsigned long addr = fdata->address & ~(UF_HUGE_SIZE - 1);
	uint64_t pg = fdata->pgoff - (((fdata->address & PAGE_MASK) - addr) >> PAGE_SHIFT), hi;
	bool runahead = !low && mm->worker && !vma->nl_pgoff;
	bool streamed = !low && region_stream(r, pg);
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
		uint64_t p = pg + (uint64_t)i * UF_HUGE_PAGES;

		if (!huge_claim(r, p)) {
			/* another thread delivers it: the faulting page is
			 * waited for (then woken: see HUGE_WAIT_US) */
			if (!i)
				huge_wait(r, p);
			continue;
		}
		if (!i && huge_done(r, p, false)) {
			/*
			 * Delivered since the access faulted (the copy woke
			 * it): the wake this fault gets is all it needs, and
			 * its insert into the cache, maybe far down the
			 * queue, is not waited for.  Removed since?  The bit
			 * goes: the fault that then comes back is served.
			 */
			huge_undone(r, p);
			huge_unclaim(r, p);
			continue;
		}
		ret = huge_serve(vma, r, addr + ((unsigned long)i << UF_HUGE_SHIFT), p, !i,
				 i ? &(bool){ false } : &major, &filled);
		if (!ret)
			huge_done(r, p, true);	/* (the run-ahead skips it) */
		huge_unclaim(r, p);
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
		return;
	}
	if (where == UF_RA_NEXT && i < n)	/* the rest of its claim was not copied */
		ahead_kick(vma, r, pg, pg + (uint64_t)i * UF_HUGE_PAGES, false, true);
	fdata->type = major ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
}

/* ->fault of a region in hugetlbfs memory: a tenant over its share is
 * served low, and not run ahead of (serve_fair.c). */
struct uf_page *serve_fault_huge(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct serve_region *r = vma->private_data;
	struct serve_fair fair;

	fault_huge(vma, fdata, serve_fair_begin(r->tenant, &fair, true, serve_fair_waiters(vma)));
	serve_fair_end(&fair);
	return NULL;
}
