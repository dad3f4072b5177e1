/* SPDX-License-Identifier: MIT */
/*
 * The page cache's private header (src/cache/): each file's calls, for
 * the cache itself and the layers above it (fault/, as/).  Its structures
 * are in mm_types.h.
 */
#ifndef UF_CACHE_H
#define UF_CACHE_H

#include "cache/mm_types.h"
#include "store/store.h"


/*
 * vm_area.c: a VMA as the layers below the address space see it: its
 * lifetime and references, the object page an address shows, and (these
 * two) the engine and table lock of the address space it belongs to.
 */
struct uf_vma *uf_vma_alloc(struct uf_mm *mm, size_t len, int prot);
void uf_vma_free(struct uf_vma *vma);
void uf_vma_put(struct uf_vma *vma);
void uf_vma_release(struct uf_vma *vma);
/*
 * rmap.c: the object's mappings (obj->vmas): the mm's own VMAs of it; a child's
 * are in the child's table only.  Linked and unlinked with mm->vma_lock
 * and obj->rmap_lock held exclusive; every walk is uf_rmap_foreach(),
 * with obj->rmap_lock held (any mode), as the kernel walks i_mmap under
 * i_mmap_rwsem; a LOCKDEP build checks that it is.
 */
void __uf_rmap_link(struct uf_vma *vma);
void __uf_rmap_unlink(struct uf_vma *vma);
#define uf_rmap_foreach(vma, obj)						\
	for (uf_lockdep_assert_held(&(obj)->rmap_lock, "obj->vmas"),		\
	     (vma) = (obj)->vmas; (vma); (vma) = (vma)->obj_next)

/* Does a mapping of @obj track writes by write-protect (writeback.c)?
 * Locking: obj->rmap_lock held (any mode). */
static inline bool __uf_object_tracked(struct uf_object *obj)
{
	struct uf_vma *vma;

	uf_rmap_foreach(vma, obj)
		if (__atomic_load_n(&vma->flags, __ATOMIC_RELAXED) & VMA_WP)
			return true;
	return false;
}

/* A fault answered with SIGBUS for @why: counted in @mm's and @vma's stats. */
static inline void uf_count_sigbus_cause(struct uf_mm *mm, struct uf_vma *vma,
					 enum uf_sigbus_cause why)
{
	size_t at = why == UF_SIGBUS_STORE   ? offsetof(struct uf_counters, sigbus_store) :
		    why == UF_SIGBUS_ROOM    ? offsetof(struct uf_counters, sigbus_room) :
		    why == UF_SIGBUS_OUTSIDE ? offsetof(struct uf_counters, sigbus_outside) :
					       offsetof(struct uf_counters, sigbus_other);

	uf_add((uint64_t *)((char *)&mm->stats + at), 1);
	if (vma)
		uf_add((uint64_t *)((char *)&vma->stats + at), 1);
}

/* The object page @addr of @vma shows.
 * Locking: the table's lock held (any mode), for vma->nl_pgoff. */
static inline uint64_t __uf_vma_pgoff(const struct uf_vma *vma, unsigned long addr)
{
	uint64_t idx = (addr - vma->start) >> PAGE_SHIFT;

	return vma->nl_pgoff ? vma->nl_pgoff[idx] & ~NL_WINDOW : vma->pgoff + idx;
}

static inline struct uf_uffd *uf_vma_uffd(const struct uf_vma *vma)
{
	return vma->as->uffd;
}

static inline pthread_rwlock_t *uf_vma_table_lock(const struct uf_vma *vma)
{
	return vma->as->vma_lock;
}

/* Is @vma another process's (as.c)?  Read from the VMA, not its address
 * space: a readahead job's reference keeps the VMA, not the space. */
static inline bool uf_vma_remote(const struct uf_vma *vma)
{
	return vma->remote;
}

/* object.c: object lifetime, and the mm's list of objects (mm->obj_lock) */
bool uf_object_tryget(struct uf_object *obj);
/* Was the object's mm destroyed (object calls other than sync fail)? */
static inline bool uf_object_orphaned(const struct uf_object *obj)
{
	return !obj->mm || __atomic_load_n(&obj->mm->dead, __ATOMIC_ACQUIRE);
}

/* filemap.c */
#define UF_FILL_ALL	UINT64_MAX		/* uf_object_fill: every page */
#define UF_FILL_ANY	(UINT64_MAX - 1)	/* uf_object_fill: best effort */
int uf_object_fill(struct uf_object *obj, uint64_t first, size_t n, uint64_t must,
		   size_t *filled, bool *major, struct uf_vma *vma);
/*
 * While this thread's uf_fill_sink is set, each run of @obj's pages one of
 * its fills has just inserted into the cache is handed to ->fn from the
 * fill's own buffer (the pages' bytes as inserted), with
 * obj->invalidate_lock held shared and no other ufault lock: serve.c
 * copies a fault's pages into the other process from there, with no read
 * back from the memfd.  With @early, ->fn also gets a span of a read-only
 * object read from the store before it is inserted, when every page of it
 * is a hole (the bytes the cache is about to get): the other process need
 * not wait for the copy into the cache.  With @defer as well, ->fn sets
 * @taken when it delivered that whole span, and the copy into the cache
 * is then left to the mm's insert thread (insert.c): the fill returns
 * with the span pending, its pages counted as filled.
 */
struct uf_fill_sink {
	struct uf_object *obj;
	void (*fn)(struct uf_fill_sink *sink, uint64_t pgoff, const char *buf, size_t npages);
	bool early, defer, taken;
};
extern __thread struct uf_fill_sink *uf_fill_sink;
struct uf_ws_run;
#define UF_READV_PAGES	512	/* pages of one ->readv call at most */
int uf_object_fill_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n,
			size_t *filled, struct uf_vma *vma);
bool uf_object_batched_reads(struct uf_object *obj);
/* A batch of a read-only object's holes read from its store and not yet
 * in the cache (uf_object_read_runs(), uf_object_insert_read()); free()
 * it (its bytes are in the caller's buffer). */
struct uf_fill_batch {
	struct uf_fill_batch *next;	/* the caller's */
	uint64_t pages;			/* read */
	size_t niov;
	struct uf_store_iov iov[];	/* groups of holes, in the runs' order */
};
int uf_object_read_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n,
			char *buf, struct uf_fill_batch **bp);
void uf_object_insert_read(struct uf_object *obj, const struct uf_fill_batch *b, size_t *filled);
int uf_object_insert(struct uf_object *obj, uint64_t pgoff, const void *src);
uint64_t uf_object_cache_pages(struct uf_object *obj);
#include "cache/bounce.h"	/* uf_bounce_get(), uf_bounce_put() */

/* fdata->flags, set by uf_filemap_fault(): the page is past EOF (the
 * kernel raises SIGBUS itself on the retry) */
#define UF_FAULT_FLAG_EOF	0x80000000u
/* ... its copy woke the faulting thread (no wake is due) */
#define UF_FAULT_FLAG_WOKEN	0x40000000u

/* pagebits.c, pagebits.h: the present and dirty bits of an object's pages */
#include "cache/pagebits.h"

/* writeback.c */
void uf_vma_present(int fd, const struct uf_vma *vma, unsigned long start, unsigned long end,
		    void (*fn)(void *arg, uint64_t pg), void *arg);
int uf_vma_collect_dirty(struct uf_vma *vma, unsigned long start, unsigned long end);
void __uf_vma_mark_dirty(struct uf_vma *vma, unsigned long start, unsigned long end);
void __uf_vma_mark_written(struct uf_vma *vma, unsigned long start, unsigned long end);
int uf_vma_writeprotect(struct uf_vma *vma, unsigned long start, unsigned long len);
int uf_vma_protect_cached(struct uf_vma *vma, unsigned long start, unsigned long end);
int __uf_object_protect_holes(struct uf_object *obj, uint64_t first, uint64_t n,
			      const struct uf_vma *skip);
int __uf_object_writeback(struct uf_object *obj, uint64_t first, uint64_t last);
int uf_object_sync_range(struct uf_object *obj, uint64_t first, uint64_t last, bool collect);
void __uf_object_protect(struct uf_object *obj, uint64_t first, uint64_t n);
void uf_handle_wp_fault(struct uf_vma *vma, unsigned long addr, uint64_t pgoff);

/* reclaim.c: the cache budget (uf_reclaim() and uf_cache_charge(): reclaim.h) */
void __uf_reclaim_note_fill(struct uf_object *obj, uint64_t pgoff, bool page_locked);

/* Give back @n pages uf_cache_charge() granted and a fill did not add. */
static inline void uf_cache_uncharge(struct uf_mm *mm, size_t n)
{
	if (mm && mm->budget_pages && n)
		uf_add(&mm->charged, -(uint64_t)n);
}

/* worker.c: background work of an mm, a thread a worker */
struct uf_work {
	void (*fn)(struct uf_work *work, bool run);	/* run, or drop */
	struct uf_work *next;
};
int uf_worker_new(struct uf_worker **wp);
void uf_worker_free(struct uf_worker **wp);
bool uf_worker_add(struct uf_worker *w, struct uf_work *work);
int uf_worker_start(struct uf_mm *mm);
void uf_worker_stop(struct uf_mm *mm);
bool uf_worker_queue(struct uf_mm *mm, struct uf_work *work);

/* insert.c: a fill's copy into the cache deferred to a thread (the
 * early sink's, below) */
struct uf_insert;
struct uf_bounce;
int uf_inserts_start(struct uf_mm *mm);
void uf_inserts_stop(struct uf_mm *mm);
struct uf_insert *uf_insert_begin(struct uf_object *obj, uint64_t pg, uint64_t n);
bool uf_insert_queue(struct uf_insert *it, struct uf_bounce **bounce, long *charged);
void uf_insert_end(struct uf_insert *it);
void uf_insert_wait(struct uf_object *obj, uint64_t first, uint64_t last);
void uf_inserts_flush(struct uf_mm *mm);

/* readahead.c */
struct uf_ra_req {
	uint64_t first;			/* fill [first, first + n) now */
	size_t n;
	uint64_t bg_first;		/* then [bg_first, bg_first + bg_n) */
	size_t bg_n;			/* in the background (0: none) */
	int idx;
	uint64_t gen;
};
int uf_readahead_init(struct uf_vma *vma);
void uf_readahead_free(struct uf_vma *vma);
void uf_readahead_window(struct uf_vma *vma, uint64_t pgoff, struct uf_ra_req *req);
void uf_readahead_submit(struct uf_vma *vma, const struct uf_ra_req *req);

/*
 * A run-ahead (readahead.c): readahead's windows for a stream whose pages
 * go somewhere other than a mapping of the cache -- a served process's
 * region (serve.c).  readahead.c decides the windows and runs the worker;
 * a sink delivers each window.
 */
#define UF_RA_AHEAD	2	/* windows run ahead past the stream's */
#define UF_RA_MARKS	(UF_RA_AHEAD + 2)	/* markers remembered */

enum uf_ra_where { UF_RA_NO, UF_RA_MARK, UF_RA_IN, UF_RA_NEXT };

struct uf_runahead {
	pthread_mutex_t lock;		/* UF_LK_AHEAD: taken alone */
	uint64_t end;			/* the stream's limit (a page) */
	/* pages [lo, hi) are delivered, or queued to be; the worker goes
	 * on up to want */
	uint64_t lo, hi, want;
	const void *owner;		/* whose stream (a process) */
	uint64_t mark[UF_RA_MARKS];	/* the last windows' first pages */
	unsigned int nmark;
	bool busy;			/* a sink is queued or running */
	bool gone;			/* the owner is gone */
	/* the window the worker delivers now, and the one after it a fault
	 * claimed beside it (uf_runahead_claim()): [lo, hi) each */
	uint64_t cur_lo, cur_hi, fcur_lo, fcur_hi;
	pthread_cond_t cur_done;	/* ... one is delivered */
};

struct uf_ra_sink;
/*
 * ->window - deliver pages [first, first + n) but the marker (the
 *	window's first page, left to the owner's fault).  Called from the
 *	mm's worker with no lock held.  Return 0, -ESRCH when the owner
 *	is gone (the run-ahead stops for it), or -EBUSY when the window is
 *	not to be delivered now (nothing of it was: the run-ahead gives it
 *	back and stops, and the owner's faults serve it).
 * ->release - the run-ahead is done with the sink: drop what it holds
 *	and free it.  Called with no lock held.
 */
struct uf_ra_sink_ops {
	int (*window)(struct uf_ra_sink *sink, uint64_t first, uint64_t n);
	void (*release)(struct uf_ra_sink *sink);
};

struct uf_ra_sink {
	struct uf_work work;		/* readahead.c's */
	const struct uf_ra_sink_ops *ops;
	struct uf_runahead *ra;
	struct uf_mm *mm;
	const void *owner;
	size_t win;			/* pages per window */
};

void uf_runahead_init(struct uf_runahead *ra, uint64_t end);
void uf_runahead_destroy(struct uf_runahead *ra);
enum uf_ra_where uf_runahead_check(struct uf_runahead *ra, const void *owner, uint64_t pg,
				   size_t win, uint64_t *hi);
bool uf_runahead_kick(struct uf_runahead *ra, const void *owner, uint64_t pg, uint64_t end,
		      size_t win, bool start, bool claimed);
void uf_runahead_start(struct uf_runahead *ra, struct uf_ra_sink *sink);
size_t uf_runahead_claim(struct uf_runahead *ra, const void *owner, uint64_t pg, size_t win,
			 uint64_t limit, uint64_t *first);
void uf_runahead_claimed(struct uf_runahead *ra);
void uf_runahead_wait(struct uf_runahead *ra, uint64_t pg);

/* huge.c: 2 MiB extents of a cache collapsed into huge folios */
#define UF_HUGE_SHIFT	21
#define UF_HUGE_SIZE	(1UL << UF_HUGE_SHIFT)
#define UF_HUGE_PAGES	(UF_HUGE_SIZE >> PAGE_SHIFT)
void *uf_mmap_aligned(size_t len, int prot, int flags, int fd, uint64_t off);
int uf_huge_init(struct uf_mm *mm);
void uf_huge_stop(struct uf_mm *mm);
void uf_huge_free(struct uf_mm *mm, bool child);
void uf_huge_busy(struct uf_mm *mm);	/* (__uf_huge_filled(): huge.h) */
void __uf_huge_punched(struct uf_object *obj, uint64_t first, uint64_t last);
uint64_t __uf_huge_evicted(struct uf_object *obj, uint64_t first, uint64_t last);
void __uf_huge_cut(struct uf_object *obj, uint64_t first, uint64_t old_last);
void __uf_huge_grown(struct uf_object *obj, uint64_t first);
void __uf_huge_widen(struct uf_object *obj, uint64_t *first, uint64_t *last);
void uf_huge_forget(struct uf_object *obj);
uint64_t uf_object_huge_extents(struct uf_object *obj);

/* populate.c */
void uf_vma_populate_cached(struct uf_vma *vma);
#define UF_WS_BATCH_FIRST 32	/* pages of a replay's first batch */
#define UF_WS_BATCH_LOCAL 64	/* ... and at most, but from a ->readv store */
size_t uf_ws_cut(const struct uf_ws_run *runs, size_t nruns, size_t *next, uint64_t *off,
		 uint64_t piece, uint64_t room, struct uf_ws_run *pc, uint64_t *pages);
void uf_object_populate_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n);


/* object.c: the cache's inode mode (read-only clients cannot reopen it
 * writable) */
int uf_cache_fd_restrict(int fd);

/* truncate.c */
int uf_object_cache_map(struct uf_object *obj, uint64_t size);
int __uf_object_set_size(struct uf_object *obj, uint64_t size);

/* observer.h: who watches an object's fills (the working-set recorder) */
#include "cache/observer.h"

/* ws_record.c, ws_replay.c, ws_serve.c: recording what is touched, prefetching it again */
void uf_ws_unwatch(struct uf_object *obj);

/* A working set read from a record file (uf_object_serve_prefetch):
 * shared by the processes it is pushed into, freed by its last put. */
struct uf_ws_run {
	uint64_t start, len;
};
struct uf_ws_set {
	int refs;			/* atomic */
	struct uf_ws_run *runs;		/* in recorded order */
	struct uf_ws_run *sorted;	/* by first page */
	size_t *ord;			/* sorted[i]'s place in runs */
	size_t nruns;
};
uint64_t uf_ws_serve_claim(struct uf_object *obj, struct uf_ws_set **setp);
void uf_ws_serve_unclaim(struct uf_object *obj, uint64_t rec);
bool uf_ws_serve_recording(struct uf_object *obj, uint64_t rec);
void uf_ws_serve_note(struct uf_object *obj, uint64_t rec, uint64_t pg);
const struct uf_ws_run *uf_ws_set_find(const struct uf_ws_set *set, uint64_t pg);
size_t uf_ws_set_place(const struct uf_ws_set *set, const struct uf_ws_run *run);
void uf_ws_set_put(struct uf_ws_set *set);

#endif /* UF_CACHE_H */
