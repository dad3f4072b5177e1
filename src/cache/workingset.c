// SPDX-License-Identifier: MIT
/*
 * Working sets: record the pages a run touches, in order of first access,
 * and replay them into the cache ahead of the next cold start (REAP,
 * ASPLOS'21, does this for snapshots of serverless functions).
 *
 * Recording.  An object's cache is a memfd registered MISSING: a page the
 * cache holds is mapped by the kernel with no event, so the only first
 * touches ufault sees are faults on holes.  While a record runs, the
 * object's faults read their own page only (no readahead window, no
 * background window): every page then enters the cache through the fault
 * of its first touch, in any mapping of any address space the mm serves,
 * and uf_filemap_fault() notes it (uf_ws_note()).  uf_object_pread() notes
 * the pages it reads, cached or not.  Pages already cached when the record
 * starts are not seen until they leave the cache and are touched again: a
 * record is meant for a cold object.  The price is one fault per page
 * where readahead would have read a run in one.
 *
 * Watched readahead.  Where ufault can read the program's page tables
 * (PAGEMAP_SCAN, 6.7+, with asynchronous write-protect, so no budget) and
 * every mapping of the object is the mm's own and linear, a record keeps
 * readahead on for faults of those mappings: the pages a window brings in
 * are "pending", and a pending page counts as touched once a mapping
 * shows it present.  For that a mapping must show only what the program
 * touched: the object's mappings are registered WP, which turns the
 * kernel's fault-around off (they stay so until unmapped: dropping the
 * mode would need an unregistration, and a touch meanwhile would put a
 * zero page into the cache); no fill copies a page into them but the
 * faulting one (copy_dest() in filemap.c), nothing populates them, no
 * extent collapses.  Each time the record takes a page (a fault, a
 * pread) it first scans the last WS_RECENT windows and takes their pages
 * now mapped, in page order; uf_object_record_stop() scans every pending
 * page.  So the order holds between faults, and within the pages touched
 * between two faults it is page order.  Another address space's faults
 * (a fork child's, an attached client's) read their page alone, and a
 * fork or a client's mapping ends the watching (uf_ws_unwatch()): a page
 * read ahead before, touched first there, is not seen.  A record does not
 * watch while the mm has such address spaces.
 *
 * Replay.  uf_object_prefetch() reads the file at once (its errors are the
 * caller's) and hands the runs to fillers: the mm's worker (worker.c),
 * which queues itself again every PF_CHUNK pages behind the readahead
 * windows waiting there, and threads of the prefetch's own (one for the
 * file and memory stores, two for a store with ->readv, seven for any
 * other: a remote store's round trips overlap).  They take
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
 * are in (uf_object_populate_cached(), populate.c), to the same end.
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
 * Processes served (serve.c).  A served process's pages are its own
 * anonymous memory: each first touch is a fault there whether the cache
 * holds the page or not, so serve.c notes the pages it copies on a fault
 * (uf_ws_serve_note()) and, while recorded, copies the faulting page
 * alone.  A record of uf_object_record() takes every process served; one
 * of uf_object_serve_record() only the next process served, which claims
 * it (uf_ws_serve_claim()), and nothing else is noted meanwhile.  A set
 * armed by uf_object_serve_prefetch() is handed, referenced, to each
 * process served after; serve.c pushes it into the process's memory.
 *
 * The file (version 1; every integer little-endian):
 *
 *	off  size
 *	  0     4  magic "UFWS"
 *	  4     2  format version, 1
 *	  6     2  what names the object's version: 0 its size alone, 1 a
 *		   file's size and modification time (file and memory stores)
 *	  8     8  the object's size in bytes when the record started
 *	 16     8  mtime, seconds (kind 1; else 0)
 *	 24     4  mtime, nanoseconds (kind 1; else 0)
 *	 28     4  reserved, 0
 *	 32     8  pages recorded
 *	 40     4  runs
 *	 44     4  bytes of run data after the header
 *	 48     4  FNV-1a hash of the run data
 *	 52     4  reserved, 0
 *	 56        run data: per run of consecutive pages, in recorded order,
 *		   two LEB128 varints: the zigzag-encoded distance from the end
 *		   of the previous run (page 0 for the first) to its first
 *		   page, and its length minus one.
 *
 * A run far from the previous one in a 256 MiB object takes 4 bytes: 4096
 * pages in runs of 16 and singles take 8-17 KiB.  A record holds each page
 * once (ws_decode() refuses runs that overlap); pages past the size it
 * names are dropped as it is read, so a replay, even of a file made by
 * hand, costs no more than the object.
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
#include "cache/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WS_MAGIC	"UFWS"
#define WS_VERSION	1
#define WS_HDR_SIZE	56
#define WS_KIND_SIZE	0
#define WS_KIND_FILE	1
#define WS_MAX_BODY	(256U << 20)	/* a larger file is not a record */

#define PF_CHUNK	1024		/* pages per turn of the worker */

/* ws->seen's two maps: pages recorded, and pages read ahead while a
 * watched record runs, not yet seen touched */
#define WS_SEEN		UF_PG_PRESENT
#define WS_PENDING	UF_PG_DIRTY
#define WS_RECENT	2		/* windows scanned at each page taken */
#define WS_SCAN_PAGES	512		/* pages per scan step */

/* the version of an object a record names */
struct ws_version {
	uint16_t kind;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

/*
 * A prefetch has PF_FILLERS fillers (PF_FILLERS_READV over a store with
 * ->readv, PF_FILLERS_REMOTE over any other store that is not a file):
 * the mm's worker (a work item that queues itself again every PF_CHUNK
 * pages) and threads of its own, which take pieces of the set in recorded
 * order from one cursor.  One filler reads the store while another copies
 * into the cache; a remote store's round trips overlap (Redis, 4096 pages,
 * a read per piece: 2 fillers 75.7 ms, 8 35.5 ms, 16 44.5 ms; with ->readv
 * a claim is a batch of pieces, and a few fillers keep the cluster busy
 * while the others copy: 2, 3, 4 and 8 were within the noise).  No filler
 * holds a reference to the object: the object's last put waits for the
 * pieces being filled (@busy) and ends the prefetch (@obj NULL).
 */
#define PF_FILLERS	2
#define PF_FILLERS_REMOTE 8	/* any other store: a round trip a read */
#define PF_FILLERS_READV 3	/* a store with ->readv: a batch a read */
#define PF_BATCH_FIRST	UF_WS_BATCH_FIRST
#define PF_BATCH_LOCAL	UF_WS_BATCH_LOCAL

struct ws_prefetch {
	struct uf_work work;
	struct uf_mm *mm;		/* the worker's */
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* @busy fell to 0 */
	int refs;			/* ws->pf's, and one per filler */
	struct uf_object *obj;		/* NULL once the object is put */
	unsigned int busy;		/* fillers inside a piece */
	unsigned int fillers;		/* fillers not yet ended */
	bool stop;			/* no more pieces (budget, mm gone) */
	bool done;			/* atomic: also read under ws->lock */
	struct uf_ws_run *runs;
	size_t nruns, next;		/* the run to fill next ... */
	uint64_t next_off;		/* ... from this page of it */
	uint64_t batch;			/* pages of the next batched claim */
	uint64_t batch_max;		/* ... as it grows */
	uint64_t inflight;		/* pages claimed, not filled yet (under
					   a budget) */
	uint64_t claimed;		/* pages ever claimed (under a budget) */
	struct uf_ws_run *sorted;		/* the runs by first page */
};

struct uf_ws {
	pthread_mutex_t lock;
	bool recording;			/* atomic: the fault path reads it */
	int tmpfd;			/* the record's temporary file */
	char *path, *tmppath;
	struct ws_version ver;
	struct uf_pagebits seen;		/* WS_SEEN, WS_PENDING */
	uint64_t seen_cap;		/* pages the map was grown to */
	bool watch;			/* readahead on, watched (atomic) */
	uint64_t npend;			/* WS_PENDING pages (atomic read) */
	struct uf_ws_run recent[WS_RECENT];	/* the last windows */
	unsigned int nrecent;
	struct uf_ws_run *runs;
	size_t nruns, runs_cap;
	uint64_t npages;
	bool nomem;			/* a page could not be recorded */
	struct ws_prefetch *pf;		/* the last prefetch, or NULL (written
					   under @lock, read atomically) */
	/* ufault-serve's clients (serve.c): a record of the next process
	 * served alone, and a set pushed into each process served */
	bool serve_only;		/* the record is that process's (atomic) */
	bool serve_claimed;		/* ... which has been served */
	uint64_t rec;			/* the running record's id, or 0 (atomic) */
	uint64_t rec_seq;		/* ids given */
	struct uf_ws_set *serve_set;	/* or NULL */
};

/* ------------------------------------------------------------------ */
/* The object's state                                                  */
/* ------------------------------------------------------------------ */

/* obj->ws, made on first use.  Locking: none (compare-and-swap). */
static struct uf_ws *ws_get(struct uf_object *obj)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE), *exp = NULL;

	if (ws)
		return ws;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	pthread_mutex_init(&ws->lock, NULL);
	uf_lockdep_class(&ws->lock, UF_LK_WS);
	ws->tmpfd = -1;
	if (!__atomic_compare_exchange_n(&obj->ws, &exp, ws, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&ws->lock);
		free(ws);
		ws = exp;
	}
	return ws;
}

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
		/* watched: readahead's window (its pages: uf_ws_filled()) */
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

/* The version of @obj now.  Locking: none. */
static int object_version(struct uf_object *obj, struct ws_version *v)
{
	struct stat st;
	int ret;

	memset(v, 0, sizeof(*v));
	if (obj->ops == &uf_file_store_ops) {
		ret = uf_file_store_stat(obj->store, &st);
		if (ret)
			return ret;
		v->kind = WS_KIND_FILE;
		v->size = (uint64_t)st.st_size;
		v->mtime_sec = (int64_t)st.st_mtim.tv_sec;
		v->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
		return 0;
	}
	v->kind = WS_KIND_SIZE;
	v->size = uf_object_size(obj);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Recording                                                           */
/* ------------------------------------------------------------------ */

/* Room in ws->seen for [first, first + n).  Locking: ws->lock held. */
static bool __ws_reserve(struct uf_ws *ws, uint64_t first, uint64_t n)
{
	uint64_t end = first + n;

	if (end > ws->seen_cap) {
		uint64_t cap = end > 2 * ws->seen_cap ? end : 2 * ws->seen_cap;

		if (uf_pagebits_grow(&ws->seen, cap))
			return false;
		ws->seen_cap = cap;
	}
	return uf_pagebits_reserve(&ws->seen, first, n) == 0;
}

/* Note page @pg.  Locking: ws->lock held. */
static void __ws_note_page(struct uf_ws *ws, uint64_t pg)
{
	struct uf_ws_run *r;

	if (!__ws_reserve(ws, pg, 1)) {
		ws->nomem = true;
		return;
	}
	if (uf_pagebits_clear(&ws->seen, WS_PENDING, pg))
		__atomic_store_n(&ws->npend, ws->npend - 1, __ATOMIC_RELAXED);
	if (uf_pagebits_set(&ws->seen, WS_SEEN, pg) != 0)
		return;		/* seen before */
	ws->npages++;
	r = ws->nruns ? &ws->runs[ws->nruns - 1] : NULL;
	if (r && r->start + r->len == pg) {
		r->len++;
		return;
	}
	if (ws->nruns == ws->runs_cap) {
		size_t cap = ws->runs_cap ? 2 * ws->runs_cap : 256;
		struct uf_ws_run *n = realloc(ws->runs, cap * sizeof(*n));

		if (!n) {
			uf_pagebits_clear(&ws->seen, WS_SEEN, pg);
			ws->npages--;
			ws->nomem = true;
			return;
		}
		ws->runs = n;
		ws->runs_cap = cap;
	}
	ws->runs[ws->nruns++] = (struct uf_ws_run){ pg, 1 };
}

/* Pages apart that a window may lie from a recent one and join it: a
 * background window starts after its marker page. */
#define WS_JOIN_GAP	16

/*
 * Mark [first, first + n) pending where not recorded.  A fault's window
 * is kept among the recent windows, as the newest; another (a background
 * window the worker fills later) only grows a recent window it lies next
 * to, so that the last faults' windows stay recent.
 * Locking: ws->lock held.
 */
static void __ws_pend(struct uf_ws *ws, uint64_t first, uint64_t n, bool fault)
{
	uint64_t p, lo = UINT64_MAX, hi = 0;
	unsigned int i;

	if (!n || !__ws_reserve(ws, first, n))
		return;		/* (out of memory: these are not watched) */
	for (p = first; p < first + n; p++) {
		if (uf_pagebits_test(&ws->seen, WS_SEEN, p))
			continue;
		if (uf_pagebits_set(&ws->seen, WS_PENDING, p) == 0)
			__atomic_store_n(&ws->npend, ws->npend + 1, __ATOMIC_RELAXED);
		if (p < lo)
			lo = p;
		hi = p + 1;
	}
	if (lo >= hi)
		return;
	for (i = 0; i < ws->nrecent; i++) {
		struct uf_ws_run *r = &ws->recent[i];

		if (r->start <= hi + WS_JOIN_GAP && lo <= r->start + r->len + WS_JOIN_GAP) {
			hi = hi > r->start + r->len ? hi : r->start + r->len;
			lo = lo < r->start ? lo : r->start;
			if (!fault) {
				*r = (struct uf_ws_run){ lo, hi - lo };
				return;
			}
			memmove(r, r + 1, (ws->nrecent - i - 1) * sizeof(*r));
			ws->nrecent--;
			break;
		}
	}
	if (!fault)
		return;
	if (ws->nrecent == WS_RECENT) {
		memmove(ws->recent, ws->recent + 1, (WS_RECENT - 1) * sizeof(ws->recent[0]));
		ws->nrecent--;
	}
	ws->recent[ws->nrecent++] = (struct uf_ws_run){ lo, hi - lo };
}

/*
 * A watched record: pages [first, first + n) are about to be copied into
 * the cache (with @fault, by a fault's fill; else a background window's or
 * a pread's): pending
 * from before a thread can map them until a mapping shows them (ws_scan())
 * or the record notes them.  A page whose copy fails stays pending, and
 * unseen.
 * Locking: any lock above ws->lock may be held (lockorder.h); takes it.
 */
void uf_ws_filled(struct uf_object *obj, uint64_t first, uint64_t n, bool fault)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!ws || !__atomic_load_n(&ws->watch, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&ws->lock);
	if (ws->watch)
		__ws_pend(ws, first, n, fault);
	pthread_mutex_unlock(&ws->lock);
}

/* A scan step's pages seen mapped: bit k is page base + k. */
struct ws_step {
	uint64_t base;
	uint64_t bits[WS_SCAN_PAGES / 64];
};

static void ws_step_mark(void *arg, uint64_t pg)
{
	struct ws_step *st = arg;
	uint64_t k = pg - st->base;

	if (k < WS_SCAN_PAGES)
		st->bits[k / 64] |= 1ULL << (k % 64);
}

/*
 * Take the pending pages of [first, end) that a watched mapping of @obj
 * shows now, in page order, WS_SCAN_PAGES at a time.
 * Locking: takes obj->rmap_lock shared, and ws->lock inside it.
 */
static void ws_scan(struct uf_object *obj, struct uf_ws *ws, uint64_t first, uint64_t end)
{
	int fd = obj->mm->pagemap_fd;

	while (first < end) {
		struct ws_step st = { 0 };
		uint64_t stop, p;
		struct uf_vma *vma;

		pthread_mutex_lock(&ws->lock);
		first = ws->recording ? uf_pagebits_next(&ws->seen, WS_PENDING, first, end) : end;
		pthread_mutex_unlock(&ws->lock);
		if (first >= end)
			break;
		stop = end - first > WS_SCAN_PAGES ? first + WS_SCAN_PAGES : end;
		st.base = first;
		/* (per step: a long scan at the stop holds no map or unmap up) */
		pthread_rwlock_rdlock(&obj->rmap_lock);
		uf_rmap_foreach(vma, obj) {
			uint64_t vend = vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT);
			uint64_t a = first > vma->pgoff ? first : vma->pgoff;
			uint64_t b = stop < vend ? stop : vend;

			/* (a mapping not watched may show pages untouched) */
			if (a < b && !vma->nl_pgoff && (vma->flags & VMA_REG_WP) &&
			    !__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE))
				uf_vma_present(fd, vma,
					       vma->start + ((a - vma->pgoff) << PAGE_SHIFT),
					       vma->start + ((b - vma->pgoff) << PAGE_SHIFT),
					       ws_step_mark, &st);
		}
		pthread_mutex_lock(&ws->lock);
		for (p = first; ws->recording && p < stop; p++)
			if ((st.bits[(p - first) / 64] >> ((p - first) % 64) & 1) &&
			    uf_pagebits_test(&ws->seen, WS_PENDING, p))
				__ws_note_page(ws, p);
		pthread_mutex_unlock(&ws->lock);
		pthread_rwlock_unlock(&obj->rmap_lock);
		first = stop;
	}
}

/* Scan the recent windows, oldest first, and forget those with no page
 * pending left.  Locking: takes obj->rmap_lock shared, ws->lock. */
static void ws_scan_recent(struct uf_object *obj, struct uf_ws *ws)
{
	struct uf_ws_run win[WS_RECENT];
	unsigned int n, i, k;

	pthread_mutex_lock(&ws->lock);
	n = ws->nrecent;
	memcpy(win, ws->recent, n * sizeof(win[0]));
	pthread_mutex_unlock(&ws->lock);
	for (i = 0; i < n; i++)
		ws_scan(obj, ws, win[i].start, win[i].start + win[i].len);
	pthread_mutex_lock(&ws->lock);
	for (i = k = 0; i < ws->nrecent; i++) {
		struct uf_ws_run *r = &ws->recent[i];

		if (uf_pagebits_next(&ws->seen, WS_PENDING, r->start, r->start + r->len) <
		    r->start + r->len)
			ws->recent[k++] = *r;
	}
	ws->nrecent = k;
	pthread_mutex_unlock(&ws->lock);
}

/*
 * A watched record takes a page now: first the pages of the recent
 * windows touched since the last time.  A fault calls it before its fill,
 * whose copy may wake the faulting thread before the page is noted.
 * Locking: no ws->lock, page_lock or lock under rmap_lock held (see
 * src/lib/lockorder.h); takes obj->rmap_lock shared and ws->lock.
 */
void uf_ws_checkpoint(struct uf_object *obj)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (ws && __atomic_load_n(&ws->npend, __ATOMIC_RELAXED))
		ws_scan_recent(obj, ws);
}

/*
 * Pages [first, first + n) of @obj were touched (a fault served) or read
 * (pread): record those seen for the first time, after the recent
 * windows' pages touched before (uf_ws_checkpoint(); not again with
 * @checked, when the caller did it).
 * Locking: as uf_ws_checkpoint().
 */
void uf_ws_note(struct uf_object *obj, uint64_t first, uint64_t n, bool checked)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	uint64_t i;

	if (!ws || !__atomic_load_n(&ws->recording, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&ws->serve_only, __ATOMIC_RELAXED))
		return;
	if (!checked)
		uf_ws_checkpoint(obj);
	pthread_mutex_lock(&ws->lock);
	for (i = 0; ws->recording && !ws->serve_only && i < n; i++)
		__ws_note_page(ws, first + i);
	pthread_mutex_unlock(&ws->lock);
}

/*
 * Is a fault of a served process in record @rec (uf_ws_serve_claim(), 0
 * for none) recorded?  A record of uf_object_record() takes every
 * process; one of uf_object_serve_record() the process that claimed it.
 * Locking: none.
 */
bool uf_ws_serve_recording(struct uf_object *obj, uint64_t rec)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!ws || !__atomic_load_n(&ws->recording, __ATOMIC_ACQUIRE))
		return false;
	return !__atomic_load_n(&ws->serve_only, __ATOMIC_RELAXED) ||
	       (rec && __atomic_load_n(&ws->rec, __ATOMIC_RELAXED) == rec);
}

/* Page @pg reached a served process in record @rec: note it if that is
 * recorded.  Locking: any ufault lock may be held; takes ws->lock. */
void uf_ws_serve_note(struct uf_object *obj, uint64_t rec, uint64_t pg)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!uf_ws_serve_recording(obj, rec))
		return;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording && (!ws->serve_only || ws->rec == rec))
		__ws_note_page(ws, pg);
	pthread_mutex_unlock(&ws->lock);
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t fnv1a(const unsigned char *p, size_t len)
{
	uint32_t h = 2166136261u;

	while (len--) {
		h ^= *p++;
		h *= 16777619u;
	}
	return h;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

/* The record as a file's bytes; *lenp its length.  NULL: no memory. */
static unsigned char *ws_encode(const struct ws_version *ver, const struct uf_ws_run *runs,
				size_t nruns, uint64_t npages, size_t *lenp)
{
	unsigned char *buf = malloc(WS_HDR_SIZE + nruns * 20), *p;
	uint64_t prev_end = 0;
	size_t i;

	if (!buf)
		return NULL;
	p = buf + WS_HDR_SIZE;
	for (i = 0; i < nruns; i++) {
		int64_t d = (int64_t)(runs[i].start - prev_end);

		p += put_varint(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		p += put_varint(p, runs[i].len - 1);
		prev_end = runs[i].start + runs[i].len;
	}
	memset(buf, 0, WS_HDR_SIZE);
	memcpy(buf, WS_MAGIC, 4);
	put_le(buf + 4, WS_VERSION, 2);
	put_le(buf + 6, ver->kind, 2);
	put_le(buf + 8, ver->size, 8);
	put_le(buf + 16, (uint64_t)ver->mtime_sec, 8);
	put_le(buf + 24, ver->mtime_nsec, 4);
	put_le(buf + 32, npages, 8);
	put_le(buf + 40, nruns, 4);
	put_le(buf + 44, (uint64_t)(p - buf - WS_HDR_SIZE), 4);
	put_le(buf + 48, fnv1a(buf + WS_HDR_SIZE, (size_t)(p - buf - WS_HDR_SIZE)), 4);
	*lenp = (size_t)(p - buf);
	return buf;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Free what a record holds.  Locking: ws->lock held, or the ws unshared. */
static void __ws_record_free(struct uf_ws *ws)
{
	if (ws->tmpfd >= 0)
		close(ws->tmpfd);
	ws->tmpfd = -1;
	free(ws->path);
	free(ws->tmppath);
	ws->path = ws->tmppath = NULL;
	free(ws->runs);
	ws->runs = NULL;
	ws->nruns = ws->runs_cap = 0;
	uf_pagebits_free(&ws->seen);
	ws->seen_cap = 0;
	ws->npages = 0;
	ws->nomem = false;
	__atomic_store_n(&ws->watch, false, __ATOMIC_RELEASE);
	__atomic_store_n(&ws->npend, 0, __ATOMIC_RELAXED);
	ws->nrecent = 0;
}

/* A record ended: its bytes and files, written with no lock held. */
struct ws_out {
	int fd;				/* the temporary file */
	char *path, *tmppath;
	unsigned char *buf;
	size_t len;
	int ret;			/* pages recorded, or -errno */
};

/*
 * End the record: encode it into @out, which takes its files over, and
 * free the rest.  Locking: ws->lock held.
 */
static void __ws_record_end(struct uf_ws *ws, struct ws_out *out)
{
	__atomic_store_n(&ws->recording, false, __ATOMIC_RELEASE);
	__atomic_store_n(&ws->rec, 0, __ATOMIC_RELAXED);
	*out = (struct ws_out){ .fd = ws->tmpfd, .path = ws->path, .tmppath = ws->tmppath };
	ws->tmpfd = -1;
	ws->path = ws->tmppath = NULL;
	out->ret = ws->npages > INT_MAX ? INT_MAX : (int)ws->npages;
	if (ws->serve_only && !ws->serve_claimed)
		out->ret = -ESRCH;	/* nobody to record: an older record stays */
	else if (ws->nomem)
		out->ret = -ENOMEM;
	else if (!(out->buf = ws_encode(&ws->ver, ws->runs, ws->nruns, ws->npages, &out->len)))
		out->ret = -ENOMEM;
	__ws_record_free(ws);
}

/*
 * Write an ended record: into its temporary file, synced, then renamed
 * over the path (the temporary file is removed on error).  Return the
 * pages recorded, or -errno.  Locking: none held (file I/O: a fault
 * never waits for it).
 */
static int ws_out_write(struct ws_out *out)
{
	int ret = out->ret < 0 ? out->ret : 0;

	if (!ret)
		ret = write_all(out->fd, out->buf, out->len);
	if (!ret && fsync(out->fd) < 0)
		ret = -errno;
	if (!ret && rename(out->tmppath, out->path) < 0)
		ret = -errno;
	if (ret)
		unlink(out->tmppath);
	close(out->fd);
	free(out->buf);
	free(out->path);
	free(out->tmppath);
	return ret ? ret : out->ret;
}

static bool __pf_running(struct ws_prefetch *pf);

/*
 * Watch readahead for record @rec of @obj (see the top of this file) when
 * the mm can and every mapping of @obj is the mm's own and linear: those
 * not registered WP are registered so now; a mapping made later is
 * registered so by uf_vma_register().
 * Locking: takes mm->vma_lock exclusive, obj->rmap_lock exclusive and
 * ws->lock inside them.
 */
static void ws_watch_start(struct uf_object *obj, struct uf_ws *ws, uint64_t rec)
{
	struct uf_mm *mm = obj->mm;
	struct uf_vma *vma;
	bool ok;

	if (!mm->wp_async || mm->pagemap_fd < 0 || mm->budget_pages)
		return;
	pthread_rwlock_wrlock(&mm->vma_lock);
	pthread_rwlock_wrlock(&obj->rmap_lock);
	/* (another address space, a fork child's or an attached client's,
	 * may map @obj: the kernel maps what is cached there unseen) */
	ok = !uf_object_forked(obj) && !__atomic_load_n(&mm->nchildren, __ATOMIC_ACQUIRE);
	uf_rmap_foreach(vma, obj)
		if (uf_vma_remote(vma) || vma->nl_pgoff || __atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE))
			ok = false;
	uf_rmap_foreach(vma, obj) {
		if (!ok || (vma->flags & VMA_REG_WP))
			continue;
		if (uf_uffd_register(&mm->uffd, vma->start, vma->end - vma->start, true))
			ok = false;
		else
			__atomic_store_n(&vma->flags, vma->flags | VMA_REG_WP, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&ws->lock);
	if (ok && ws->recording && ws->rec == rec)
		__atomic_store_n(&ws->watch, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ws->lock);
	pthread_rwlock_unlock(&obj->rmap_lock);
	pthread_rwlock_unlock(&mm->vma_lock);
}

/* Is readahead of @obj watched by a record now?  Locking: none. */
bool uf_ws_watching(struct uf_object *obj)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	return ws && __atomic_load_n(&ws->watch, __ATOMIC_ACQUIRE);
}

/*
 * Another address space maps @obj (a fork child, an attached client):
 * its mappings are not watched, so readahead stops for the rest of the
 * record (the pages pending are still taken where the mm's own mappings
 * show them).
 * Locking: takes ws->lock.
 */
void uf_ws_unwatch(struct uf_object *obj)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!ws || !__atomic_load_n(&ws->watch, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&ws->lock);
	__atomic_store_n(&ws->watch, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ws->lock);
}

/* Start a record of @obj into @path: of every address space, or with
 * @serve_only of the next process served alone.
 * Locking: takes ws->lock, and pf->lock inside it. */
static int ws_record_start(struct uf_object *obj, const char *path, bool serve_only)
{
	struct ws_version ver;
	struct uf_ws *ws;
	char *p, *tmp;
	uint64_t rec;
	int fd, ret;

	if (!obj || !path || !*path || uf_object_orphaned(obj))
		return -EINVAL;
	if (obj->attach)
		return -EOPNOTSUPP;	/* (the server's to do) */
	if (uf_object_forked(obj))
		return -ECHILD;
	ws = ws_get(obj);
	if (!ws)
		return -ENOMEM;
	ret = object_version(obj, &ver);
	if (ret)
		return ret;
	p = strdup(path);
	tmp = malloc(strlen(path) + 16);
	if (!p || !tmp) {
		free(p);
		free(tmp);
		return -ENOMEM;
	}
	sprintf(tmp, "%s.tmp.XXXXXX", path);

	pthread_mutex_lock(&ws->lock);
	if (ws->recording || (ws->pf && __pf_running(ws->pf)) || ws->serve_set) {
		ret = -EBUSY;
		goto fail;
	}
	/* the temporary file now, beside @path (rename needs one file
	 * system): a directory that cannot hold it is this call's error */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	ws->tmpfd = fd;
	ws->path = p;
	ws->tmppath = tmp;
	ws->ver = ver;
	__atomic_store_n(&ws->serve_only, serve_only, __ATOMIC_RELAXED);
	ws->serve_claimed = false;
	__atomic_store_n(&ws->rec, ++ws->rec_seq, __ATOMIC_RELAXED);
	__atomic_store_n(&ws->recording, true, __ATOMIC_RELEASE);
	rec = ws->rec;
	pthread_mutex_unlock(&ws->lock);
	if (!serve_only)
		ws_watch_start(obj, ws, rec);
	return 0;
fail:
	pthread_mutex_unlock(&ws->lock);
	free(p);
	free(tmp);
	return ret;
}

UF_EXPORT int uf_object_record(struct uf_object *obj, const char *path)
{
	return ws_record_start(obj, path, false);
}

UF_EXPORT int uf_object_serve_record(struct uf_object *obj, const char *path)
{
	return ws_record_start(obj, path, true);
}

/* Locking: takes ws->lock; writes the file with no lock held. */
UF_EXPORT int uf_object_record_stop(struct uf_object *obj)
{
	struct ws_out out = { .fd = -1 };
	struct uf_ws *ws;
	int ret;

	if (!obj)
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	if (!ws)
		return -EINVAL;
	if (__atomic_load_n(&ws->npend, __ATOMIC_RELAXED)) {
		/* every page read ahead that a mapping shows now (the scan
		 * steps over what is not pending) */
		uint64_t cap;

		pthread_mutex_lock(&ws->lock);
		cap = ws->seen_cap;
		pthread_mutex_unlock(&ws->lock);
		ws_scan(obj, ws, 0, cap);
	}
	pthread_mutex_lock(&ws->lock);
	if (ws->recording)
		__ws_record_end(ws, &out);
	ret = out.fd < 0 ? -EINVAL : 0;	/* (a record holds its temporary file) */
	pthread_mutex_unlock(&ws->lock);
	return ret ? ret : ws_out_write(&out);
}

/* ------------------------------------------------------------------ */
/* The file                                                            */
/* ------------------------------------------------------------------ */

static int get_varint(const unsigned char **pp, const unsigned char *end, uint64_t *v)
{
	const unsigned char *p = *pp;
	unsigned int shift = 0;

	*v = 0;
	for (;;) {
		if (p == end || shift > 63)
			return -EINVAL;
		if (shift == 63 && (*p & 0x7e))
			return -EINVAL;		/* past 64 bits */
		*v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
		if (!(*p++ & 0x80))
			break;
	}
	*pp = p;
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct uf_ws_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Leave out of @runs (*@n of them) the pages from @lim on. */
static void runs_trim(struct uf_ws_run *runs, size_t *n, uint64_t lim)
{
	size_t i, kept = 0;

	for (i = 0; i < *n; i++) {
		if (runs[i].start >= lim)
			continue;
		runs[kept] = runs[i];
		if (runs[kept].len > lim - runs[kept].start)
			runs[kept].len = lim - runs[kept].start;
		kept++;
	}
	*n = kept;
}

/*
 * Decode a record file's bytes: its version, its runs in recorded order,
 * and the same by first page in *@sortedp (both malloc'd).  A record holds
 * each page once (ufault never writes one that does not): runs that
 * overlap make it -EINVAL.  Pages past the size the record names (the
 * object grew while it ran; or a file made by hand) are past EOF
 * whenever the record applies: they are left out.  So a replay reads
 * each page of the object once at most.
 */
static int ws_decode(const unsigned char *buf, size_t len, struct ws_version *ver,
		     struct uf_ws_run **runsp, size_t *nrunsp, struct uf_ws_run **sortedp)
{
	const unsigned char *p, *end;
	uint64_t npages, nruns, body, sum = 0, prev_end = 0, i;
	struct uf_ws_run *runs, *sorted = NULL;
	size_t nsorted;

	if (len < WS_HDR_SIZE || memcmp(buf, WS_MAGIC, 4) || get_le(buf + 4, 2) != WS_VERSION)
		return -EINVAL;
	ver->kind = (uint16_t)get_le(buf + 6, 2);
	ver->size = get_le(buf + 8, 8);
	ver->mtime_sec = (int64_t)get_le(buf + 16, 8);
	ver->mtime_nsec = (uint32_t)get_le(buf + 24, 4);
	npages = get_le(buf + 32, 8);
	nruns = get_le(buf + 40, 4);
	body = get_le(buf + 44, 4);
	if (ver->kind > WS_KIND_FILE || get_le(buf + 28, 4) || get_le(buf + 52, 4) ||
	    body != len - WS_HDR_SIZE || nruns > body / 2 || nruns > npages ||
	    fnv1a(buf + WS_HDR_SIZE, body) != get_le(buf + 48, 4))
		return -EINVAL;
	runs = malloc((nruns ? nruns : 1) * sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	p = buf + WS_HDR_SIZE;
	end = buf + len;
	for (i = 0; i < nruns; i++) {
		uint64_t z, l;
		int64_t d;

		if (get_varint(&p, end, &z) || get_varint(&p, end, &l) || l >= UF_MAX_SIZE >> PAGE_SHIFT)
			goto bad;
		d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
		runs[i].start = prev_end + (uint64_t)d;
		runs[i].len = l + 1;
		if (runs[i].start >= UF_MAX_SIZE >> PAGE_SHIFT ||
		    runs[i].len > (UF_MAX_SIZE >> PAGE_SHIFT) - runs[i].start)
			goto bad;
		prev_end = runs[i].start + runs[i].len;
		sum += runs[i].len;
	}
	if (p != end || sum != npages)
		goto bad;
	sorted = malloc((nruns ? nruns : 1) * sizeof(*sorted));
	if (!sorted) {
		free(runs);
		return -ENOMEM;
	}
	memcpy(sorted, runs, nruns * sizeof(*sorted));
	qsort(sorted, nruns, sizeof(*sorted), cmp_run);
	for (i = 1; i < nruns; i++)
		if (sorted[i].start - sorted[i - 1].start < sorted[i - 1].len)
			goto bad;
	*nrunsp = nsorted = nruns;
	runs_trim(runs, nrunsp, size_pages(ver->size));
	runs_trim(sorted, &nsorted, size_pages(ver->size));
	*runsp = runs;
	*sortedp = sorted;
	return 0;
bad:
	free(sorted);
	free(runs);
	return -EINVAL;
}

/* Read and decode the record at @path (ws_decode()). */
static int ws_read(const char *path, struct ws_version *ver, struct uf_ws_run **runsp,
		   size_t *nrunsp, struct uf_ws_run **sortedp)
{
	unsigned char *buf;
	struct stat st;
	size_t done = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < WS_HDR_SIZE ||
	    (uint64_t)st.st_size > WS_HDR_SIZE + (uint64_t)WS_MAX_BODY) {
		ret = -EINVAL;		/* (a directory, too) */
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	ret = ws_decode(buf, done, ver, runsp, nrunsp, sortedp);
	free(buf);
out:
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Replay                                                              */
/* ------------------------------------------------------------------ */

/* Locking: ws->lock held; takes pf->lock. */
static bool __pf_running(struct ws_prefetch *pf)
{
	bool running;

	pthread_mutex_lock(&pf->lock);
	running = !__atomic_load_n(&pf->done, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&pf->lock);
	return running;
}

/* The run of @sorted (@n runs by first page) holding page @pg, or NULL.
 * Locking: none (sorted runs do not change). */
static const struct uf_ws_run *runs_find(const struct uf_ws_run *sorted, size_t n, uint64_t pg)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sorted[mid].start > pg)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* (a record holds each page once: runs never overlap) */
	return lo && pg - sorted[lo - 1].start < sorted[lo - 1].len ? &sorted[lo - 1] : NULL;
}

static const struct uf_ws_run *pf_find(const struct ws_prefetch *pf, uint64_t pg)
{
	return runs_find(pf->sorted, pf->nruns, pg);
}

/* Drop a reference; the last frees the prefetch.  Locking: takes
 * pf->lock (ws->lock may be held). */
static void pf_put(struct ws_prefetch *pf)
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
	size_t npc, i;

	while (done < max && (obj = pf_claim(pf, pc, &npc, &n, &inflight))) {
		struct uf_mm *mm = obj->mm;
		struct uf_vma *vma = NULL;
		size_t filled = 0;

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

static bool same_version(const struct ws_version *a, const struct ws_version *b)
{
	return a->kind == b->kind && a->size == b->size && a->mtime_sec == b->mtime_sec &&
	       a->mtime_nsec == b->mtime_nsec;
}

/* Locking: takes ws->lock, pf->lock and the worker's queue lock inside
 * it; reads the file with no lock held. */
UF_EXPORT int uf_object_prefetch(struct uf_object *obj, const char *path)
{
	struct ws_version rec = { 0 }, now;
	struct ws_prefetch *pf;
	struct uf_ws_run *runs = NULL, *sorted = NULL;
	struct uf_ws *ws;
	size_t nruns = 0, i, nfill;
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
	pf = ret || !ws ? NULL : calloc(1, sizeof(*pf));
	if (!ret && !pf)
		ret = -ENOMEM;
	if (ret) {
		free(pf);
		free(sorted);
		free(runs);
		return ret;
	}
	pf->sorted = sorted;
	pthread_mutex_init(&pf->lock, NULL);
	uf_lockdep_class(&pf->lock, UF_LK_PREFETCH);
	pthread_cond_init(&pf->idle, NULL);
	pf->work.fn = pf_work_fn;
	pf->mm = obj->mm;
	nfill = obj->ops == &uf_file_store_ops ? PF_FILLERS :
		__atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE) ? PF_FILLERS_READV : PF_FILLERS_REMOTE;
	pf->refs = 1 + (int)nfill;
	pf->fillers = nfill;
	pf->obj = obj;
	pf->runs = runs;
	pf->nruns = nruns;
	pf->batch = PF_BATCH_FIRST;
	pf->batch_max = __atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE) ? UF_READV_PAGES :
			PF_BATCH_LOCAL;

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
		pf->refs = 1;
		pf_put(pf);
		return ret;
	}
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
	return 0;
}

/* ------------------------------------------------------------------ */
/* Processes served (serve.c)                                          */
/* ------------------------------------------------------------------ */

/*
 * A process is being served (uf_object_serve_uffd): the record it is in
 * (a record of uf_object_serve_record() nobody has claimed yet becomes
 * its own; 0: none of its own), and in *@setp the working set to push
 * into it, with a reference, or NULL.  uf_ws_serve_unclaim() if it is
 * not served after all.
 * Locking: takes ws->lock.
 */
uint64_t uf_ws_serve_claim(struct uf_object *obj, struct uf_ws_set **setp)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	uint64_t rec = 0;

	*setp = NULL;
	if (!ws)
		return 0;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording && ws->serve_only && !ws->serve_claimed) {
		ws->serve_claimed = true;
		rec = ws->rec;
	}
	if (ws->serve_set) {
		__atomic_add_fetch(&ws->serve_set->refs, 1, __ATOMIC_RELAXED);
		*setp = ws->serve_set;
	}
	pthread_mutex_unlock(&ws->lock);
	return rec;
}

/* Locking: takes ws->lock. */
void uf_ws_serve_unclaim(struct uf_object *obj, uint64_t rec)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!ws || !rec)
		return;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording && ws->rec == rec)
		ws->serve_claimed = false;
	pthread_mutex_unlock(&ws->lock);
}

/* The run of @set holding @pg, or NULL.  Locking: none. */
const struct uf_ws_run *uf_ws_set_find(const struct uf_ws_set *set, uint64_t pg)
{
	return runs_find(set->sorted, set->nruns, pg);
}

/* Locking: none. */
void uf_ws_set_put(struct uf_ws_set *set)
{
	if (!set || __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(set->runs);
	free(set->sorted);
	free(set);
}

/* Locking: takes ws->lock; reads the file with no lock held. */
UF_EXPORT int uf_object_serve_prefetch(struct uf_object *obj, const char *path)
{
	struct ws_version rec = { 0 }, now;
	struct uf_ws_set *set = NULL, *old;
	struct uf_ws *ws;
	int ret = 0;

	if (!obj || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	ws = ws_get(obj);
	if (!ws)
		return -ENOMEM;
	if (path) {
		set = calloc(1, sizeof(*set));
		if (!set)
			return -ENOMEM;
		set->refs = 1;
		ret = ws_read(path, &rec, &set->runs, &set->nruns, &set->sorted);
		if (!ret)
			ret = object_version(obj, &now);
		if (!ret && !same_version(&rec, &now))
			ret = -ESTALE;
		if (ret) {
			uf_ws_set_put(set);
			return ret;
		}
	}
	pthread_mutex_lock(&ws->lock);
	if (ws->recording) {
		old = set;	/* a record sees the faults a push would spare */
		ret = -EBUSY;
	} else {
		old = ws->serve_set;
		ws->serve_set = set;
	}
	pthread_mutex_unlock(&ws->lock);
	uf_ws_set_put(old);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The object's last put                                               */
/* ------------------------------------------------------------------ */

/*
 * The object's last put: end a record (writing its file), cancel a
 * prefetch (its next turn finds no object), free the state.
 * Locking: none held; takes ws->lock, then pf->lock.
 */
void uf_ws_release(struct uf_object *obj)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	struct ws_out out = { .fd = -1 };
	struct ws_prefetch *pf;

	if (!ws)
		return;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording)
		__ws_record_end(ws, &out);
	pf = ws->pf;
	__atomic_store_n(&ws->pf, NULL, __ATOMIC_RELEASE);
	uf_ws_set_put(ws->serve_set);
	ws->serve_set = NULL;
	pthread_mutex_unlock(&ws->lock);
	if (out.fd >= 0)
		ws_out_write(&out);	/* (an error has no one to go to) */
	if (pf) {
		/* no piece starts now; wait for those being filled */
		pthread_mutex_lock(&pf->lock);
		pf->obj = NULL;
		while (pf->busy)
			pthread_cond_wait(&pf->idle, &pf->lock);
		pthread_mutex_unlock(&pf->lock);
		pf_put(pf);
	}
	pthread_mutex_destroy(&ws->lock);
	free(ws);
	obj->ws = NULL;
}

/*
 * In a fork child: free the child's copy, writing nothing and leaving the
 * parent's temporary file alone.  The prefetch belongs to the parent's
 * worker; the child's copy of it is not freed (its lock may be held).
 */
void uf_ws_free_child(struct uf_object *obj)
{
	struct uf_ws *ws = obj->ws;

	if (!ws)
		return;
	__ws_record_free(ws);
	free(ws);
	obj->ws = NULL;
}
