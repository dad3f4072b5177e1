// SPDX-License-Identifier: MIT
/*
 * Readahead per stream: the kernel's file_ra_state, one per sequential
 * stream of a mapping.
 *
 * A mapping keeps a small table of streams.  A fault at the page where a
 * stream's last window ended is sequential: the window grows (16 pages,
 * then x4 while under ra_max/4, then x2, up to mm->ra_max) and is filled
 * now.  From the stream's second window on, the two windows after it
 * (mm->ra_max pages each) are filled in the background by the mm's worker
 * (worker.c), on the other CPU while the faulting thread goes on -- the
 * second all but its first page, the marker, which is left a hole (the
 * kernel's PG_readahead page): the stream's thread faults there as it
 * enters that window, and that fault reads the marker alone and queues
 * the next window, marked likewise.  So the worker stays a window ahead of
 * a steady reader, which never waits for a window being read (asynchronous
 * readahead); without the marker the reader would find nothing queued at
 * each window's end and wait for the next window to be read.
 *
 * A fault inside a background window still queued takes the window over
 * and fills it now; one inside a window being filled waits for it (250 ms
 * at most), then finds its page (a minor fault).  Any other fault reads
 * its own page only, and notes a candidate stream starting at the next
 * page, so two threads reading two halves of one mapping each keep their
 * stream.  A candidate that proves sequential starts with the window of
 * the mapping's largest stream (threads reading one mapping in parallel
 * read alike), else with 16 pages.  A fault at the first page of the
 * mapping starts a stream.
 *
 * A window is delivered by a sink (struct uf_ra_sink: ->window,
 * ->release): for a mapping, vma_sink_ops fills the cache the mapping
 * shows.  The same sinks deliver a run-ahead's windows (the end of this
 * file): a served process's region, whose sink copies each window on
 * into the process.
 *
 * Fills never overwrite a present page (filemap.c fills holes only), so a
 * background window that overlaps pages a program wrote loses nothing.
 * Under a cache budget there is no background window: reclaim's slack
 * (reclaim.c) counts one window per handler thread.
 *
 * Locking: ra->lock guards the table; it is a leaf, except that a thread
 * that waits for a background window sleeps on ra->cond with it.  The
 * worker fills under obj->invalidate_lock shared (the
 * order of lockorder.h), never with ra->lock held.  Not mm->vma_lock: store
 * reads never hold up map and unmap.
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RA_STREAMS	8
#define RA_INIT		16	/* pages: a new stream's first window */
#define RA_WAIT_MS	250	/* longest wait for a background window */
#define RA_NONE		UINT64_MAX

enum ra_job_state { RA_IDLE, RA_QUEUED, RA_RUNNING };

struct ra_stream {
	uint64_t next;		/* the page after the stream's last window */
	uint64_t marker;	/* the hole left in the last background window */
	uint64_t used;		/* LRU clock */
	size_t size;		/* pages in the last window; 0: candidate */
	/* the background window: [job_first, job_first + job_n) */
	uint64_t job_first;
	size_t job_n;
	unsigned int job_state;
	uint64_t job_gen;	/* a queued item with another gen is stale */
	/* the window to queue when this one is done (job_n 0: none) */
	uint64_t chain_first;
	size_t chain_n;
};

struct uf_ra_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a background window is done */
	uint64_t clock;
	struct ra_stream s[RA_STREAMS];
};

struct ra_work {
	struct uf_ra_sink sink;	/* its work item, and the delivery */
	struct uf_vma *vma;	/* holds a reference */
	unsigned int idx;
	uint64_t gen;
};

int uf_readahead_init(struct uf_vma *vma)
{
	/* (another address space's VMA: memory its fork does not copy) */
	struct uf_ra_state *ra = uf_vma_remote(vma) ? uf_nocow_alloc(sizeof(*ra)) : calloc(1, sizeof(*ra));
	int i;

	if (!ra)
		return -ENOMEM;
	pthread_mutex_init(&ra->lock, NULL);
	uf_lockdep_class(&ra->lock, UF_LK_RA);
	pthread_cond_init(&ra->cond, NULL);
	for (i = 0; i < RA_STREAMS; i++)
		ra->s[i].next = ra->s[i].marker = RA_NONE;
	vma->ra = ra;
	return 0;
}

void uf_readahead_free(struct uf_vma *vma)
{
	struct uf_ra_state *ra = vma->ra;

	if (!ra)
		return;
	pthread_mutex_destroy(&ra->lock);
	pthread_cond_destroy(&ra->cond);
	if (uf_vma_remote(vma))
		uf_nocow_free(ra);
	else
		free(ra);
	vma->ra = NULL;
}

static void vma_get(struct uf_vma *vma)
{
	pthread_mutex_lock(&vma->ref_lock);
	vma->refs++;
	pthread_mutex_unlock(&vma->ref_lock);
}

/*
 * The window chained behind the one just done becomes the job: return
 * true when @s has one queued now (its gen in *gen).
 * Locking: ra->lock held.
 */
static bool __ra_chain(struct ra_stream *s, uint64_t *gen)
{
	if (!s->chain_n)
		return false;
	s->job_first = s->chain_first;
	s->job_n = s->chain_n;
	s->chain_n = 0;
	s->job_state = RA_QUEUED;
	*gen = ++s->job_gen;
	return true;
}

/*
 * ->window of a mapping's sink: fill [first, first + n) into the cache,
 * which the mapping shows (no copy anywhere else).  Always 0.
 * Locking: none held; takes obj->invalidate_lock shared.
 */
static int vma_window(struct uf_ra_sink *sink, uint64_t first, uint64_t n)
{
	struct uf_vma *vma = ((struct ra_work *)sink)->vma;
	struct uf_object *obj = vma->obj;
	size_t filled = 0;

	/* no mm->vma_lock (see cache_insert() in filemap.c): the VMA is kept
	 * alive by the job's reference */
	if (!__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		/* best effort: a page the store cannot give stays a hole, and
		 * its own fault reports the error */
		uf_object_fill(obj, first, (size_t)n, UF_FILL_ANY, &filled, NULL, vma);
		pthread_rwlock_unlock(&obj->invalidate_lock);
	}
	/* counted before the waiters go on: they may read the statistics */
	uf_add(&vma->stats.readahead_pages, filled);
	uf_add(&vma->mm->stats.readahead_pages, filled);
	return 0;
}

/* ->release of a mapping's sink.  No lock held. */
static void vma_release(struct uf_ra_sink *sink)
{
	struct ra_work *w = (struct ra_work *)sink;

	uf_vma_put(w->vma);
	free(w);
}

/* A mapping's windows are the cache's pages: the sink fills the cache. */
static const struct uf_ra_sink_ops vma_sink_ops = {
	.window		= vma_window,
	.release	= vma_release,
};

/* Fill a background window.  Runs in the worker, no lock held. */
static void ra_work_fn(struct uf_work *work, bool run)
{
	struct ra_work *w = (struct ra_work *)work;
	struct uf_vma *vma = w->vma;
	struct uf_ra_state *ra = vma->ra;
	struct ra_stream *s = &ra->s[w->idx];
	uint64_t first;
	size_t n;

	pthread_mutex_lock(&ra->lock);
	if (!run || s->job_gen != w->gen || s->job_state != RA_QUEUED) {
		if (s->job_gen == w->gen && s->job_state == RA_QUEUED) {
			s->job_state = RA_IDLE;		/* dropped */
			s->chain_n = 0;
		}
		pthread_mutex_unlock(&ra->lock);
		goto out;
	}
	s->job_state = RA_RUNNING;
	first = s->job_first;
	n = s->job_n;
	pthread_mutex_unlock(&ra->lock);

	w->sink.ops->window(&w->sink, first, n);

	pthread_mutex_lock(&ra->lock);
	s->job_state = RA_IDLE;
	pthread_cond_broadcast(&ra->cond);
	/* the stream's reader has passed this window's marker: on to the
	 * next (the item goes to the back of the queue: streams take turns) */
	if (!__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) && __ra_chain(s, &w->gen)) {
		pthread_mutex_unlock(&ra->lock);
		if (uf_worker_queue(vma->mm, &w->sink.work))
			return;
		pthread_mutex_lock(&ra->lock);
		if (s->job_gen == w->gen)
			s->job_state = RA_IDLE;
	}
	s->chain_n = 0;
	pthread_mutex_unlock(&ra->lock);
out:
	w->sink.ops->release(&w->sink);
}

/*
 * The window after @s's last, ra_max pages from s->next: with @marked its
 * first page is the marker, left to the reader, and the pages after it go
 * to the worker -- now, or when the stream's window being filled is done.
 * Sets req's background part when it is to be queued now.
 * Locking: ra->lock held.
 */
static void __ra_next_window(struct uf_vma *vma, struct uf_ra_state *ra, struct ra_stream *s,
			     bool marked, struct uf_ra_req *req)
{
	uint64_t end = DIV_ROUND_UP(__atomic_load_n(&vma->obj->size, __ATOMIC_ACQUIRE), PAGE_SIZE);
	uint64_t m = s->next, first;
	size_t n = vma->mm->ra_max - marked;

	s->size = vma->mm->ra_max;
	if (m >= end)
		return;
	if (s->job_state != RA_IDLE && s->chain_n) {
		/* the reader runs two windows ahead of the worker (it reads a
		 * window's pages as the copy inserts them): no third; it
		 * faults at s->next and reads that window itself */
		s->marker = RA_NONE;
		return;
	}
	first = m + marked;
	if (marked)
		s->marker = m;
	if (n > end - first)
		n = end - first;
	s->next = first + n;
	if (!n)
		return;
	if (s->job_state != RA_IDLE) {
		s->chain_first = first;
		s->chain_n = n;
		return;
	}
	s->job_first = first;
	s->job_n = n;
	s->job_state = RA_QUEUED;
	s->job_gen++;
	req->bg_first = s->job_first;
	req->bg_n = n;
	req->idx = (int)(s - ra->s);
	req->gen = s->job_gen;
}

/* The window after one of @size pages: x4 while small, as the kernel
 * ramps a new stream, then x2, up to ra_max. */
static size_t ra_grow(const struct uf_mm *mm, size_t size)
{
	size_t n = !size ? RA_INIT : size < mm->ra_max / 4 ? 4 * size : 2 * size;

	return n > mm->ra_max ? mm->ra_max : n;
}

/*
 * One pass over the streams for a fault at @pgoff: the stream whose
 * background window holds the page (@in_job, or @in_chain: the window
 * queued behind), whose marker it is, or whose next page it is; and the
 * victim.  -1 where none.
 * Locking: ra->lock held.
 */
static void __ra_scan(struct uf_ra_state *ra, uint64_t pgoff, int *in_job, int *in_chain,
		      int *marker, int *seq, int *victim)
{
	struct ra_stream *s;
	int i;

	*in_job = *in_chain = *marker = *seq = *victim = -1;
	for (i = 0; i < RA_STREAMS; i++) {
		s = &ra->s[i];
		if (s->job_state != RA_IDLE) {
			if (pgoff - s->job_first < s->job_n)
				*in_job = i;
			else if (pgoff - s->chain_first < s->chain_n)
				*in_chain = i;
		} else if (*victim < 0 || s->used < ra->s[*victim].used) {
			*victim = i;
		}
		if (s->marker == pgoff)
			*marker = i;
		else if (s->next == pgoff)
			*seq = i;
	}
}

/*
 * A fault in stream @i's background window: wait for it while the worker
 * fills it (return true: look again), or take it over while still queued.
 * Locking: ra->lock held (the wait drops and retakes it).
 */
static bool __ra_in_job(struct uf_ra_state *ra, int i, struct uf_ra_req *req,
			bool *waited, struct timespec *deadline)
{
	struct ra_stream *s = &ra->s[i];

	s->used = ra->clock;
	if (s->job_state == RA_RUNNING) {
		/*
		 * The worker is filling it: wait, then find the page.  Not
		 * for long: the worker's copy may itself wait for this
		 * handler (a copy fails with EAGAIN until the handlers
		 * have read an unmap or remap event), so after RA_WAIT_MS
		 * the fault reads its own page.
		 */
		if (!*waited) {
			clock_gettime(CLOCK_REALTIME, deadline);
			deadline->tv_nsec += RA_WAIT_MS * 1000000L;
			if (deadline->tv_nsec >= 1000000000L) {
				deadline->tv_sec++;
				deadline->tv_nsec -= 1000000000L;
			}
			*waited = true;
		}
		if (pthread_cond_timedwait(&ra->cond, &ra->lock, deadline) != ETIMEDOUT)
			return true;
		return false;		/* this page only */
	}
	/* still queued: take the window over (the queued item is
	 * stale now), and queue what was to follow it */
	s->job_gen++;
	s->job_state = RA_IDLE;
	req->first = s->job_first;
	req->n = s->job_n;
	if (__ra_chain(s, &req->gen)) {
		req->bg_first = s->job_first;
		req->bg_n = s->job_n;
		req->idx = i;
	}
	return false;
}

/*
 * A sequential fault at @pgoff (stream @seq's next page, or the first page
 * of the mapping, which starts stream @victim): this window now, the next
 * in the background.
 * Locking: ra->lock held.
 */
static void __ra_sequential(struct uf_vma *vma, struct uf_ra_state *ra, uint64_t pgoff,
			    int seq, int victim, bool async, struct uf_ra_req *req)
{
	struct ra_stream *s;
	size_t n;

	if (seq < 0) {
		if (victim < 0)
			return;
		s = &ra->s[victim];
		s->size = 0;
		/* a fault at the start of a mapping is no stream
		 * yet: its window is read alone */
		async = false;
	} else {
		s = &ra->s[seq];
	}
	n = !s->size ? RA_INIT : ra_grow(vma->mm, s->size);
	s->size = n;
	s->used = ra->clock;
	s->marker = RA_NONE;
	s->next = pgoff + n;
	req->n = n;
	/* two windows in the background, the second marked: the
	 * reader's next fault is a window further on */
	if (async) {
		__ra_next_window(vma, ra, s, false, req);
		__ra_next_window(vma, ra, s, true, req);
	}
}

/*
 * uf_readahead_window - the window to fill now for a fault at @pgoff.
 * Sets [req->first, req->first + req->n) to fill before the wake (it holds
 * @pgoff) and
 * may set a background window (req->bg_n pages from req->bg_first) for
 * uf_readahead_submit() once the fill is done.  May sleep while a
 * background window holding @pgoff is being filled.
 * Locking: no ufault lock held; takes ra->lock.
 */
void uf_readahead_window(struct uf_vma *vma, uint64_t pgoff, struct uf_ra_req *req)
{
	struct uf_mm *mm = vma->mm;
	struct uf_ra_state *ra = vma->ra;
	bool async = mm->worker && !mm->budget_pages;
	struct ra_stream *s = NULL;
	struct timespec deadline;
	bool waited = false;
	int in_job, in_chain, marker, seq, victim;

	req->first = pgoff;
	req->n = 1;
	req->bg_n = 0;
	req->idx = -1;
	pthread_mutex_lock(&ra->lock);
	ra->clock++;
again:
	/* one pass: the stream whose background window holds the page,
	 * whose marker it is, or whose next page it is; and the victim */
	__ra_scan(ra, pgoff, &in_job, &in_chain, &marker, &seq, &victim);
	if (in_job >= 0) {
		if (__ra_in_job(ra, in_job, req, &waited, &deadline))
			goto again;
		pthread_mutex_unlock(&ra->lock);
		return;
	}
	if (waited) {
		/* the window it waited for is in: its page is too */
		pthread_mutex_unlock(&ra->lock);
		return;
	}
	if (in_chain >= 0) {
		/* in the window queued behind the one being filled: read it
		 * now (the reader got there first) */
		s = &ra->s[in_chain];
		s->used = ra->clock;
		req->first = s->chain_first;
		req->n = s->chain_n;
		s->chain_n = 0;
		pthread_mutex_unlock(&ra->lock);
		return;
	}
	if (marker >= 0) {
		/* the stream's reader enters its last window: this page now,
		 * the next window in the background */
		s = &ra->s[marker];
		s->marker = RA_NONE;
		s->used = ra->clock;
		if (s->job_state == RA_QUEUED && s->job_first == pgoff + 1) {
			/* the worker has not begun this window: read it now,
			 * with its marker (the reader would wait for it next) */
			s->job_gen++;
			s->job_state = RA_IDLE;
			req->n = 1 + s->job_n;
		}
		__ra_next_window(vma, ra, s, true, req);
		pthread_mutex_unlock(&ra->lock);
		return;
	}
	if (seq >= 0 || pgoff == vma->pgoff) {
		/* sequential: this window now, the next in the background */
		__ra_sequential(vma, ra, pgoff, seq, victim, async, req);
		pthread_mutex_unlock(&ra->lock);
		return;
	}
	/* not part of a stream: this page only; a fault at the next page
	 * would start one */
	if (victim >= 0) {
		s = &ra->s[victim];
		s->next = pgoff + 1;
		s->marker = RA_NONE;
		s->size = 0;
		s->used = ra->clock;
	}
	pthread_mutex_unlock(&ra->lock);
}

/*
 * Hand the background window of @req to the worker.
 * Locking: no ufault lock held (@vma referenced by the caller).
 */
void uf_readahead_submit(struct uf_vma *vma, const struct uf_ra_req *req)
{
	struct uf_ra_state *ra = vma->ra;
	struct ra_stream *s;
	struct ra_work *w;

	if (!req->bg_n)
		return;
	w = malloc(sizeof(*w));
	if (w) {
		w->sink = (struct uf_ra_sink){ .work = { .fn = ra_work_fn },
					       .ops = &vma_sink_ops, .mm = vma->mm };
		w->vma = vma;
		w->idx = (unsigned int)req->idx;
		w->gen = req->gen;
		vma_get(vma);
		if (uf_worker_queue(vma->mm, &w->sink.work))
			return;
		w->sink.ops->release(&w->sink);
	}
	/* no worker: the window is simply not read ahead, and the stream
	 * goes on at its marker */
	pthread_mutex_lock(&ra->lock);
	s = &ra->s[req->idx];
	if (s->job_gen == req->gen) {
		s->job_state = RA_IDLE;
		s->chain_n = 0;
		if (s->marker == req->bg_first - 1) {
			s->next = s->marker;
			s->marker = RA_NONE;
		}
	}
	pthread_mutex_unlock(&ra->lock);
}

/* ------------------------------------------------------------------ */
/* Running ahead of a stream delivered elsewhere: a sink               */
/* ------------------------------------------------------------------ */

/*
 * A stream whose pages are not read through a mapping of the cache -- a
 * served process's region, whose pages reach it only as copies
 * (serve.c) -- would otherwise wait at each window for the window's
 * store read and copy, and only then touch its pages: nothing overlaps.
 * So once a fault has served a stream's window, the mm's worker
 * (worker.c) delivers the windows after it (@win pages each, through the
 * caller's sink: fill, then copy into the process) while the stream's
 * thread touches the one it has, up to UF_RA_AHEAD windows past the
 * window that thread is in.  The first page of each window is left out,
 * a marker (the kernel's PG_readahead page): the thread faults there as
 * it enters the window, and that fault (uf_runahead_check) moves the
 * bound on by a window.  A fault inside the window the worker is
 * copying over (a thread that touches faster than the worker copies, as
 * where a first touch costs no hypervisor exit) claims the window after
 * it and delivers that beside the worker (uf_runahead_claim()), then
 * waits for the worker's (uf_runahead_wait()): both CPUs copy, and the
 * thread faults about once a window, not at every page where it met
 * the copy.  A fault elsewhere in the range (another thread of the
 * process went ahead) is told so, and delivers the rest of its window
 * itself.  A stream
 * that stops being followed gets at most UF_RA_AHEAD windows it may
 * never touch; a fault just past the last window claims the next one and
 * serves it itself, and the worker goes on after it.  One stream per
 * run-ahead: a stream found elsewhere takes it over.
 *
 * Each sink is one work item: it holds what its delivery needs (the
 * caller's references), delivers a window, and is queued again for the
 * next (streams take turns with readahead); the mm's destruction drops or
 * ends it, and its ->release drops what it holds.
 *
 * Locking: ra->lock (UF_LK_AHEAD) is taken alone (no other lock held,
 * none taken under it; a fault sleeps on ra->cur_done with it); ->window
 * runs with no lock held.
 */
void uf_runahead_init(struct uf_runahead *ra, uint64_t end)
{
	pthread_condattr_t ca;
	unsigned int i;

	memset(ra, 0, sizeof(*ra));
	pthread_mutex_init(&ra->lock, NULL);
	uf_lockdep_class(&ra->lock, UF_LK_AHEAD);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ra->cur_done, &ca);
	pthread_condattr_destroy(&ca);
	for (i = 0; i < UF_RA_MARKS; i++)
		ra->mark[i] = RA_NONE;
	ra->end = end;
}

void uf_runahead_destroy(struct uf_runahead *ra)
{
	pthread_cond_destroy(&ra->cur_done);
	pthread_mutex_destroy(&ra->lock);
}

/*
 * uf_runahead_check - where a fault of @owner on @pg stands to the
 * run-ahead: on a marker (UF_RA_MARK: the bound moves on, the owner's
 * thread is there), elsewhere inside its range (UF_RA_IN; *@hi: where the
 * range ends), at its end (UF_RA_NEXT: the next window, @win pages, is
 * claimed for the fault to serve), or neither (UF_RA_NO).
 * Locking: takes ra->lock alone.
 */
enum uf_ra_where uf_runahead_check(struct uf_runahead *ra, const void *owner, uint64_t pg,
				   size_t win, uint64_t *hi)
{
	enum uf_ra_where where = UF_RA_NO;
	uint64_t end = ra->end, want;
	unsigned int i;

	pthread_mutex_lock(&ra->lock);
	if (ra->owner != owner) {
		/* another process's stream, or none */
	} else if (!ra->gone && pg >= ra->lo && pg < ra->hi) {
		where = UF_RA_IN;
		*hi = ra->hi;
		/* only a marker moves the bound: a fault elsewhere in the
		 * range is no sign of the stream going on */
		for (i = 0; i < UF_RA_MARKS && ra->mark[i] != pg; i++)
			;
		if (i < UF_RA_MARKS) {
			where = UF_RA_MARK;
			ra->mark[i] = RA_NONE;
			want = pg + (1 + UF_RA_AHEAD) * (uint64_t)win;
			if (want > ra->want)
				ra->want = want < end ? want : end;
		}
	} else if (!ra->gone && pg == ra->hi && pg > ra->lo && pg < end) {
		where = UF_RA_NEXT;
		ra->hi = end - pg > win ? pg + win : end;
		want = ra->hi + UF_RA_AHEAD * (uint64_t)win;
		if (want > ra->want)
			ra->want = want < end ? want : end;
	}
	pthread_mutex_unlock(&ra->lock);
	return where;
}

/*
 * uf_runahead_kick - after a fault of @owner's stream: with @start, a
 * run-ahead starts after the window [@pg, @end) the fault delivered (any
 * earlier one is left); with @claimed, the fault served the window at the
 * run-ahead's end that it claimed, up to @end.  Return true when the
 * worker is to be set going: the caller then gives uf_runahead_start() a
 * sink (or NULL, when it has none).
 * Locking: takes ra->lock alone.
 */
bool uf_runahead_kick(struct uf_runahead *ra, const void *owner, uint64_t pg, uint64_t end,
		      size_t win, bool start, bool claimed)
{
	uint64_t rend = ra->end, want;
	bool go = false;
	unsigned int i;

	pthread_mutex_lock(&ra->lock);
	if (start && !ra->busy && ra->owner != owner) {
		ra->owner = owner;	/* another process's stream now */
		ra->gone = false;
	}
	if (start && !ra->gone && ra->owner == owner && end > pg && end < rend) {
		for (i = 0; i < UF_RA_MARKS; i++)
			ra->mark[i] = RA_NONE;
		ra->lo = pg;
		ra->hi = end;
		want = end + UF_RA_AHEAD * (uint64_t)win;
		ra->want = want < rend ? want : rend;
	} else if (claimed && end > pg && ra->hi == (rend - pg > win ? pg + win : rend) &&
		   end < ra->hi) {
		ra->hi = end;	/* the rest of the claim was not delivered */
	}
	if (!ra->busy && !ra->gone && ra->owner == owner && ra->hi < ra->want) {
		ra->busy = true;
		go = true;
	}
	pthread_mutex_unlock(&ra->lock);
	return go;
}

/* The window [@first, @first + @n) the worker took was not delivered
 * (its sink said -EBUSY): the range ends before it again, unless a fault
 * claimed past it meanwhile, and its marker is forgotten.  Locking:
 * ra->lock held. */
static void runahead_give_back(struct uf_runahead *ra, uint64_t first, uint64_t n)
{
	unsigned int i;

	if (ra->hi == first + n)
		ra->hi = first;
	for (i = 0; i < UF_RA_MARKS; i++)
		if (ra->mark[i] == first)
			ra->mark[i] = RA_NONE;
}

/* The sink's work item: a window, then itself queued again while the
 * bound is ahead.  Runs in the worker, no lock held. */
static void runahead_work_fn(struct uf_work *work, bool run)
{
	struct uf_ra_sink *sink = (struct uf_ra_sink *)work;
	struct uf_runahead *ra = sink->ra;
	struct uf_mm *mm = sink->mm;
	uint64_t first = 0, n = 0, end = ra->end;
	int ret;

	pthread_mutex_lock(&ra->lock);
	if (run && !__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE) && !ra->gone &&
	    ra->owner == sink->owner && ra->hi < ra->want && ra->hi < end) {
		first = ra->hi;
		n = end - first < sink->win ? end - first : sink->win;
		ra->hi = first + n;
		ra->mark[ra->nmark++ % UF_RA_MARKS] = first;
		ra->cur_lo = first;
		ra->cur_hi = first + n;
	} else {
		ra->busy = false;
	}
	pthread_mutex_unlock(&ra->lock);
	if (n) {
		ret = sink->ops->window(sink, first, n);
		pthread_mutex_lock(&ra->lock);
		ra->cur_lo = ra->cur_hi = 0;
		pthread_cond_broadcast(&ra->cur_done);
		pthread_mutex_unlock(&ra->lock);
		if (!ret && uf_worker_queue(mm, &sink->work))
			return;
		pthread_mutex_lock(&ra->lock);
		ra->busy = false;
		if (ret == -ESRCH)
			ra->gone = true;
		if (ret == -EBUSY)
			runahead_give_back(ra, first, n);
		pthread_mutex_unlock(&ra->lock);
	}
	sink->ops->release(sink);
}

/*
 * uf_runahead_claim - a fault of @owner on @pg inside the window the worker
 * delivers now (a stream that touches faster than the worker copies):
 * claim the window after it, @win pages up to @limit, for the fault to
 * deliver beside the worker (*@first; the worker goes on after it), so
 * that both CPUs copy and the stream then finds both windows in.  Return
 * its pages, or 0 (none claimed: the worker has gone past, another fault
 * has one, or the range ends).  uf_runahead_claimed() when delivered.
 * Locking: takes ra->lock alone.
 */
size_t uf_runahead_claim(struct uf_runahead *ra, const void *owner, uint64_t pg, size_t win,
			 uint64_t limit, uint64_t *first)
{
	uint64_t end = ra->end < limit ? ra->end : limit, want;
	size_t n = 0;

	pthread_mutex_lock(&ra->lock);
	if (ra->owner == owner && !ra->gone && pg >= ra->cur_lo && pg < ra->cur_hi &&
	    ra->hi == ra->cur_hi && ra->fcur_hi == 0 && ra->hi < end) {
		*first = ra->hi;
		n = end - ra->hi < win ? (size_t)(end - ra->hi) : win;
		ra->hi += n;
		ra->fcur_lo = *first;
		ra->fcur_hi = ra->hi;
		want = ra->hi + UF_RA_AHEAD * (uint64_t)win;
		if (want > ra->want)
			ra->want = want < ra->end ? want : ra->end;
	}
	pthread_mutex_unlock(&ra->lock);
	return n;
}

/* The window a fault claimed is delivered.  Locking: takes ra->lock alone. */
void uf_runahead_claimed(struct uf_runahead *ra)
{
	pthread_mutex_lock(&ra->lock);
	ra->fcur_lo = ra->fcur_hi = 0;
	pthread_cond_broadcast(&ra->cur_done);
	pthread_mutex_unlock(&ra->lock);
}

/*
 * uf_runahead_wait - a fault on @pg inside a window being delivered (the
 * worker's, or one a fault claimed) waits until it is (RA_WAIT_MS at
 * most), as a fault on a page of a window being read waits for it: a
 * stream that touches faster than the copies would otherwise overtake
 * them in each window, a fault of its own each time, and copy beside
 * them.
 * Locking: takes ra->lock alone, and sleeps on ra->cur_done with it.
 */
void uf_runahead_wait(struct uf_runahead *ra, uint64_t pg)
{
	struct timespec until;
	bool timed = false;

	pthread_mutex_lock(&ra->lock);
	while ((pg >= ra->cur_lo && pg < ra->cur_hi) || (pg >= ra->fcur_lo && pg < ra->fcur_hi)) {
		if (!timed) {	/* (the clock read only for a wait) */
			until = uf_ns_timespec(uf_now_ns() + RA_WAIT_MS * 1000000ULL);
			timed = true;
		}
		if (pthread_cond_timedwait(&ra->cur_done, &ra->lock, &until))
			break;
	}
	pthread_mutex_unlock(&ra->lock);
}

/*
 * uf_runahead_start - set the worker going with @sink (its ops, mm, owner
 * and win set by the caller) after uf_runahead_kick() said so; NULL: the
 * caller has no sink, and faults deliver it all.
 * Locking: none held; takes ra->lock alone.
 */
void uf_runahead_start(struct uf_runahead *ra, struct uf_ra_sink *sink)
{
	if (sink) {
		sink->ra = ra;
		sink->work.fn = runahead_work_fn;
		if (uf_worker_queue(sink->mm, &sink->work))
			return;
	}
	pthread_mutex_lock(&ra->lock);
	ra->busy = false;		/* no worker: faults serve it all */
	pthread_mutex_unlock(&ra->lock);
	if (sink)
		sink->ops->release(sink);
}
