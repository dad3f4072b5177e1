// SPDX-License-Identifier: MIT
/*
 * Working sets, replayed (see ws_record.c for the record).
 *
 * Replay.  uf_object_prefetch() reads the file at once (its errors are the
 * caller's) and hands the runs to fillers: the mm's worker (worker.c),
 * which queues itself again every PF_CHUNK pages behind the readahead
 * windows waiting there, and threads of the prefetch's own (one for a
 * file, and for a file in memory where the machine has 3 CPUs or more,
 * none on 2; two for a store with ->readv, seven for any other: a remote
 * store's round trips overlap), and fills the head itself before it
 * returns: the first batch (the program's first touches find their pages
 * in rather than racing threads that are still starting, each such race
 * a fault), from a file in memory PF_HEAD_PCT percent of the set at
 * least, and on, beside the fillers, while they alone would fall behind
 * the program's first touches at what this machine charges for one
 * (pf_head_more(); ws.h says why).  They take
 * pieces (at most ra_max pages of one run) from one cursor, in recorded
 * order, and fill them with uf_object_fill(): holes only, under the
 * invalidate lock shared, clamped at i_size, one store read per piece;
 * for a store with ->readv (uf_object_set_readv(): Redis) many pieces a
 * claim, read in one call by uf_object_fill_runs(), so that a batch of
 * runs costs one round trip (and the Redis store one HMGET per extent).
 * Where a shared mapping of the mm shows a piece (not a read-only
 * object's, which is mapped private), the copy goes straight into it, as
 * a fault's does: the program's first touch there is then no fault.  The
 * program's other mappings of the object get the pieces mapped once they
 * are in (uf_object_populate_runs(), populate.c), to the same end.
 * Demand faults are served by the handler threads meanwhile, never behind
 * it: a fault on a page of the set reads the rest of its recorded run at
 * once, and queues no readahead window to compete with the prefetch for
 * the worker (uf_ws_window()).  Under a cache budget it stops where the
 * cache, with the pages other fillers are reading, would pass reclaim's
 * low mark (15/16 of the budget), so that it never makes reclaim evict
 * what it has just read.  A page truncated away
 * meanwhile is not filled (i_size); a punched page is filled from the
 * store, which reads zero there.
 *
 * Locking: ws->lock guards the record and ws->pf; pf->lock guards pf->obj
 * and pf->done.  Both are leaves, ws->lock taken before pf->lock (see
 * src/lib/lockorder.h).  The prefetcher takes obj->invalidate_lock shared around
 * each piece's fill and mm->obj_lock (alone) to count the cache.  A
 * watched record's scans take obj->rmap_lock shared, and ws->lock inside
 * it; its start takes mm->vma_lock and obj->rmap_lock exclusive to
 * register the mappings, and ws->lock inside them.
 */
#define _GNU_SOURCE
#include "cache/ws.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


static const struct uf_ws_run *pf_find(const struct ws_prefetch *pf, uint64_t pg);

/*
 * The window a fault of @vma on @pgoff reads instead of readahead's, if
 * the working set has one: while a record runs, the page alone (a page
 * enters the cache at its first touch) unless readahead is watched; while
 * a prefetch runs, a page of the set
 * brings in the rest of its recorded run now (a prefetch to come would
 * read it so), and no background window competes with the prefetch for
 * the worker.  Return false for readahead's own window.
 * Locking: no ufault lock held; takes ws->lock while a prefetch runs.
 */
bool uf_ws_window(struct uf_object *obj, const struct uf_vma *vma, uint64_t pgoff,
		  struct uf_ra_req *req)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	const struct uf_ws_run *r = NULL;
	struct ws_prefetch *pf;

	if (!ws)
		return false;
	*req = (struct uf_ra_req){ .first = pgoff, .n = 1, .idx = -1 };
	if (__atomic_load_n(&ws->recording, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&ws->serve_only, __ATOMIC_RELAXED))
		/* watched: readahead's window (its pages: ->filled) */
		return !(__atomic_load_n(&ws->watch, __ATOMIC_ACQUIRE) && !uf_vma_remote(vma) &&
			 !vma->nl_pgoff);
	if (!__atomic_load_n(&ws->pf, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&ws->lock);
	pf = ws->pf;
	if (pf && !__atomic_load_n(&pf->done, __ATOMIC_ACQUIRE))
		r = pf_find(pf, pgoff);
	if (r) {
		uint64_t n = r->start + r->len - pgoff;
		size_t max = obj->mm->ra_max ? obj->mm->ra_max : 1;

		req->n = n < max ? (size_t)n : max;
	}
	pthread_mutex_unlock(&ws->lock);
	return r != NULL;
}

/* ------------------------------------------------------------------ */
/* Replay                                                              */
/* ------------------------------------------------------------------ */

/* Locking: ws->lock held; takes pf->lock. */
bool __pf_running(struct ws_prefetch *pf)
{
	bool running;

	pthread_mutex_lock(&pf->lock);
	running = !__atomic_load_n(&pf->done, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&pf->lock);
	return running;
}

static const struct uf_ws_run *pf_find(const struct ws_prefetch *pf, uint64_t pg)
{
	return runs_find(pf->sorted, pf->nruns, pg);
}

/* Drop a reference; the last frees the prefetch.  Locking: takes
 * pf->lock (ws->lock may be held). */
void pf_put(struct ws_prefetch *pf)
{
	int refs;

	pthread_mutex_lock(&pf->lock);
	refs = --pf->refs;
	pthread_mutex_unlock(&pf->lock);
	if (refs)
		return;
	pthread_mutex_destroy(&pf->lock);
	pthread_cond_destroy(&pf->idle);
	free(pf->runs);
	free(pf->sorted);
	free(pf);
}

/* Pages cached by all objects of @mm.  Locking: takes mm->obj_lock. */
static uint64_t cache_total(struct uf_mm *mm)
{
	struct uf_object *o;
	uint64_t total = 0;

	pthread_mutex_lock(&mm->obj_lock);
	for (o = mm->objects; o; o = o->mm_next)
		total += uf_load(&o->npresent);
	pthread_mutex_unlock(&mm->obj_lock);
	return total;
}

/*
 * Cut the next pieces of @runs from the cursor (*@next, *@off) in
 * recorded order, at most @piece pages each (one run's), as many as fit
 * in @room pages (one at least, cut to @room) and UF_READV_PAGES pieces,
 * into @pc; *@pages gets their pages.  Return how many.  The prefetch's
 * claims and serve.c's push cut their batches so.
 * Locking: the caller's (the cursor is its).
 */
size_t uf_ws_cut(const struct uf_ws_run *runs, size_t nruns, size_t *next, uint64_t *off,
		 uint64_t piece, uint64_t room, struct uf_ws_run *pc, uint64_t *pages)
{
	size_t npc = 0;

	*pages = 0;
	while (*next < nruns && *pages < room && npc < UF_READV_PAGES) {
		const struct uf_ws_run *r = &runs[*next];
		uint64_t n = r->len - *off;

		if (n > piece)
			n = piece;
		if (n > room - *pages) {
			if (npc)
				break;	/* the next batch's */
			n = room;
		}
		pc[npc].start = r->start + *off;
		pc[npc++].len = n;
		*pages += n;
		*off += n;
		if (*off == r->len) {
			(*next)++;
			*off = 0;
		}
	}
	return npc;
}

/* Trim pieces @pc (*@npc of them) to @max pages in all.  Locking: none. */
static void pieces_trim(struct uf_ws_run *pc, size_t *npc, uint64_t max)
{
	size_t i;

	for (i = 0; i < *npc && max; i++) {
		if (pc[i].len > max)
			pc[i].len = max;
		max -= pc[i].len;
	}
	*npc = i;
}

/*
 * Take the next pieces of the set, in recorded order: at most ra_max
 * pages of one run each; one piece, or for a store that reads batches
 * (a file, or a store with ->readv: uf_object_set_readv()) as many as fit
 * in pf->batch pages, which grows from PF_BATCH_FIRST to pf->batch_max
 * (the first pages arrive after a short read, the rest in few reads, few
 * round trips, one populate per batch).  Under a cache budget it stops
 * the prefetch where the cache, with the pages other fillers are reading
 * (*@inflight gets this claim's), would pass reclaim's low mark, cutting
 * this claim short.  Return the object (kept until pf_unbusy()), with the
 * pieces in @pc (*@npc of them, none if the set ran out meanwhile; *@pages
 * pages), or NULL when there is none: the set is done, the object put,
 * its mm destroyed.
 * Locking: takes pf->lock, and mm->obj_lock alone between.
 */
static struct uf_object *pf_claim(struct ws_prefetch *pf, struct uf_ws_run *pc, size_t *npc,
				  uint64_t *pages, uint64_t *inflight)
{
	uint64_t room, piece, total = 0, in0, cl0, budget;
	struct uf_object *obj;
	bool batching;

	*npc = 0;
	*pages = 0;
	*inflight = 0;
	pthread_mutex_lock(&pf->lock);
	obj = pf->obj;
	if (obj && uf_object_orphaned(obj))
		pf->stop = true;
	if (!obj || pf->stop || pf->next >= pf->nruns) {
		pthread_mutex_unlock(&pf->lock);
		return NULL;
	}
	pf->busy++;		/* (the object stays till pf_unbusy()) */
	in0 = pf->inflight;
	cl0 = pf->claimed;
	pthread_mutex_unlock(&pf->lock);
	budget = obj->mm->budget_pages;
	if (budget)
		total = cache_total(obj->mm);
	piece = obj->mm->ra_max ? obj->mm->ra_max : 1;
	if (piece > UF_READV_PAGES)
		piece = UF_READV_PAGES;
	batching = uf_object_batched_reads(obj);

	pthread_mutex_lock(&pf->lock);
	if (pf->stop || pf->next >= pf->nruns)
		goto out;
	room = pf->batch;
	if (batching && pf->batch < pf->batch_max)
		pf->batch *= 2;
	*npc = uf_ws_cut(pf->runs, pf->nruns, &pf->next, &pf->next_off, piece,
			 batching ? room : piece, pc, pages);
	pf->taken += *pages;
	if (budget) {
		/*
		 * Counted with the cursor's move, under one lock, so that a
		 * claim is never cut short after a later one went whole: the
		 * pages claimed since the snapshot before cache_total() count
		 * too (some are in @total already: never fewer than there
		 * are), and so the set comes in as its head.
		 */
		uint64_t low = budget - budget / 16, i;
		uint64_t used = total + in0 + (pf->claimed - cl0);

		if (used + *pages > low) {
			pf->stop = true;
			pieces_trim(pc, npc, used < low ? low - used : 0);
		}
		for (i = 0; i < *npc; i++)
			*inflight += pc[i].len;
		pf->inflight += *inflight;
		pf->claimed += *inflight;
	}
out:
	pthread_mutex_unlock(&pf->lock);
	return obj;
}

/* A claim is filled; @inflight pages of it were counted in pf->inflight.
 * Locking: takes pf->lock. */
static void pf_unbusy(struct ws_prefetch *pf, uint64_t inflight)
{
	pthread_mutex_lock(&pf->lock);
	pf->inflight -= inflight;
	if (!--pf->busy)
		pthread_cond_broadcast(&pf->idle);
	pthread_mutex_unlock(&pf->lock);
}

/*
 * A mapping of the mm's own that shows page @pg of @obj, shared and
 * linear, with a reference, or NULL: the pieces are copied straight into
 * it, which fills the cache and maps the pages there in one copy (as a
 * fault's fill does), sparing the program a fault of its own later.
 * Locking: obj->invalidate_lock held shared; takes obj->rmap_lock shared
 * and vma->ref_lock inside it.
 */
static struct uf_vma *pf_vma_get(struct uf_object *obj, uint64_t pg)
{
	struct uf_vma *vma;

	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(vma, obj) {
		if (!(vma->flags & VMA_SHARED) || (vma->flags & VMA_PRIV_MAP) || vma->nl_pgoff ||
		    uf_vma_remote(vma) || __atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || pg < vma->pgoff ||
		    pg - vma->pgoff >= (vma->end - vma->start) >> PAGE_SHIFT)
			continue;
		pthread_mutex_lock(&vma->ref_lock);
		vma->refs++;
		pthread_mutex_unlock(&vma->ref_lock);
		break;
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
	return vma;
}

/*
 * Fill the claim @pc (@npc pieces) of @obj; @inflight pages of it were
 * counted in pf->inflight.  Locking: takes obj->invalidate_lock shared
 * around the fill, then pf->lock.
 */
static void pf_fill_claim(struct ws_prefetch *pf, struct uf_object *obj,
			  const struct uf_ws_run *pc, size_t npc, uint64_t inflight)
{
	struct uf_mm *mm = obj->mm;
	struct uf_vma *vma = NULL;
	size_t filled = 0, i;

	if (npc) {
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		vma = pf_vma_get(obj, pc[0].start);
		/* best effort: a page the store cannot give stays a
		 * hole, and its own fault reports the error */
		if (uf_object_fill_runs(obj, pc, npc, &filled, vma))
			for (i = 0; i < npc; i++)
				uf_object_fill(obj, pc[i].start, (size_t)pc[i].len,
					       UF_FILL_ANY, &filled, NULL, vma);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		/* mapped where the copy could not map them */
		if (filled)
			uf_object_populate_runs(obj, pc, npc);
		uf_add(&mm->stats.readahead_pages, filled);
		if (vma)
			uf_add(&vma->stats.readahead_pages, filled);
	}
	pf_unbusy(pf, inflight);
	/* after: the last reference to an unmapped VMA puts the
	 * object, whose last put waits for the pieces being filled */
	if (vma)
		uf_vma_put(vma);
}

/*
 * Fill pieces of the set until @max pages are done or none is left.
 * Return true when it stopped at @max.  Under a cache budget it stops the
 * prefetch where the cache would pass reclaim's low mark.
 * Locking: takes pf->lock, mm->obj_lock (alone), and obj->invalidate_lock
 * shared around each claim's fill.
 */
static bool pf_fill(struct ws_prefetch *pf, uint64_t max)
{
	struct uf_ws_run pc[UF_READV_PAGES];
	uint64_t n, done = 0, inflight;
	struct uf_object *obj;
	size_t npc;

	while (done < max && (obj = pf_claim(pf, pc, &npc, &n, &inflight))) {
		pf_fill_claim(pf, obj, pc, npc, inflight);
		done += n;
	}
	return done >= max;
}

/*
 * A filler ends.  The last one ends the prefetch: it is done, and the
 * object's reference to it goes.  Locking: takes pf->lock, then ws->lock
 * and pf->lock inside it.
 */
static void pf_filler_end(struct ws_prefetch *pf)
{
	struct uf_object *obj;
	bool last;

	pthread_mutex_lock(&pf->lock);
	last = !--pf->fillers;
	obj = pf->obj;
	if (last) {
		__atomic_store_n(&pf->done, true, __ATOMIC_RELEASE);
		if (obj)
			pf->busy++;	/* the object stays while ws->pf goes */
	}
	pthread_mutex_unlock(&pf->lock);
	if (last && obj) {
		struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

		pthread_mutex_lock(&ws->lock);
		if (ws->pf == pf) {
			__atomic_store_n(&ws->pf, NULL, __ATOMIC_RELEASE);
			pf_put(pf);
		}
		pthread_mutex_unlock(&ws->lock);
		pf_unbusy(pf, 0);
	}
	pf_put(pf);
}

/* The worker's turns (or its drop at mm destroy).  Locking: none held. */
static void pf_work_fn(struct uf_work *work, bool run)
{
	struct ws_prefetch *pf = (struct ws_prefetch *)work;

	if (run && pf_fill(pf, PF_CHUNK) && uf_worker_queue(pf->mm, &pf->work))
		return;		/* on at its next turn */
	pf_filler_end(pf);
}

/* A filler thread of the prefetch's own.  Locking: none held. */
static void *pf_thread(void *arg)
{
	struct ws_prefetch *pf = arg;
	sigset_t all;

	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pf_fill(pf, UINT64_MAX);
	pf_filler_end(pf);
	return NULL;
}

/* A prefetch of @runs (@nruns of them, and @sorted by page) into @obj,
 * with *@nfill fillers besides the caller; NULL without memory. */
static struct ws_prefetch *pf_new(struct uf_object *obj, struct uf_ws_run *runs, size_t nruns,
				  struct uf_ws_run *sorted, size_t *nfill)
{
	bool readv = __atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE) != NULL;
	bool file = obj->ops == &uf_file_store_ops;
	struct ws_prefetch *pf = calloc(1, sizeof(*pf));
	size_t i;

	if (!pf)
		return NULL;
	pf->sorted = sorted;
	pthread_mutex_init(&pf->lock, NULL);
	uf_lockdep_class(&pf->lock, UF_LK_PREFETCH);
	pthread_cond_init(&pf->idle, NULL);
	pf->work.fn = pf_work_fn;
	pf->mm = obj->mm;
	for (i = 0; i < nruns; i++)
		pf->npages += runs[i].len;
	if (file && uf_file_store_in_memory(obj->store)) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		*nfill = ncpu > PF_FILLERS ? PF_FILLERS : ncpu > 1 ? (size_t)ncpu - 1 : 1;
		pf->head_min = pf->npages * PF_HEAD_PCT / 100;
	} else {
		*nfill = file ? PF_FILLERS : readv ? PF_FILLERS_READV : PF_FILLERS_REMOTE;
	}
	pf->nfill = (unsigned int)*nfill;
	pf->refs = 2 + (int)*nfill;	/* ws->pf's, the fillers', the caller's */
	pf->fillers = *nfill + 1;	/* the caller fills the head */
	pf->obj = obj;
	pf->runs = runs;
	pf->nruns = nruns;
	pf->batch = PF_BATCH_FIRST;
	pf->batch_max = readv ? UF_READV_PAGES : PF_BATCH_LOCAL;
	return pf;
}

/*
 * What the program pays for its first touch of a page mapped ahead, in ns
 * a page: measured once a process, over PF_PROBE_PAGES pages of anonymous
 * memory one in 16, each put in place by MADV_POPULATE_WRITE, then read,
 * each read timed alone: the median (a preemption in one read does not
 * count).  Where a hypervisor shadows the guest's page tables that first
 * touch is an exit, 3-7 us (docs/performance.md); elsewhere it is a load,
 * tens of ns with the clock's.  0 where it cannot be measured (no
 * MADV_POPULATE_WRITE: before 5.14).
 */
static uint64_t pf_touch_ns(void)
{
	static uint64_t cost;	/* atomic: 0 not yet measured, 1 + ns */
	uint64_t c = __atomic_load_n(&cost, __ATOMIC_RELAXED), t[PF_PROBE_PAGES], t0, x;
	size_t len = PF_PROBE_PAGES * 16 * PAGE_SIZE, i, j;
	volatile const char *p;
	char *map;
	bool ok = true;

	if (c)
		return c - 1;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 0;	/* not measured: again next time */
	madvise(map, len, MADV_NOHUGEPAGE);	/* a page each, not one huge one */
	for (i = 0; ok && i < PF_PROBE_PAGES; i++)
		ok = !madvise(map + i * 16 * PAGE_SIZE, PAGE_SIZE, MADV_POPULATE_WRITE);
	p = map;
	for (i = 0; ok && i < PF_PROBE_PAGES; i++) {
		t0 = uf_now_ns();
		(void)p[i * 16 * PAGE_SIZE];
		x = uf_now_ns() - t0;
		for (j = i; j > 0 && t[j - 1] > x; j--)	/* sorted as they come */
			t[j] = t[j - 1];
		t[j] = x;
	}
	munmap(map, len);
	c = ok ? 1 + t[PF_PROBE_PAGES / 2] : 1;
	__atomic_store_n(&cost, c, __ATOMIC_RELAXED);
	return c - 1;
}

/*
 * Whether the caller fills on (the head, ws.h): under the least head, and
 * then while the rest of the set, at the rate the fillers alone would go,
 * would take longer than the program's first touches of the whole set
 * (@touch ns a page).  The fillers' rate is the prefetch's since @t0 (the
 * caller with them) times nfill / (nfill + 1).  Once the whole set is
 * claimed, true: the caller then waits for the claims being filled
 * (pf_wait_filled()).  Locking: takes pf->lock.
 */
static bool pf_head_more(struct ws_prefetch *pf, uint64_t t0, uint64_t touch)
{
	double el = (double)(uf_now_ns() - t0), k = pf->nfill;
	uint64_t taken;

	pthread_mutex_lock(&pf->lock);
	taken = pf->taken;
	pthread_mutex_unlock(&pf->lock);
	if (taken < pf->head_min || taken >= pf->npages)
		return true;
	if (!touch || !taken)
		return false;	/* not measured: the least head */
	/* rest / (taken / el * k / (k + 1)) > npages * touch */
	return (double)(pf->npages - taken) * el * (k + 1) >
	       (double)pf->npages * (double)touch * (double)taken * k;
}

/* Wait for the claims being filled.  Locking: takes pf->lock. */
static void pf_wait_filled(struct ws_prefetch *pf)
{
	pthread_mutex_lock(&pf->lock);
	while (pf->busy)
		pthread_cond_wait(&pf->idle, &pf->lock);
	pthread_mutex_unlock(&pf->lock);
}

/* The fillers past the worker (@nfill in all): threads of their own. */
static void pf_start_fillers(struct ws_prefetch *pf, size_t nfill)
{
	size_t i;

	for (i = 1; i < nfill; i++) {
		pthread_attr_t attr;
		pthread_t t;
		int err;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&t, &attr, pf_thread, pf);
		pthread_attr_destroy(&attr);
		if (err)
			pf_filler_end(pf);	/* the worker fills alone */
	}
}

UF_EXPORT int uf_object_prefetch(struct uf_object *obj, const char *path)
{
	struct ws_version rec = { 0 }, now;
	struct ws_prefetch *pf = NULL;
	struct uf_ws_run *runs = NULL, *sorted = NULL;
	struct uf_ws *ws;
	size_t nruns = 0, nfill = 0, hnpc = 0;
	uint64_t hn = 0, hinflight = 0, touch, t0;
	bool more;
	struct uf_ws_run hpc[UF_READV_PAGES];
	struct uf_object *hobj;
	int ret;

	if (!obj || !path || uf_object_orphaned(obj))
		return -EINVAL;
	if (obj->attach)
		return -EOPNOTSUPP;	/* (the server's to do) */
	if (uf_object_forked(obj))
		return -ECHILD;
	ret = ws_read(path, &rec, &runs, &nruns, &sorted);
	if (ret)
		return ret;
	ret = object_version(obj, &now);
	if (!ret && !same_version(&rec, &now))
		ret = -ESTALE;
	ws = ret ? NULL : ws_get(obj);
	if (!ret && (!ws || !(pf = pf_new(obj, runs, nruns, sorted, &nfill))))
		ret = -ENOMEM;
	if (ret) {
		free(sorted);
		free(runs);
		return ret;
	}

	/* the head start: the first batch is the caller's to fill while the
	 * fillers start on the next ones, so that the program's first
	 * touches find their pages in, not a race with threads starting */
	touch = pf_touch_ns();
	t0 = uf_now_ns();
	hobj = pf_claim(pf, hpc, &hnpc, &hn, &hinflight);
	pthread_mutex_lock(&ws->lock);
	if (ws->recording || (ws->pf && __pf_running(ws->pf))) {
		ret = -EBUSY;
	} else {
		if (ws->pf)
			pf_put(ws->pf);
		__atomic_store_n(&ws->pf, pf, __ATOMIC_RELEASE);
		if (!uf_worker_queue(obj->mm, &pf->work)) {
			__atomic_store_n(&ws->pf, NULL, __ATOMIC_RELEASE);
			ret = -ENOMEM;	/* no worker thread could start */
		}
	}
	pthread_mutex_unlock(&ws->lock);
	if (ret) {
		if (hobj)
			pf_unbusy(pf, hinflight);
		pf->refs = 1;
		pf_put(pf);
		return ret;
	}
	pf_start_fillers(pf, nfill);
	if (hobj)
		pf_fill_claim(pf, hobj, hpc, hnpc, hinflight);
	/* the rest of the head, a claim at a time beside the fillers (ws.h) */
	do
		more = pf_head_more(pf, t0, touch);
	while (more && pf_fill(pf, 1));
	if (more)	/* the whole set: its last claims too */
		pf_wait_filled(pf);
	pf_filler_end(pf);
	return 0;
}
