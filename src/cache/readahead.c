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
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
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
	struct uf_work work;
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

/* Fill a background window.  Runs in the worker, no lock held. */
static void ra_work_fn(struct uf_work *work, bool run)
{
	struct ra_work *w = (struct ra_work *)work;
	struct uf_vma *vma = w->vma;
	struct uf_ra_state *ra = vma->ra;
	struct ra_stream *s = &ra->s[w->idx];
	struct uf_object *obj = vma->obj;
	size_t filled = 0;
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

	/* no mm->vma_lock (see cache_insert() in filemap.c): the VMA is kept
	 * alive by the job's reference */
	if (!__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		/* best effort: a page the store cannot give stays a hole, and
		 * its own fault reports the error */
		uf_object_fill(obj, first, n, UF_FILL_ANY, &filled, NULL, vma);
		pthread_rwlock_unlock(&obj->invalidate_lock);
	}
	/* counted before the waiters go on: they may read the statistics */
	uf_add(&vma->stats.readahead_pages, filled);
	uf_add(&vma->mm->stats.readahead_pages, filled);

	pthread_mutex_lock(&ra->lock);
	s->job_state = RA_IDLE;
	pthread_cond_broadcast(&ra->cond);
	/* the stream's reader has passed this window's marker: on to the
	 * next (the item goes to the back of the queue: streams take turns) */
	if (!__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) && __ra_chain(s, &w->gen)) {
		pthread_mutex_unlock(&ra->lock);
		if (uf_worker_queue(vma->mm, &w->work))
			return;
		pthread_mutex_lock(&ra->lock);
		if (s->job_gen == w->gen)
			s->job_state = RA_IDLE;
	}
	s->chain_n = 0;
	pthread_mutex_unlock(&ra->lock);
out:
	uf_vma_put(vma);
	free(w);
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
	int i, in_job, in_chain, marker, seq, victim;
	size_t n;

	req->first = pgoff;
	req->n = 1;
	req->bg_n = 0;
	req->idx = -1;
	pthread_mutex_lock(&ra->lock);
	ra->clock++;
again:
	/* one pass: the stream whose background window holds the page,
	 * whose marker it is, or whose next page it is; and the victim */
	in_job = in_chain = marker = seq = victim = -1;
	for (i = 0; i < RA_STREAMS; i++) {
		s = &ra->s[i];
		if (s->job_state != RA_IDLE) {
			if (pgoff - s->job_first < s->job_n)
				in_job = i;
			else if (pgoff - s->chain_first < s->chain_n)
				in_chain = i;
		} else if (victim < 0 || s->used < ra->s[victim].used) {
			victim = i;
		}
		if (s->marker == pgoff)
			marker = i;
		else if (s->next == pgoff)
			seq = i;
	}
	if (in_job >= 0) {
		i = in_job;
		s = &ra->s[i];
		s->used = ra->clock;
		if (s->job_state == RA_RUNNING) {
			/*
			 * The worker is filling it: wait, then find the page.  Not
			 * for long: the worker's copy may itself wait for this
			 * handler (a copy fails with EAGAIN until the handlers
			 * have read an unmap or remap event), so after RA_WAIT_MS
			 * the fault reads its own page.
			 */
			if (!waited) {
				clock_gettime(CLOCK_REALTIME, &deadline);
				deadline.tv_nsec += RA_WAIT_MS * 1000000L;
				if (deadline.tv_nsec >= 1000000000L) {
					deadline.tv_sec++;
					deadline.tv_nsec -= 1000000000L;
				}
				waited = true;
			}
			if (pthread_cond_timedwait(&ra->cond, &ra->lock, &deadline) != ETIMEDOUT)
				goto again;
			pthread_mutex_unlock(&ra->lock);
			return;		/* this page only */
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
		if (seq < 0) {
			if (victim < 0) {
				pthread_mutex_unlock(&ra->lock);
				return;
			}
			s = &ra->s[victim];
			s->size = 0;
			/* a fault at the start of a mapping is no stream
			 * yet: its window is read alone */
			async = false;
		} else {
			s = &ra->s[seq];
		}
		n = !s->size ? RA_INIT : ra_grow(mm, s->size);
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
		w->work.fn = ra_work_fn;
		w->vma = vma;
		w->idx = (unsigned int)req->idx;
		w->gen = req->gen;
		vma_get(vma);
		if (uf_worker_queue(vma->mm, &w->work))
			return;
		uf_vma_put(vma);
		free(w);
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
