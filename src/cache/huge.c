// SPDX-License-Identifier: MIT
/*
 * Huge extents: a 2 MiB-aligned extent of an object's cache (the memfd)
 * that is fully present is collapsed into one huge folio, in the
 * background, by MADV_COLLAPSE on obj->cache_map.  Measured on Linux 6.18:
 * this works with shmem_enabled=never, on a mapping registered MISSING (a
 * hole in the extent makes the kernel refuse: it never fills one with a
 * zero page while a MISSING-registered mapping could see it), and moves
 * the pages into the new folio with their bytes; every mapping's PTEs of
 * the old pages are unmapped.  The next access through a mapping that is
 * aligned (address = file offset modulo 2 MiB) and not registered for
 * write-protect maps the whole extent with one PMD and no userfaultfd
 * event.  Write-protect registered mappings keep 4 KiB PTEs onto the huge
 * folio, and dirty tracking stays per 4 KiB page: an asynchronous written
 * bit survives the unmap (PAGEMAP_SCAN reports the unmapped written page),
 * and the synchronous mode records a page dirty at its first write.
 *
 * Exactness after a collapse (the kernel splits a huge shmem folio when a
 * part of it is punched or truncated away):
 *  - truncate and hole punch split the extent; a split the kernel could
 *    not make (an extra reference) leaves the punched pages zeroed but
 *    present: the punch is tried again, and what stays is marked present
 *    in the page state, since zeroes are those pages' bytes;
 *  - reclaim evicts a huge extent whole (dirty pages first, as for any
 *    victim), so an eviction never depends on a split.
 *
 * The collapse works through a mapping of the extent made for it, not
 * registered (MADV_COLLAPSE reads no page in: an extent with a hole is
 * refused, see above), and touched only once the extent is known to be
 * huge and whole (first_touch()), then unmapped.
 *
 * Locks (the order is in lockorder.h): huge->lock nests inside
 * obj->invalidate_lock.  The collapse runs in a thread of its own with no
 * lock held (see collapse()); huge->lock guards only the queue and is
 * never held across a system call that can wait.
 */
#define _GNU_SOURCE
#include "cache/huge.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_QUEUE_MAX	4096	/* extents waiting; more are not collapsed */

struct huge_ext {
	struct uf_object *obj;
	uint64_t ext;
	unsigned int tries;		/* collapses refused so far */
};

#define HUGE_TRIES	4		/* a refused collapse is tried again */
#define HUGE_QUIET_NS	20000000	/* no fill for this long: collapse */

/*
 * The collapser of an mm: a thread of its own, started by the first
 * extent queued.  Not the mm's worker (worker.c): a collapse takes
 * milliseconds, and faulting threads wait for the readahead windows that
 * worker fills.
 */
struct uf_huge {
	struct uf_huge_fills fills;	/* first: what fills stamp (cache.h) */
	struct uf_mm *mm;
	struct uf_thread thread;
	bool started;
	bool stop;
	pthread_mutex_t lock;		/* the fields below */
	pthread_cond_t cond;		/* an extent was queued, or stop */
	pthread_cond_t idle;		/* busy went back to NULL */
	struct huge_ext *q;		/* FIFO: q[head..n) */
	size_t head, n, cap;
	struct uf_object *busy;		/* being collapsed now */
};

/* ------------------------------------------------------------------ */
/* Aligned mappings                                                    */
/* ------------------------------------------------------------------ */

/*
 * mmap() whose address is @off modulo 2 MiB when @len can hold an
 * extent, so the kernel can map a huge folio there with one PMD: reserve
 * 2 MiB more than asked, map over it, trim the rest.  The reservation is
 * ours and unregistered: neither the MAP_FIXED nor the trim raise an
 * event.  Returns what mmap() returns.
 */
void *uf_mmap_aligned(size_t len, int prot, int flags, int fd, uint64_t off)
{
	size_t span = len + UF_HUGE_SIZE - PAGE_SIZE;
	unsigned long r, a;
	void *p;
	int e;

	if (len < UF_HUGE_SIZE || span < len)
		return mmap(NULL, len, prot, flags, fd, (off_t)off);
	p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return mmap(NULL, len, prot, flags, fd, (off_t)off);
	r = (unsigned long)p;
	a = r + ((off - r) & (UF_HUGE_SIZE - 1));
	p = mmap((void *)a, len, prot, flags | MAP_FIXED, fd, (off_t)off);
	if (p == MAP_FAILED) {
		e = errno;
		munmap((void *)r, span);
		errno = e;
		return MAP_FAILED;
	}
	if (a > r)
		munmap((void *)r, a - r);
	if (r + span > a + len)
		munmap((void *)(a + len), r + span - (a + len));
	return p;
}

/* ------------------------------------------------------------------ */
/* The set of collapsed extents of an object                          */
/* ------------------------------------------------------------------ */

/*
 * obj->huge_ext: the extents collapsed and not split since, sorted.
 * Written by the collapser thread (the only one of the mm) with
 * obj->invalidate_lock held shared, and by truncate, punch and reclaim
 * with it exclusive; obj->nhuge is read atomically for the statistics.
 */

/* The first index of obj->huge_ext whose extent is >= @ext. */
static size_t ext_lower(const struct uf_object *obj, uint64_t ext)
{
	size_t lo = 0, hi = obj->nhuge;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (obj->huge_ext[mid] < ext)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool ext_is_huge(const struct uf_object *obj, uint64_t ext)
{
	size_t i = ext_lower(obj, ext);

	return i < obj->nhuge && obj->huge_ext[i] == ext;
}

/*
 * Is extent @ext huge, or being collapsed (it may be one huge folio by
 * now, which a partial punch would have to split)?
 * Locking: obj->invalidate_lock held (any mode).
 */
static bool ext_maybe_huge(const struct uf_object *obj, uint64_t ext)
{
	return __atomic_load_n(&obj->huge_busy, __ATOMIC_ACQUIRE) == ext + 1 ||
	       ext_is_huge(obj, ext);
}

/* Does [first, last) touch the extent being collapsed? */
static bool busy_in(const struct uf_object *obj, uint64_t first, uint64_t last)
{
	uint64_t b = __atomic_load_n(&obj->huge_busy, __ATOMIC_ACQUIRE);

	return b && first < last && b - 1 >= first / UF_HUGE_PAGES &&
	       b - 1 <= (last - 1) / UF_HUGE_PAGES;
}

static void ext_add(struct uf_object *obj, uint64_t ext)
{
	size_t i = ext_lower(obj, ext);

	if (i < obj->nhuge && obj->huge_ext[i] == ext)
		return;
	if (obj->nhuge == obj->huge_cap) {
		size_t cap = obj->huge_cap ? 2 * obj->huge_cap : 16;
		uint64_t *p = realloc(obj->huge_ext, cap * sizeof(*p));

		if (!p)
			return;		/* not counted; nothing else depends on it */
		obj->huge_ext = p;
		obj->huge_cap = cap;
	}
	memmove(&obj->huge_ext[i + 1], &obj->huge_ext[i], (obj->nhuge - i) * sizeof(uint64_t));
	obj->huge_ext[i] = ext;
	__atomic_store_n(&obj->nhuge, obj->nhuge + 1, __ATOMIC_RELAXED);
}

/* Forget the extents that pages [first, last) touch; return how many.
 * Locking: obj->invalidate_lock held exclusive. */
static size_t ext_remove(struct uf_object *obj, uint64_t first, uint64_t last)
{
	size_t i, j;

	if (!obj->nhuge || first >= last)
		return 0;
	i = ext_lower(obj, first / UF_HUGE_PAGES);
	for (j = i; j < obj->nhuge && obj->huge_ext[j] <= (last - 1) / UF_HUGE_PAGES; j++)
		;
	if (j == i)
		return 0;
	memmove(&obj->huge_ext[i], &obj->huge_ext[j], (obj->nhuge - j) * sizeof(uint64_t));
	__atomic_store_n(&obj->nhuge, obj->nhuge - (j - i), __ATOMIC_RELAXED);
	return j - i;
}

uint64_t uf_object_huge_extents(struct uf_object *obj)
{
	return __atomic_load_n(&obj->nhuge, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Collapsing, in the collapser thread                                */
/* ------------------------------------------------------------------ */

/* Is extent @ext of @obj (pages from @first) one to collapse?
 * Locking: obj->invalidate_lock held shared. */
static bool __collapsible(struct uf_object *obj, uint64_t ext, uint64_t first)
{
	return !uf_object_orphaned(obj) &&
	       (first + UF_HUGE_PAGES) << PAGE_SHIFT <= obj->size &&
	       !ext_is_huge(obj, ext) &&
	       uf_pagebits_full(&obj->pages, UF_PG_PRESENT, first, UF_HUGE_PAGES);
}

/*
 * Read one byte of each 4 KiB page of a freshly collapsed extent through
 * @p, the collapse's own mapping of it, so that the first reader of the
 * extent does not pay for the first touch of the new huge page.  Where
 * that first touch traps to a hypervisor (a PVM guest), a program's first
 * pass over a fresh huge page costs about 1 us per 4 KiB, and every later
 * pass, through any mapping, about 60 ns; the touch here moves the cost
 * off the reader.  Where the first touch is cheap it is 512 loads through
 * one PMD.
 * Only under obj->invalidate_lock shared, with the extent known to be
 * fully present: @p is not registered, and a read of a hole there would
 * put a page of zeroes in the cache where the store has bytes.
 */
static void first_touch(const void *p)
{
	const volatile char *c = p;
	size_t off;

	for (off = 0; off < UF_HUGE_SIZE; off += PAGE_SIZE)
		(void)c[off];
}

/*
 * Collapse one extent.  The collapse itself (milliseconds) runs with no
 * ufault lock held: reclaim only tries the invalidate lock and must not
 * find it held that long, nor a truncate wait for it.  It works on a
 * mapping of its own, so that a truncate may move cache_map meanwhile;
 * the kernel keeps it safe against a punch or truncate (it fails, or the
 * folio is split after), and obj->huge_gen says whether one came in
 * between, in which case the extent is not counted.  Meanwhile
 * obj->huge_busy names the extent: it may become one huge folio at any
 * moment, so reclaim evicts it whole and a punch checks its split (a
 * fresh huge folio can refuse a split, and the punch then only zeroes
 * the pages: an eviction must never leave zeroes where the store has
 * bytes).
 * Locking: none held; takes obj->invalidate_lock shared.  The object
 * stays (uf_huge_forget() waits for h->busy).
 */
static bool collapse(struct uf_huge *h, struct uf_object *obj, uint64_t ext)
{
	uint64_t first = ext * UF_HUGE_PAGES, gen;
	bool go, raced;
	void *p;
	int ret, err;

	pthread_rwlock_rdlock(&obj->invalidate_lock);
	go = __collapsible(obj, ext, first);
	gen = __atomic_load_n(&obj->huge_gen, __ATOMIC_RELAXED);
	/* from now on, reclaim evicts the extent whole and a punch checks
	 * its split, as for a huge one */
	if (go)
		__atomic_store_n(&obj->huge_busy, ext + 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	if (!go)
		return false;
	p = uf_mmap_aligned(UF_HUGE_SIZE, PROT_READ, MAP_SHARED | MAP_NORESERVE, obj->memfd,
			    first << PAGE_SHIFT);
	if (p != MAP_FAILED) {
		ret = madvise(p, UF_HUGE_SIZE, MADV_COLLAPSE);
		err = errno;
	} else {
		ret = -1;
		err = errno;
	}
	if (!ret)
		uf_add(&h->mm->stats.huge_collapses, 1);
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	raced = __atomic_load_n(&obj->huge_gen, __ATOMIC_RELAXED) != gen ||
		!__collapsible(obj, ext, first);
	if (!ret && !raced) {
		ext_add(obj, ext);
		first_touch(p);
	}
	__atomic_store_n(&obj->huge_busy, 0, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	if (p != MAP_FAILED)
		munmap(p, UF_HUGE_SIZE);
	if (!ret || raced)
		return false;	/* done, or a truncate's: refilled, it comes back */
	/*
	 * EINVAL means no MADV_COLLAPSE (before 6.1) or THP off for good, but
	 * it is also the kernel's answer for a range truncated or punched
	 * under the collapse: only an extent nothing raced with, before any
	 * collapse worked, turns huge extents off.
	 */
	if (err == EINVAL) {
		if (!uf_load(&h->mm->stats.huge_collapses))
			__atomic_store_n(&h->fills.unsupported, true, __ATOMIC_RELAXED);
		return false;
	}
	/* EAGAIN (a page held for a moment: just written, still in a per-CPU
	 * batch), ENOMEM: worth another try */
	return true;
}

/* Append @e to the queue.  Locking: huge->lock held. */
static bool queue_tail(struct uf_huge *h, const struct huge_ext *e)
{
	if (h->n - h->head >= HUGE_QUEUE_MAX)
		return false;
	if (h->head && h->n == h->cap) {
		memmove(h->q, &h->q[h->head], (h->n - h->head) * sizeof(*h->q));
		h->n -= h->head;
		h->head = 0;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 32;
		struct huge_ext *q = realloc(h->q, cap * sizeof(*q));

		if (!q)
			return false;
		h->q = q;
		h->cap = cap;
	}
	h->q[h->n++] = *e;
	return true;
}

static void *huge_thread(void *arg)
{
	struct uf_huge *h = arg;
	sigset_t all;

	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct huge_ext e;
		uint64_t quiet;
		bool retry;

		if (h->stop)
			break;
		if (h->head == h->n) {
			pthread_cond_wait(&h->cond, &h->lock);
			continue;
		}
		/*
		 * Not while the mm is filling: a collapse (milliseconds of
		 * copying, and a TLB flush in every mapping of the extent)
		 * would slow the cold reads that made the extent full
		 * (measured: cold sequential reads 1.5-1.9x the cost), nor
		 * while it copies into a served process (uf_huge_busy(): a
		 * warm restore run at the cold one's heels was 1.1-1.6x the
		 * cold one's cost, the collapse's copying 45% of the CPU the
		 * server used).  Once both pause for HUGE_QUIET_NS, the queue
		 * goes.
		 */
		quiet = __atomic_load_n(&h->fills.last_fill_ns, __ATOMIC_RELAXED) + HUGE_QUIET_NS;
		if (uf_now_ns() < quiet) {
			struct timespec ts = uf_ns_timespec(quiet);

			pthread_cond_timedwait(&h->cond, &h->lock, &ts);
			continue;
		}
		e = h->q[h->head++];
		if (h->head == h->n)
			h->head = h->n = 0;
		h->busy = e.obj;
		pthread_mutex_unlock(&h->lock);

		retry = !__atomic_load_n(&h->fills.unsupported, __ATOMIC_RELAXED) &&
			collapse(h, e.obj, e.ext) && ++e.tries < HUGE_TRIES;
		if (retry)
			usleep(10000);	/* let it settle; nothing is held */

		pthread_mutex_lock(&h->lock);
		/* (under the lock with busy: uf_huge_forget() sees one or
		 * the other) */
		if (retry && !h->stop)
			queue_tail(h, &e);
		h->busy = NULL;
		pthread_cond_broadcast(&h->idle);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Queue extent @ext of @obj.  Locking: takes huge->lock. */
static void huge_queue(struct uf_huge *h, struct uf_object *obj, uint64_t ext)
{
	size_t i;

	pthread_mutex_lock(&h->lock);
	if (h->stop)
		goto out;
	for (i = h->head; i < h->n; i++)
		if (h->q[i].obj == obj && h->q[i].ext == ext)
			goto out;
	if (!h->started) {
		h->started = uf_thread_start(&h->thread, huge_thread, h) == 0;
		if (!h->started)
			goto out;	/* no thread: no huge extents */
	}
	/* only an empty queue's thread sleeps untimed: one with extents
	 * queued sleeps until the fills pause, and more fills only put that
	 * off (a wakeup per extent of a restore preempted the inserting
	 * thread to find it not yet quiet) */
	if (queue_tail(h, &(struct huge_ext){ obj, ext, 0 }) && h->n - h->head == 1)
		pthread_cond_signal(&h->cond);
out:
	pthread_mutex_unlock(&h->lock);
}

/*
 * The mm is copying its cache into a served process (a restore): the
 * collapses wait, as they do for fills.
 * Locking: any.
 */
void uf_huge_busy(struct uf_mm *mm)
{
	struct uf_huge *h = mm->huge;

	if (h && !__atomic_load_n(&h->fills.unsupported, __ATOMIC_RELAXED))
		__atomic_store_n(&h->fills.last_fill_ns, uf_now_ns(), __ATOMIC_RELAXED);
}

/*
 * Extent @ext of @obj is full (__uf_huge_filled(), cache.h): queue it.
 * Locking: obj->invalidate_lock held (any mode).
 */
void __uf_huge_queue_full(struct uf_object *obj, uint64_t ext)
{
	struct uf_huge *h = obj->mm->huge;

	huge_queue(h, obj, ext);
}

/*
 * The last reference to @obj is gone: drop its queued extents, wait for
 * a collapse of it in progress, free its set.
 * Locking: none held.
 */
void uf_huge_forget(struct uf_object *obj)
{
	struct uf_huge *h = obj->mm ? obj->mm->huge : NULL;

	if (h) {
		size_t i, j;

		pthread_mutex_lock(&h->lock);
		/* first the collapse under way (which may queue it again) */
		while (h->busy == obj)
			pthread_cond_wait(&h->idle, &h->lock);
		for (i = j = h->head; i < h->n; i++)
			if (h->q[i].obj != obj)
				h->q[j++] = h->q[i];
		h->n = j;
		pthread_mutex_unlock(&h->lock);
	}
	free(obj->huge_ext);
	obj->huge_ext = NULL;
	obj->nhuge = obj->huge_cap = 0;
}

/* ------------------------------------------------------------------ */
/* Splits: truncate, punch, reclaim                                    */
/* ------------------------------------------------------------------ */

/* Is any page of [first, last) still data in the memfd? */
static bool memfd_has_data(struct uf_object *obj, uint64_t first, uint64_t last)
{
	off_t d = lseek(obj->memfd, (off_t)(first << PAGE_SHIFT), SEEK_DATA);

	return d >= 0 && (uint64_t)d < last << PAGE_SHIFT;
}

/* Punch [first, last) again while the memfd still holds data there (a
 * split refused); true when it is a hole at last. */
static bool repunch(struct uf_object *obj, uint64_t first, uint64_t last, int tries)
{
	while (memfd_has_data(obj, first, last)) {
		if (tries-- <= 0)
			return false;
		usleep(1000);
		fallocate(obj->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)(first << PAGE_SHIFT), (off_t)((last - first) << PAGE_SHIFT));
	}
	return true;
}

/*
 * Pages [first, last) of @obj were punched out of the memfd (a hole punch,
 * a truncate).  Collapsed extents they touch are split by the kernel;
 * should it have failed to split one (the pages were zeroed but kept),
 * punch again, and what still stays is marked present (its bytes are
 * zero, which is what the store now holds too), the extent huge.
 * Locking: obj->invalidate_lock held exclusive.
 */
void __uf_huge_punched(struct uf_object *obj, uint64_t first, uint64_t last)
{
	uint64_t p;

	/* a collapse in flight does not count its extent */
	__atomic_add_fetch(&obj->huge_gen, 1, __ATOMIC_RELAXED);
	if (!ext_remove(obj, first, last) && !busy_in(obj, first, last))
		return;
	if (repunch(obj, first, last, 10) || uf_pagebits_reserve(&obj->pages, first, last - first))
		return;
	for (p = first; p < last; p++) {
		if (!memfd_has_data(obj, p, p + 1))
			continue;
		if (uf_pagebits_set(&obj->pages, UF_PG_PRESENT, p) == 0)
			uf_add(&obj->npresent, 1);
		if (uf_pagebits_full(&obj->pages, UF_PG_PRESENT, p / UF_HUGE_PAGES * UF_HUGE_PAGES,
				    UF_HUGE_PAGES))
			ext_add(obj, p / UF_HUGE_PAGES);
	}
}

/*
 * Reclaim punched pages [first, last) (whole huge extents: see
 * __uf_huge_widen()) and cleared their present bits.  Whatever the memfd
 * still holds there came from a huge folio that refused a split (one ufault
 * did not know of: made by the kernel itself, or a collapse that ended
 * between): zeroes where the store has bytes, which must never be read.
 * Then the extents holding them go whole: their dirty pages written, the
 * whole extent punched (no split needed).  Return the pages that left the
 * cache beyond [first, last).
 * Locking: obj->invalidate_lock held exclusive.
 */
uint64_t __uf_huge_evicted(struct uf_object *obj, uint64_t first, uint64_t last)
{
	uint64_t lo, hi, p, more = 0;

	__atomic_add_fetch(&obj->huge_gen, 1, __ATOMIC_RELAXED);
	ext_remove(obj, first, last);
	if (repunch(obj, first, last, 3))
		return 0;
	lo = first / UF_HUGE_PAGES * UF_HUGE_PAGES;
	hi = (last + UF_HUGE_PAGES - 1) / UF_HUGE_PAGES * UF_HUGE_PAGES;
	if (uf_pagebits_next(&obj->pages, UF_PG_DIRTY, lo, hi) < hi &&
	    __uf_object_writeback(obj, lo, hi - 1))
		goto keep;
	fallocate(obj->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)(lo << PAGE_SHIFT), (off_t)((hi - lo) << PAGE_SHIFT));
	if (!repunch(obj, lo, hi, 3))
		goto keep;
	for (p = lo; p < hi; p++)
		if (uf_pagebits_clear(&obj->pages, UF_PG_PRESENT, p)) {
			uf_add(&obj->npresent, (uint64_t)-1);
			more++;
		}
	ext_remove(obj, lo, hi);
	return more;
keep:
	/* the extent cannot go whole (a store error): its zeroed pages get
	 * their bytes back from the store and stay cached */
	for (p = first; p < last; p++) {
		char buf[PAGE_SIZE];
		ssize_t n = 0, r;

		if (!memfd_has_data(obj, p, p + 1))
			continue;
		while (n < (ssize_t)PAGE_SIZE) {
			r = obj->ops->read(obj->store, buf + n, PAGE_SIZE - (size_t)n,
					   (p << PAGE_SHIFT) + (uint64_t)n);
			if (r <= 0)
				break;
			n += r;
		}
		if (n < (ssize_t)PAGE_SIZE)
			memset(buf + (n > 0 ? n : 0), 0, PAGE_SIZE - (size_t)(n > 0 ? n : 0));
		/* (a store that fails here too leaves the page dirty: the
		 * program's next sync reports the store's error) */
		if (pwrite(obj->memfd, buf, PAGE_SIZE, (off_t)(p << PAGE_SHIFT)) != PAGE_SIZE ||
		    n < 0 || uf_pagebits_reserve(&obj->pages, p, 1))
			continue;
		if (uf_pagebits_set(&obj->pages, UF_PG_PRESENT, p) == 0)
			uf_add(&obj->npresent, 1);
	}
	return 0;
}

/*
 * An object is cut at page @first (a truncate to a size inside an
 * extent): the collapsed extent holding @first is split before the memfd
 * shrinks, by a punch of its part past the new end, checked as above.
 * Locking: obj->invalidate_lock held exclusive.
 */
void __uf_huge_cut(struct uf_object *obj, uint64_t first, uint64_t old_last)
{
	uint64_t ext = first / UF_HUGE_PAGES, end = (ext + 1) * UF_HUGE_PAGES;

	if (first % UF_HUGE_PAGES == 0 || !ext_maybe_huge(obj, ext))
		return;
	if (end > old_last)
		end = old_last;
	fallocate(obj->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)(first << PAGE_SHIFT), (off_t)((end - first) << PAGE_SHIFT));
	__uf_huge_punched(obj, first, end);
}

/*
 * Reclaim is about to evict pages [*first, *last]: widen the run to the
 * whole of each collapsed extent it touches, so that no eviction waits on
 * a split (nor is left to a failed one).
 * Locking: obj->invalidate_lock held exclusive.
 */
void __uf_huge_widen(struct uf_object *obj, uint64_t *first, uint64_t *last)
{
	uint64_t e0 = *first / UF_HUGE_PAGES, e1 = *last / UF_HUGE_PAGES;

	if (ext_maybe_huge(obj, e0))
		*first = e0 * UF_HUGE_PAGES;
	if (ext_maybe_huge(obj, e1))
		*last = (e1 + 1) * UF_HUGE_PAGES - 1;
}

/*
 * An object grew from page @first on: pages of a collapsed extent that a
 * truncate could not split off stayed in the memfd, zeroed; they are
 * present again now, and marked so (a write to them must be tracked).
 * Locking: obj->invalidate_lock held exclusive.
 */
void __uf_huge_grown(struct uf_object *obj, uint64_t first)
{
	uint64_t end = (first / UF_HUGE_PAGES + 1) * UF_HUGE_PAGES, p;

	if (!obj->mm || !obj->mm->huge || first % UF_HUGE_PAGES == 0 ||
	    !memfd_has_data(obj, first, end) || uf_pagebits_reserve(&obj->pages, first, end - first))
		return;
	for (p = first; p < end; p++)
		if (memfd_has_data(obj, p, p + 1) &&
		    uf_pagebits_set(&obj->pages, UF_PG_PRESENT, p) == 0)
			uf_add(&obj->npresent, 1);
}

/* ------------------------------------------------------------------ */
/* Per mm                                                              */
/* ------------------------------------------------------------------ */

int uf_huge_init(struct uf_mm *mm)
{
	struct uf_huge *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;

	if (!h)
		return -ENOMEM;
	h->mm = mm;
	pthread_mutex_init(&h->lock, NULL);
	uf_lockdep_class(&h->lock, UF_LK_HUGE);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* the quiet wait */
	pthread_cond_init(&h->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&h->idle, NULL);
	mm->huge = h;
	return 0;
}

/* uf_mm_destroy(): drop what is queued, end the thread (a collapse under
 * way finishes first).  Objects that outlive the mm queue nothing more. */
void uf_huge_stop(struct uf_mm *mm)
{
	struct uf_huge *h = mm->huge;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	h->head = h->n = 0;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	if (h->started)
		uf_thread_join(&h->thread);
	h->started = false;
}

/* With the mm's memory (objects may outlive uf_mm_destroy()).  In a fork
 * child (@child) only the memory goes: the lock may have been held by a
 * thread of the parent, and the thread is not there. */
void uf_huge_free(struct uf_mm *mm, bool child)
{
	struct uf_huge *h = mm->huge;

	if (!h)
		return;
	if (!child) {
		pthread_mutex_destroy(&h->lock);
		pthread_cond_destroy(&h->cond);
		pthread_cond_destroy(&h->idle);
	}
	free(h->q);
	free(h);
	mm->huge = NULL;
}
