// SPDX-License-Identifier: MIT
/*
 * Pushing a working set into a process served (serve.c), ahead of its
 * faults: the push thread (uf_object_serve_prefetch).
 * Locking: the order at the top of serve.c.
 */
#define _GNU_SOURCE
#include "as/as.h"
#include "as/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * A thread per process served with a working set (uf_object_serve_prefetch)
 * walks the set in recorded order, in batches of pieces (at most ra_max
 * pages of a run each) cut as a prefetch's claims are (uf_ws_cut(),
 * ws_replay.c).  Of a read-only object with batched reads, a batch's
 * holes are read from the store (uf_object_read_runs: a ->readv store's
 * batch in one call, a file's piece by piece) and copied into the
 * process straight from there, one copy per group of pages that touch;
 * a ->readv store's copy into the cache waits (PUSH_PEND_PAGES) and is
 * made as a fill's (uf_object_insert_read: room made as a fault makes
 * it, the cache stays inside its budget); a local store's pages get
 * none (PUSH_PEND_PAGES says why).  Of any other object, a
 * batch's holes are filled in the cache as the prefetch does
 * (uf_object_fill_runs()), copied on into the process from the fill's
 * buffer.  Then what the cache had is copied over, with UFFDIO_COPY,
 * which never overwrites: a page the process already has
 * (its own fault's, or one it wrote) fails with EEXIST and is skipped,
 * and so is a page the balloon removed.  The handler threads serve the
 * process's faults meanwhile and never wait for it: a fault on a page of
 * the set that is not there yet reads the rest of its run at once
 * (serve_set_window), and faults ahead of the push send it on after them
 * (PUSH_JUMP_GAP).  The thread holds the address space (uf_as_adopt),
 * a reference to the object and one to the set; it stops when the set is
 * done, the process is gone, or the mm is being destroyed.
 */
struct serve_push {
	struct uf_object *obj;
	struct uf_as *as;
	struct uf_ws_set *set;
	/* batches read for the process and not yet in the cache (a
	 * read-only object's: push_batch_direct), oldest first */
	struct uf_fill_batch *pend, **pend_tail;
	uint64_t pend_pages, pend_max;
	/* their bytes: pages [0, arena_used) of arena_pages (a store of
	 * its own ->readv's) */
	char *arena;
	uint64_t arena_pages, arena_used;
	/* of a local store: the buffer each piece is read into for the
	 * process (a piece's pages, used again and again) */
	char *buf;
	struct push_buf *pb;		/* (the thread's batch) */
	/* posted once @as is set: the process is adopted (NULL: it is
	 * not, and the thread ends) -- push_create(), push_go() */
	sem_t go;
	unsigned int tenant;		/* the process's (serve_fair.c) */
	/* runs [a, b) of the set the push went past when a fault met a run
	 * ahead of it (push_walk), to be pushed after the set */
	struct push_skip { size_t a, b; } *skip;
	size_t nskip;
};

/*
 * Pages of a read-only object's set read for the process from a store of
 * its own ->readv and held for the cache at most (PUSH_PEND_PAGES pages,
 * 16 MiB; none under a cache budget): the process's copy comes first,
 * the cache's after the set (or once this many wait).  A process
 * restored from a set touches its pages as fast as they arrive; each
 * page the push copies into the cache first is time the process's first
 * touches wait for.  They wait in one buffer of the thread's (a bounce
 * buffer: huge pages, where the system gives them; a fresh buffer per
 * batch costs a fault per page as the store's read first writes it).
 *
 * A local store's pages (a file's: no ->readv of its own) get no copy
 * in the cache at all.  The kernel's page cache holds them already, and
 * the next process's push reads them from there at the cost of a copy
 * from the cache; a copy into the cache costs a read and a UFFDIO_COPY
 * per piece again, the CPU of a second push, and made after the set it
 * runs while the process still touches the set's last pages, which on a
 * machine of few CPUs trail the push (ufault-bench --only serve-ws:
 * minimal/prefetch 0.62-1.67x with it, 0.95-1.16x without).  Nor do its
 * bytes wait in a buffer: each page held would be fresh memory.
 */
#define PUSH_PEND_PAGES	4096
#define PUSH_LATE_NICE	19	/* the copies into the cache after the set */

/*
 * A process touching its set in recorded order that overtook the push
 * (the push thread waited for a CPU) faults on each run from then on,
 * while the push copies runs it has already: so when two faults in a row
 * meet runs ahead of the push, the second at most PUSH_JUMP_GAP runs
 * after the first (the process goes through the set in its order), the
 * push goes on after the second, and pushes the runs it went past after
 * the set.  One fault far ahead (a touch out of order) moves nothing.
 */
#define PUSH_JUMP_GAP	16

/*
 * A copy into the process met an event (-EAGAIN): read and apply what the
 * fd holds, then try again.  The kernel refuses copies from the moment it
 * queues a non-cooperative event until the process's thread that raised
 * it runs again after the event was read (a balloon's MADV_DONTNEED waits
 * so), which on a busy machine can take milliseconds: past SERVE_TRIES
 * quick tries the push, a background thread, sleeps a millisecond a try,
 * PUSH_TRIES in all (about a second), rather than leave a batch out.
 * Locking: none held.
 */
#define PUSH_TRIES	(SERVE_TRIES + 1000)

static void push_settle(struct uf_as *as, int tries)
{
	uf_uffd_settle(as->uffd);	/* an event first (what is done stays) */
	if (tries >= SERVE_TRIES)
		usleep(1000);
}

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

	for (tries = 0; tries < PUSH_TRIES; tries++) {
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
		push_settle(as, tries);
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

/* Copy object pages [q, q + n) from @buf into every region of the
 * process that shows them.  Return 0 or __push_vma_buf()'s -errno.
 * Locking: as->vma_lock held shared. */
static int __push_regions_buf(struct push_sink *k, uint64_t q, uint64_t n, const char *buf)
{
	struct uf_as *as = k->p->as;
	size_t i;
	int ret = 0;

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
	return ret;
}

/* Locking: obj->invalidate_lock held shared (the fill's); as->vma_lock
 * is only tried (it comes first in the lock order). */
static void push_sink_fn(struct uf_fill_sink *sink, uint64_t q, const char *buf, size_t n)
{
	struct push_sink *k = (struct push_sink *)sink;
	struct uf_as *as = k->p->as;
	int ret;

	if (k->gone || pthread_rwlock_tryrdlock(as->vma_lock))
		return;
	ret = __push_regions_buf(k, q, n, buf);
	pthread_rwlock_unlock(as->vma_lock);
	if (!ret)
		push_done(k, q, n);
	else if (ret == -ESRCH)
		k->gone = true;
}

/*
 * After a batch: copy from the cache what the batch's pieces did not get
 * (what the cache had, or its copy missed); pieces that touch go in one
 * copy.  Return 0, or -ESRCH.
 * Locking: none held.
 */
static int push_rest(struct serve_push *p, const struct uf_ws_run *sorted, const uint64_t *done,
		     size_t npc)
{
	size_t i;
	int ret = 0;

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

static int run_by_start(const void *a, const void *b)
{
	const struct uf_ws_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * One batch of pieces, as a prefetch's claim (ws_replay.c): its holes
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
	return push_rest(p, sorted, done, npc);
}

/* Insert the oldest batch held for the cache, and free it.
 * Locking: none held; takes obj->invalidate_lock shared. */
static void push_pend_insert(struct serve_push *p)
{
	struct uf_fill_batch *b = p->pend;
	struct uf_object *obj = p->obj;
	struct uf_mm *mm = obj->mm;
	size_t filled = 0;

	p->pend = b->next;
	if (!p->pend)
		p->pend_tail = &p->pend;
	p->pend_pages -= b->pages;
	if (!__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE)) {
		uf_reclaim(mm, (size_t)b->pages);	/* room, as a fault makes it */
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		uf_object_insert_read(obj, b, &filled);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		uf_add(&mm->stats.readahead_pages, filled);
	}
	free(b);
	if (!p->pend)
		p->arena_used = 0;
}

/*
 * Copy object pages [q, q + n) from @buf into every region of the process
 * that shows them, as push_sink_fn() does, but waiting for the table's
 * lock: no cache lock is held.  Return 0, or -ESRCH.
 * Locking: takes as->vma_lock shared.
 */
static int push_copy_buf(struct push_sink *k, uint64_t q, uint64_t n, const char *buf)
{
	struct uf_as *as = k->p->as;
	int ret = 0, tries;

	for (tries = 0; tries < PUSH_TRIES; tries++) {
		pthread_rwlock_rdlock(as->vma_lock);
		ret = __push_regions_buf(k, q, n, buf);
		pthread_rwlock_unlock(as->vma_lock);
		if (ret != -EAGAIN)
			break;
		push_settle(as, tries);
	}
	if (!ret)
		push_done(k, q, n);
	return ret == -ESRCH ? ret : 0;
}

/* Pages of a piece of the set at most: a prefetch's (a run's, cut to
 * ra_max). */
static uint64_t push_piece(const struct uf_object *obj)
{
	uint64_t piece = obj->mm->ra_max ? obj->mm->ra_max : 1;

	return piece < UF_READV_PAGES ? piece : UF_READV_PAGES;
}

/*
 * One batch of a read-only object's set: its holes read from the store
 * and copied into the process straight from there; then what the cache
 * had copied over from it.  A store of its own ->readv (a round trip per
 * call) reads the batch in one call, into the arena, where the bytes
 * wait for the cache's copy (p->pend, PUSH_PEND_PAGES).  A local store
 * reads piece by piece into one small buffer, each piece copied on at
 * once (the process may be touching right behind), and the cache gets
 * no copy (see PUSH_PEND_PAGES).
 * Return 0, -ESRCH / -ENODEV to stop, or -EOPNOTSUPP when the read
 * failed (push_batch() then fills the batch as a fault would, and
 * reports the store's errors there).
 * Locking: none held; takes obj->invalidate_lock shared around the read.
 */
static int push_batch_direct(struct serve_push *p, const struct uf_ws_run *pc, size_t npc,
			     uint64_t pages, struct uf_ws_run *sorted, uint64_t *done)
{
	struct push_sink k = { .p = p, .pc = sorted, .done = done, .npc = npc };
	struct uf_object *obj = p->obj;
	struct uf_mm *mm = obj->mm;
	bool held = p->arena_pages != 0;
	size_t step = held ? npc : 1, i, j;
	struct uf_fill_batch *b;
	int ret = 0;

	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		return -ENODEV;
	if (held && p->arena_used + pages > p->arena_pages)
		while (p->pend)
			push_pend_insert(p);
	if (held ? p->arena_used + pages > p->arena_pages : !p->buf)
		return -EOPNOTSUPP;
	memcpy(sorted, pc, npc * sizeof(*pc));
	qsort(sorted, npc, sizeof(*sorted), run_by_start);
	memset(done, 0, npc * sizeof(*done));
	for (j = 0; j < npc && !ret; j += step) {
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		ret = uf_object_read_runs(obj, pc + j, step < npc - j ? step : npc - j,
					  held ? p->arena + (p->arena_used << PAGE_SHIFT) : p->buf,
					  &b);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		if (ret)
			return -EOPNOTSUPP;
		for (i = 0; b && i < b->niov && !ret; i++)
			ret = push_copy_buf(&k, b->iov[i].off >> PAGE_SHIFT,
					    (b->iov[i].len + PAGE_SIZE - 1) >> PAGE_SHIFT,
					    b->iov[i].buf);
		if (b && held) {
			*p->pend_tail = b;
			p->pend_tail = &b->next;
			p->pend_pages += b->pages;
			p->arena_used += b->pages;
		} else if (b) {
			uf_add(&mm->stats.readahead_pages, b->pages);
			free(b);
		}
	}
	if (!ret)
		ret = push_rest(p, sorted, done, npc);
	if (held && p->pend_pages > p->pend_max)
		while (p->pend)
			push_pend_insert(p);
	return ret;
}

/* A push thread's batch: its pieces in recorded order and by first page,
 * and the pages of each copied on by the sink. */
struct push_buf {
	struct uf_ws_run pc[UF_READV_PAGES], sorted[UF_READV_PAGES];
	uint64_t done[UF_READV_PAGES];
};

/* 1 + the place of the run of the set the process's last fault met, if
 * the fault before met one at most PUSH_JUMP_GAP runs before it (and past
 * @next), else 0 (serve_set_window()).
 * Locking: takes as->vma_lock shared. */
static size_t push_met(struct serve_push *p, size_t next)
{
	size_t i, met = 0;

	pthread_rwlock_rdlock(p->as->vma_lock);
	for (i = 0; i < p->as->vt.n; i++) {
		struct uf_vma *v = p->as->vt.vmas[i];
		struct serve_region *r = v->private_data;
		size_t m, prev;

		if (v->vm_ops != &serve_vm_ops || v->obj != p->obj)
			continue;
		m = __atomic_load_n(&r->set_met, __ATOMIC_RELAXED);
		prev = __atomic_load_n(&r->set_met_prev, __ATOMIC_RELAXED);
		if (prev > next && prev < m && m - prev <= PUSH_JUMP_GAP && m > met)
			met = m;
	}
	pthread_rwlock_unlock(p->as->vma_lock);
	return met;
}

/* Note runs [a, b) of the set as gone past (push_walk()). */
static void push_skip_add(struct serve_push *p, size_t a, size_t b)
{
	struct push_skip *s;

	if (p->nskip && p->skip[p->nskip - 1].b == a) {
		p->skip[p->nskip - 1].b = b;
		return;
	}
	s = realloc(p->skip, (p->nskip + 1) * sizeof(*s));
	if (!s)
		return;		/* (those runs are served by their faults) */
	p->skip = s;
	p->skip[p->nskip++] = (struct push_skip){ a, b };
}

/*
 * Push runs [next, last) of the set in batches (*@batch pages the next,
 * doubling), as a prefetch claims them; with @jump, going on after runs
 * the process's faults met ahead of the push (PUSH_JUMP_GAP).  Return 0, or nonzero
 * to stop.  Locking: none held.
 */
static int push_walk(struct serve_push *p, struct push_buf *pb, size_t next, size_t last,
		     uint64_t *batch, bool jump)
{
	struct uf_object *obj = p->obj;
	uint64_t piece = push_piece(obj), off = 0, pages;
	uint64_t max = __atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE) ? UF_READV_PAGES :
		       UF_WS_BATCH_LOCAL;
	bool batched = uf_object_batched_reads(obj);
	struct serve_fair fair;
	size_t npc, met;
	int ret = 0;

	while (!ret) {
		if (jump && (met = push_met(p, next)) > next && met <= last) {
			push_skip_add(p, next, met);
			next = met;
			off = 0;
		}
		npc = uf_ws_cut(p->set->runs, last, &next, &off, piece, batched ? *batch : piece,
				pb->pc, &pages);
		if (!npc)
			break;
		if (*batch < max)
			*batch *= 2;
		/* its time the process's tenant's: pushed low, and late, when
		 * that tenant is over its share (this thread is its own; the
		 * runs gone past, @jump false, are pushed low anyway) */
		serve_fair_begin(p->tenant, &fair, jump, UINT_MAX);
		ret = -EOPNOTSUPP;
		if (obj->readonly && batched)
			ret = push_batch_direct(p, pb->pc, npc, pages, pb->sorted, pb->done);
		if (ret == -EOPNOTSUPP)
			ret = push_batch(p, pb->pc, npc, pages, pb->sorted, pb->done);
		serve_fair_end(&fair);
	}
	return ret;
}

/* The push thread: the set in batches of pieces, as a prefetch claims
 * them.  Locking: none held. */
static void *push_thread(void *arg)
{
	struct serve_push *p = arg;
	struct uf_object *obj = p->obj;
	uint64_t batch = UF_WS_BATCH_FIRST;
	struct push_buf *pb = p->pb;
	struct uf_bounce *arena = NULL;
	int ret = -ENOMEM;
	size_t i;
	sigset_t all;

	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (sem_wait(&p->go) && errno == EINTR)
		;
	if (!p->as)
		pb = NULL;		/* not adopted: nothing to push */
	if (pb && obj->readonly && !p->buf && uf_object_batched_reads(obj)) {
		/* (the arena is a buffer of this thread's: it frees it) */
		p->arena_pages = p->pend_max + UF_READV_PAGES;
		arena = uf_bounce_get(p->arena_pages << PAGE_SHIFT, (void **)&p->arena);
		if (!arena)
			p->arena_pages = 0;	/* (each batch as push_batch() fills it) */
	}
	if (pb)
		ret = push_walk(p, pb, 0, p->set->nruns, &batch, true);
	/* the runs gone past, and the cache's copies for the next process:
	 * background work, which the process still touching its last pages
	 * goes before (the thread ends after them; a destroy of the mm stops
	 * them at the next batch) */
	if (p->pend || p->nskip)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PUSH_LATE_NICE);
	for (i = 0; !ret && i < p->nskip; i++)
		ret = push_walk(p, pb, p->skip[i].a, p->skip[i].b, &batch, false);
	while (p->pend)
		push_pend_insert(p);
	free(p->skip);
	free(p->buf);
	uf_bounce_put(arena);
	free(p->pb);
	if (p->as)
		uf_as_unhold(p->as);
	sem_destroy(&p->go);
	uf_ws_set_put(p->set);
	uf_object_put(p->obj);
	free(p);
	return NULL;
}

/*
 * What a push thread needs, made by the thread that starts it: the
 * process touches its set from the handshake on, and the thread's first
 * piece should wait for nothing but its read (a new thread's first
 * allocations are a new malloc arena's).  Of a local store, the buffer
 * of its pieces; of a ->readv one, the arena's size (the thread takes
 * the arena, a bounce buffer of its own).  Locking: none.
 */
static void push_prepare(struct serve_push *p)
{
	struct uf_object *obj = p->obj;
	size_t i;

	p->pb = malloc(sizeof(*p->pb));
	if (!obj->readonly || !uf_object_batched_reads(obj))
		return;
	for (i = 0; i < p->set->nruns && !obj->mm->budget_pages; i++)
		p->pend_max += p->set->runs[i].len;
	if (p->pend_max > PUSH_PEND_PAGES)
		p->pend_max = PUSH_PEND_PAGES;
	if (!__atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE))
		p->buf = aligned_alloc(PAGE_SIZE, (size_t)push_piece(obj) << PAGE_SHIFT);
}

/*
 * Start a push thread for @set (a reference of its own), before the
 * process is adopted: a new thread waits for a CPU, and the process,
 * running from its handshake on, touches its set meanwhile.  It waits
 * for push_go().  NULL if it cannot be started (the process is served
 * lazily).  Locking: none held.
 */
struct serve_push *push_create(struct uf_object *obj, struct uf_ws_set *set,
			       unsigned int tenant)
{
	struct serve_push *p = malloc(sizeof(*p));
	pthread_attr_t attr;
	pthread_t t;
	int err = -1;

	if (!p)
		return NULL;
	*p = (struct serve_push){ .obj = obj, .set = set, .tenant = tenant };
	p->pend_tail = &p->pend;
	if (sem_init(&p->go, 0, 0)) {
		free(p);
		return NULL;
	}
	push_prepare(p);
	uf_object_get(obj);
	__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
	if (!pthread_attr_init(&attr)) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&t, &attr, push_thread, p);
		pthread_attr_destroy(&attr);
	}
	if (!err)
		return p;
	uf_ws_set_put(set);
	uf_object_put(obj);
	sem_destroy(&p->go);
	free(p->pb);
	free(p->buf);
	free(p);
	return NULL;
}

/* Let push thread @p go: into held @as (the hold passes to the thread),
 * or, with NULL, end.  Locking: none held. */
void push_go(struct serve_push *p, struct uf_as *as)
{
	p->as = as;
	sem_post(&p->go);	/* (a release: the thread reads p->as after) */
}
