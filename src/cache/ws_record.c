// SPDX-License-Identifier: MIT
/*
 * Working sets: record the pages a run touches, in order of first access,
 * and replay them into the cache ahead of the next cold start (REAP,
 * ASPLOS'21, does this for snapshots of serverless functions).  This
 * file: the object's state, recording, and the object's last put; the
 * replay is ws_replay.c's, the processes served ws_serve.c's, the file's
 * format ws_file.c's.
 *
 * Recording.  An object's cache is a memfd registered MISSING: a page the
 * cache holds is mapped by the kernel with no event, so the only first
 * touches ufault sees are faults on holes.  While a record runs, the
 * object's faults read their own page only (no readahead window, no
 * background window): every page then enters the cache through the fault
 * of its first touch, in any mapping of any address space the mm serves,
 * and uf_filemap_fault() notes it (ws_note(), the observer's ->note).
 * uf_object_pread() notes the pages it reads, cached or not.  Pages already cached when the record
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
 * faulting one (copy_dest() in fill.c), nothing populates them, no
 * extent collapses.  Each time the record takes a page (a fault, a
 * pread) it first scans the last WS_RECENT windows and takes their pages
 * now mapped, in page order; uf_object_record_stop() scans every pending
 * page.  So the order holds between faults for the pages of the last
 * WS_RECENT windows, and within the pages touched between two faults it
 * is page order; a page read ahead and touched only after its window left
 * the recent ones is taken at the stop, at the end of the record (of the
 * bench's set, runs and singles placed apart, about 3 pages in 10).  A
 * replay brings those last, and a touch of one before that is a fault
 * that reads its recorded run.  A record kept in order (readahead off)
 * was no faster to replay, from a file or from Redis, so the scans stay
 * this cheap.  Another address space's faults
 * (a fork child's, an attached client's) read their page alone, and a
 * fork or a client's mapping ends the watching (uf_ws_unwatch()): a page
 * read ahead before, touched first there, is not seen.  A record does not
 * watch while the mm has such address spaces.
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
#include <sys/stat.h>
#include <unistd.h>


/* ------------------------------------------------------------------ */
/* The object's state                                                  */
/* ------------------------------------------------------------------ */

static const struct uf_fill_observer_ops ws_observer_ops;

/* obj->ws, made on first use, and obj->observer with it.  Locking: none
 * (compare-and-swap). */
struct uf_ws *ws_get(struct uf_object *obj)
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
		return exp;
	}
	/* the fills report to it from now on (after obj->ws is there) */
	__atomic_store_n(&obj->observer, &ws_observer_ops, __ATOMIC_RELEASE);
	return ws;
}

/* The version of @obj now.  Locking: none. */
int object_version(struct uf_object *obj, struct ws_version *v)
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
void __ws_note_page(struct uf_ws *ws, uint64_t pg)
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
static void ws_filled(struct uf_object *obj, uint64_t first, uint64_t n, bool fault)
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
static void ws_checkpoint(struct uf_object *obj)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (ws && __atomic_load_n(&ws->npend, __ATOMIC_RELAXED))
		ws_scan_recent(obj, ws);
}

/*
 * Pages [first, first + n) of @obj were touched (a fault served) or read
 * (pread): record those seen for the first time, after the recent
 * windows' pages touched before (ws_checkpoint(); not again with
 * @checked, when the caller did it).
 * Locking: as ws_checkpoint().
 */
static void ws_note(struct uf_object *obj, uint64_t first, uint64_t n, bool checked)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	uint64_t i;

	if (!ws || !__atomic_load_n(&ws->recording, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&ws->serve_only, __ATOMIC_RELAXED))
		return;
	if (!checked)
		ws_checkpoint(obj);
	pthread_mutex_lock(&ws->lock);
	for (i = 0; ws->recording && !ws->serve_only && i < n; i++)
		__ws_note_page(ws, first + i);
	pthread_mutex_unlock(&ws->lock);
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
static bool ws_watching(struct uf_object *obj)
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
int ws_record_start(struct uf_object *obj, const char *path, bool serve_only)
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
/* The object's last put                                               */
/* ------------------------------------------------------------------ */

/*
 * The object's last put: end a record (writing its file), cancel a
 * prefetch (its next turn finds no object), free the state.
 * Locking: none held; takes ws->lock, then pf->lock.
 */
static void ws_release(struct uf_object *obj)
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
	obj->observer = NULL;
	obj->ws = NULL;
}

/*
 * In a fork child: free the child's copy, writing nothing and leaving the
 * parent's temporary file alone.  The prefetch belongs to the parent's
 * worker; the child's copy of it is not freed (its lock may be held).
 */
static void ws_free_child(struct uf_object *obj)
{
	struct uf_ws *ws = obj->ws;

	if (!ws)
		return;
	__ws_record_free(ws);
	free(ws);
	obj->observer = NULL;
	obj->ws = NULL;
}

/* What the fills report to (observer.h): a record's and a prefetch's
 * hooks, obj->observer from the first ws_get() on. */
static const struct uf_fill_observer_ops ws_observer_ops = {
	.window		= uf_ws_window,
	.checkpoint	= ws_checkpoint,
	.watching	= ws_watching,
	.filled		= ws_filled,
	.note		= ws_note,
	.release	= ws_release,
	.free_child	= ws_free_child,
};
