/* SPDX-License-Identifier: MIT */
/*
 * Working sets (ws_record.c, ws_replay.c, ws_serve.c, ws_file.c): what
 * their files share.  A working set is the pages a run touches, in order
 * of first access, recorded and replayed into the cache ahead of the next
 * cold start (REAP, ASPLOS'21, does this for snapshots of serverless
 * functions).
 *
 * Locking: ws->lock guards the record and ws->pf; pf->lock guards pf->obj
 * and pf->done.  Both are leaves, ws->lock taken before pf->lock (see
 * src/lib/lockorder.h).  The prefetcher takes obj->invalidate_lock shared around
 * each piece's fill and mm->obj_lock (alone) to count the cache.  A
 * watched record's scans take obj->rmap_lock shared, and ws->lock inside
 * it; its start takes mm->vma_lock and obj->rmap_lock exclusive to
 * register the mappings, and ws->lock inside them.
 */
#ifndef UF_CACHE_WS_H
#define UF_CACHE_WS_H

#include "cache/cache.h"

#define PF_CHUNK	1024		/* pages per turn of the worker */

/* ws->seen's two maps: pages recorded, and pages read ahead while a
 * watched record runs, not yet seen touched */
#define WS_SEEN		UF_PG_PRESENT
#define WS_PENDING	UF_PG_DIRTY
#define WS_RECENT	2		/* windows scanned at each page taken */
#define WS_SCAN_PAGES	512		/* pages per scan step */

#define WS_KIND_SIZE	0		/* the record file's version kinds */
#define WS_KIND_FILE	1

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

/*
 * A prefetch from a file in memory (tmpfs, a memfd: uf_object_create_mem)
 * leaves the program's thread a CPU of its own: PF_FILLERS fillers at
 * most, and one CPU fewer than the machine has, at least one (on 2 CPUs
 * the worker alone).  (From a disk the fillers wait for the device, and
 * stay PF_FILLERS.)  Its caller fills the head itself, beside the
 * fillers, before it returns: the first batch, from a file in memory at
 * least PF_HEAD_PCT percent of the set's pages, and then on while the
 * rest at the fillers' rate alone would take longer than the program's
 * first touches of the set (pf_head_more()): how much a first touch of a
 * page mapped ahead costs is measured once a process (pf_touch_ns()).
 * The program then touches the set while the fillers, that far ahead, go
 * on.  On a guest whose hypervisor shadows the page tables that touch
 * costs 3-7 us, about a one-filler fill's time a page, so the rule would
 * keep the head near its least (not run there since it was made); there,
 * with fixed heads, ufault-bench --only ws (tmpfs, best/replay, the
 * median of 5-7 paired rounds, 2-8 runs each) gave two fillers and a
 * 32-page head 0.73-0.81x, one filler 0.78-0.81x, one filler and a head
 * of 10% 0.81-0.85x, of 15% 0.81-0.91x, of 20-25% 0.75-0.89x.  Where the
 * touch is a load (20-30 ns) the program overtakes any fill and faults
 * page by page, and the head grows to the set: heads of 15%, 50%, 75%
 * and 90-100% gave 0.58x, 0.96x, 0.91x and 1.03-1.05x there (a head of
 * 15% took 240 faults a replay, the whole set none), and from Redis a
 * 32-page head 0.86x and the whole set 1.02x.
 */
#define PF_HEAD_PCT	15
#define PF_PROBE_PAGES	16	/* pages pf_touch_ns() touches */
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
	uint64_t npages;		/* the set's pages */
	uint64_t taken;			/* pages claimed so far */
	uint64_t head_min;		/* pages the caller fills at least */
	unsigned int nfill;		/* fillers besides the caller */
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

/* ws_record.c */
struct uf_ws *ws_get(struct uf_object *obj);
int object_version(struct uf_object *obj, struct ws_version *v);
void __ws_note_page(struct uf_ws *ws, uint64_t pg);
int ws_record_start(struct uf_object *obj, const char *path, bool serve_only);

/* ws_replay.c */
bool uf_ws_window(struct uf_object *obj, const struct uf_vma *vma, uint64_t pgoff,
		  struct uf_ra_req *req);
bool __pf_running(struct ws_prefetch *pf);
void pf_put(struct ws_prefetch *pf);

/* ws_file.c */
unsigned char *ws_encode(const struct ws_version *ver, const struct uf_ws_run *runs,
			 size_t nruns, uint64_t npages, size_t *lenp);
int write_all(int fd, const unsigned char *p, size_t len);
int ws_read(const char *path, struct ws_version *ver, struct uf_ws_run **runsp,
	    size_t *nrunsp, struct uf_ws_run **sortedp);
const struct uf_ws_run *runs_find(const struct uf_ws_run *sorted, size_t n, uint64_t pg);
bool same_version(const struct ws_version *a, const struct ws_version *b);

#endif /* UF_CACHE_WS_H */
