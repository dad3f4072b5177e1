/* SPDX-License-Identifier: MIT */
/*
 * The structures the page cache, the fault path and the address spaces
 * share, as the kernel's mm_types.h: struct uf_mm, uf_vma, uf_as and
 * uf_object.  They stay together, in the lowest layer that uses them (the
 * cache; the store, the engine and lib do not), because each layer
 * dereferences the others': the cache walks obj->vmas and copies through
 * vma->as's engine, the fault path reads the object's pages, and the
 * address spaces own the VMAs the cache keeps on obj->vmas.  The engine's
 * struct uf_uffd is embedded in uf_mm and uf_as, hence engine/engine.h.
 * Functions are declared in each layer's header (cache/cache.h,
 * fault/fault.h, as/as.h).
 */
#ifndef UF_MM_TYPES_H
#define UF_MM_TYPES_H

#include "engine/engine.h"

/* Counters shared by struct uf_mm and struct uf_vma; updated atomically. */
struct uf_counters {
	uint64_t minor_faults, major_faults, sigbus, oom;
	uint64_t pages_read, pages_written, readahead_pages;
	uint64_t evicted_pages;
	uint64_t huge_collapses;
	uint64_t lat_us[UF_LAT_BUCKETS];
	uint64_t sigbus_store, sigbus_room, sigbus_outside, sigbus_other;
};

/*
 * Object pages [first, first + npages) that a process served from the
 * object shows (serve.c links one a region on obj->served, under
 * obj->page_lock); truncate.c refuses to cut or punch under them.
 */
struct uf_served_range {
	uint64_t first, npages;
	struct uf_served_range *next, **pprev;
};

/* Why a fault was answered with SIGBUS (struct uf_stats). */
enum uf_sigbus_cause { UF_SIGBUS_STORE, UF_SIGBUS_ROOM, UF_SIGBUS_OUTSIDE, UF_SIGBUS_OTHER };

struct uf_as;
struct uf_object;
struct uf_vma;

/* table.c: an address space's VMAs, sorted by start, under its table lock */
struct uf_vma_table {
	struct uf_vma **vmas;
	size_t n, cap;
	bool nocow;			/* in memory a fork does not copy */
};

/*
 * What the fault path and the page cache ask of the mm above them
 * (docs/design.md, Layers): mm.c fills it in, and a lower layer reaches
 * the program's own VMA table, the other address spaces or the mm's
 * lifetime only through mm->ops.  Each member is the function of vma.c,
 * as.c or mm.c named beside it, whose comment says what it does and which
 * locks.
 */
struct uf_mm_ops {
	/* __uf_vma_find(): the mm's own VMA at @addr; mm->vma_lock held */
	struct uf_vma *(*find)(struct uf_mm *mm, unsigned long addr);
	/* uf_vma_zap(): take pages out of the mm's own mappings */
	int (*zap)(struct uf_mm *mm, const struct uf_range *r, size_t n);
	/* uf_vma_refresh_object(): the object's mappings as the kernel has them */
	int (*refresh_object)(struct uf_object *obj);
	/* uf_as_collect_writes(), __uf_as_collect_writes_try(): what other
	 * address spaces wrote to the object */
	void (*collect_writes)(struct uf_object *obj);
	bool (*collect_writes_try)(struct uf_object *obj);
	/* uf_mm_put(), uf_mm_put_child(): an object drops its reference */
	void (*put)(struct uf_mm *mm);
	void (*put_child)(struct uf_mm *mm);
};

/*
 * An address space an mm serves (as.c): the program's own (mm->self, ops
 * uf_own_as_ops, vma.c), a fork child's or a served process's
 * (uf_child_as_ops), an attached client's (uf_client_as_ops).  Each has
 * its userfaultfd, its table lock and its VMA table (table.c, one
 * implementation for all); what differs between them is in its ops.
 * Another process's (ops->remote) has a userfaultfd of its own, a guest of
 * the mm's engine, and VMAs that are its own copies: in nocow memory, in
 * its table only, never on obj->vmas, so the program's walks never see
 * them.
 */
struct uf_as_ops {
	/* another process's: its VMAs are not on obj->vmas, live in nocow
	 * memory, and the program cannot touch its pages */
	bool remote;
	/* A copy of [start, end) of @src for @as (a split, a fork), not
	 * linked, with no object reference; NULL without memory.  Table
	 * lock of @src held. */
	struct uf_vma *(*copy)(struct uf_as *as, const struct uf_vma *src, unsigned long start,
			       unsigned long end);
	/* The page tables of [s, e) of @vma are going or gone with what they
	 * knew of writes: how lost writes are judged.  Table lock held. */
	void (*lost_writes)(struct uf_vma *vma, unsigned long s, unsigned long e);
	/* The fault path (fault.c), no lock held: the VMA at @addr with a
	 * reference and the object page it shows, or NULL, after which
	 * ->no_vma answers the fault. */
	struct uf_vma *(*lookup_get)(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				     bool *nonlinear);
	void (*no_vma)(struct uf_as *as, unsigned long page_addr);
	/* a write to a write-protected page of @vma */
	void (*wp_fault)(struct uf_vma *vma, unsigned long addr, uint64_t pgoff);
	/* the access of thread @tid at @addr cannot be served: what an
	 * error does (the page is inside EOF) */
	void (*sigbus)(struct uf_vma *vma, unsigned long addr, pid_t tid);
	/* NULL, or: a fault on a page the cache held already (@cached) that
	 * a wake would not resolve -- true when it is to get SIGBUS */
	bool (*unresolved)(struct uf_as *as, pid_t tid, unsigned long page_addr, bool cached);
	/* uf_mm_destroy(): let go of it (the program's own: unmap every
	 * mapping; another process's: SIGBUS for every page it has not
	 * received, then free it).  No lock held; @as off mm->children. */
	void (*destroy)(struct uf_as *as);
};

struct uf_as {
	struct uf_mm *mm;		/* whose cache and threads serve it */
	const struct uf_as_ops *ops;
	struct uf_uffd *uffd;		/* the mm's engine, or &@guest */
	pthread_rwlock_t *vma_lock;	/* &mm->vma_lock, or &@guest_lock */
	struct uf_vma_table vt;		/* under *vma_lock */

	/* another process's (ops->remote) */
	struct uf_uffd guest;		/* its userfaultfd, a guest of the engine */
	pthread_rwlock_t guest_lock;
	struct uf_as *next;		/* mm->children, under mm->as_lock */
	bool owned;			/* an attached client's (attach.c): freed
					   by its owner, never reaped */
	/* the last fault on a page the cache held already (as.c:
	 * as_unresolved), by thread and address, and how many in a row
	 * (atomic: handlers race, which only blurs the count) */
	unsigned long stuck_addr;
	pid_t stuck_tid;
	unsigned int stuck_n;
	int lied;			/* caught at it there: 1, billed: 2 (atomic) */
	int hangup_fd;			/* an attached client's connection, ended
					   once it lies; or -1 (atomic) */
	uid_t peer_uid;			/* ... and its peer, set before it */
	pid_t peer_pid;
	/* the process served (uf_as_adopt) and its fork descendants: their
	 * children alive are counted there (as.c, UF_AS_MAX_FORKS) */
	struct uf_as_family *family;	/* NULL till the first fork */
	bool forked;			/* a fork child: counted in @family */
	bool adopted;			/* handed over (uf_as_adopt), or forked
					   from one: its forks are counted */
};

/* A uid whose ufault client lied about its mappings (attach_srv.c):
 * its clients are refused till @until (ms, monotonic). */
#define UF_ATTACH_BANS	16
struct uf_attach_ban {
	uid_t uid;
	pid_t pid;			/* the last liar */
	unsigned int strikes;		/* lies since @last - ATT_BAN_FORGET */
	uint64_t until, last;
};

struct uf_mm {
	struct uf_uffd uffd;		/* the engine */
	const struct uf_mm_ops *ops;	/* calls up from below (mm.c) */
	struct uf_as self;		/* the program's own address space */
	pid_t pid;			/* the process that created it */
	/*
	 * UFFD_FEATURE_EVENT_FORK granted: regions are inherited, and each
	 * fork child is an address space of its own (as.c), under as_lock.
	 */
	bool fork_events;
	pthread_mutex_t as_lock;
	struct uf_as *children;
	unsigned int nchildren;		/* atomic */
	uint64_t reap_ns;		/* last look for children gone (atomic) */
	bool wp_async;			/* dirty tracking by PAGEMAP_SCAN */
	bool wp_sync;			/* dirty tracking by write-protect faults */
	int pagemap_fd;			/* /proc/self/pagemap, or -1 */

	pthread_rwlock_t vma_lock;	/* self's table lock */

	pthread_mutex_t obj_lock;
	struct uf_object *objects;	/* list through obj->mm_next */

	/*
	 * uf_mm_destroy() sets @dead and drops one reference; every object
	 * holds one until it is freed.  A uf_object_* call that started
	 * before the destroy thus still finds the mm's memory, locks and
	 * userfaultfd; calls that start after see @dead and fail.
	 */
	int refs;
	bool dead;			/* atomic */

	/*
	 * The page address each handler thread is serving (0: none), so
	 * that two handlers never serve faults at one address at once: the
	 * outcome of one (a wake, or a SIGBUS) must not race the other's.
	 */
	pthread_mutex_t inflight_lock;
	pthread_cond_t inflight_cond;
	unsigned long inflight[UF_MAX_HANDLERS];
	unsigned long inflight_wait[UF_MAX_HANDLERS];	/* waiting to serve */
	pid_t inflight_wait_tid[UF_MAX_HANDLERS];	/* ... this thread's fault */
	unsigned long inflight_deferred;	/* a page whose error was passed on */
	/* the thread whose fault each handler serves until it is counted:
	 * it may be awake already (uf_fault_settle()) */
	pid_t serving_tid[UF_MAX_HANDLERS];

	/* poison markers on object pages, to lift again (fault.c) */
	pthread_mutex_t poison_lock;
	struct uf_poison {
		unsigned long addr;
		uint64_t vma_id;
		uint64_t when_ns;
		uint64_t runs;		/* the thread's run count when woken */
		pid_t tid;		/* the thread that faulted */
	} poison[64];
	unsigned int npoison;
	uint64_t next_vma_id;

	/*
	 * Ranges ufault itself maps over (nonlinear windows): the unmap
	 * event the kernel sends for each is not the program's.  Under
	 * vma_lock.
	 */
	struct uf_range expect[8];
	unsigned int nexpect;
	/* VMAs being mapped or torn down, not in the table (vma.c): their
	 * kernel mappings may merge with a neighbour's.  Under vma_lock. */
	struct uf_vma *busy;
	int procmap_query;		/* PROCMAP_QUERY: 0 untried, 1 works, -1 not */
	/* ranges ufault zaps itself (uf_vma_zap): their remove events are
	 * not the program's.  Under zap_lock. */
	pthread_mutex_t zap_lock;
	struct uf_range *zaps;
	size_t nzaps, zaps_cap;

	/* attach.c, under attach_lock: objects attached to a server (this
	 * process a client), and clients served (this process a server) */
	pthread_mutex_t attach_lock;
	pthread_cond_t attach_cond;
	struct uf_attach *attached;
	struct uf_attach_srv *served;
	struct uf_attach_ban bans[UF_ATTACH_BANS];	/* uids refused a while */
	/* set by the first uf_object_attach() (atomic): the object served
	 * by another process with a mapping in [start, end), with a
	 * reference, or NULL; its obj->remote does the mapping calls */
	struct uf_object *(*remote_find)(struct uf_mm *mm, unsigned long start,
					 unsigned long end);

	size_t ra_max;			/* readahead pages */
	struct uf_worker *worker;	/* background work (worker.c) */
	struct uf_inserts *inserts;	/* deferred cache inserts (insert.c) */
	struct uf_huge *huge;		/* huge extents (huge.c); NULL: off */
	uint64_t budget_pages;		/* 0 = none */
	unsigned int policy;
	pthread_mutex_t reclaim_lock;
	pthread_mutex_t charge_lock;
	uint64_t charged;		/* pages fills are adding (reclaim.c) */

	struct uf_counters stats;
};

#define VMA_SHARED	0x01
#define VMA_PRIVATE	0x02
#define VMA_OPS		0x04		/* uf_mmap_ops: anonymous, no object */
#define VMA_WP		0x08		/* write-protected: dirty tracking */
#define VMA_REG_WP	0x10		/* registered in WP mode */
#define VMA_PRIV_MAP	0x20		/* shared mapping of a read-only object,
					   mapped MAP_PRIVATE: nothing written
					   there can reach the cache */
#define VMA_HUGETLB	0x40		/* another process's hugetlbfs memory:
					   filled and poisoned 2 MiB at a time */

struct uf_vma {
	struct uf_mm *mm;		/* whose cache and threads serve it */
	struct uf_as *as;		/* the address space it is in */
	unsigned long start, end;
	uint64_t pgoff;
	int prot;
	unsigned int flags;
	const struct uf_vm_operations *vm_ops;
	void *private_data;
	struct uf_object *obj;
	struct uf_vma *obj_next;	/* obj->vmas (see obj->rmap_lock) */
	uint64_t id;			/* unique in the mm */
	bool dead;			/* unlinked, being unmapped (atomic) */
	bool detached;			/* unmapped by the program: the last
					   uf_vma_put() frees it (ref_lock) */
	bool remote;			/* another process's (as.c): nocow,
					   and may outlive its address space */
	struct uf_vma *ev_next;		/* lists of uf_vma_event() */
	struct uf_vma *busy_next;	/* mm->busy */
	unsigned long ino;		/* the memfd's inode (objects) */

	int refs;			/* lookups in flight + 1 while mapped */
	pthread_mutex_t ref_lock;
	pthread_cond_t ref_cond;

	/*
	 * Nonlinear windows: NULL while linear, else one entry per page:
	 * the object page it shows, with NL_WINDOW set inside a window.
	 * Under mm->vma_lock.
	 */
	uint64_t *nl_pgoff;

	struct uf_ra_state *ra;		/* readahead streams (readahead.c) */

	struct uf_counters stats;
};
#define NL_WINDOW	(1ULL << 63)

/* A sparse map of per-page bits (pagebits.c): the root node, with the
 * tree's height in its low bits. */
struct uf_pagebits {
	uintptr_t root;
};


struct uf_object {
	struct uf_mm *mm;
	int refs;
	const struct uf_store_ops *ops;
	void *store;
	/* the store's ->readv (struct uf_store_ops, or uf_object_set_readv()):
	 * many extents in one read, or NULL (atomic) */
	int (*readv)(void *store, const struct uf_store_iov *iov, size_t n);
	bool readonly;
	pid_t pid;			/* the process that created it */
	int memfd;			/* the page cache */

	pthread_rwlock_t invalidate_lock;
	uint64_t size;			/* i_size: set under invalidate_lock
					   exclusive, read atomically */

	/*
	 * A shared mapping of the whole memfd, registered MISSING and never
	 * touched: the target of UFFDIO_COPY, which fills a hole of the cache
	 * atomically and refuses a page that is present.
	 */
	char *cache_map;
	uint64_t cache_cap;		/* bytes mapped at cache_map */

	pthread_mutex_t page_lock;
	/* the pages processes served from it show (serve.c links them),
	 * under page_lock: truncate and punch leave them alone */
	struct uf_served_range *served;
	/* UF_PG_PRESENT: the page is in the cache; UF_PG_DIRTY: it must be
	 * written to the store (pagebits.c) */
	struct uf_pagebits pages;
	uint64_t npresent;
	uint64_t ninserts;		/* its spans pending (insert.c; atomic) */
	uint64_t clock_hand;
	uint64_t *fifo;			/* FIFO policy: ring of pgoffs */
	uint64_t fifo_head, fifo_tail, fifo_cap;

	/* collapsed extents, sorted; punches, evictions and truncates so
	 * far (atomic); the extent being collapsed (atomic) (huge.c) */
	uint64_t *huge_ext;
	size_t nhuge, huge_cap;
	uint64_t huge_gen;
	uint64_t huge_busy;		/* extent + 1 being collapsed, or 0 */

	pthread_mutex_t sync_lock;
	/* the object's mappings (the kernel's i_mapping tree): changed under
	 * mm->vma_lock and rmap_lock exclusive, read under either; @rmap_gen
	 * counts the mappings that began write-protect tracking (under
	 * rmap_lock exclusive) */
	pthread_rwlock_t rmap_lock;
	struct uf_vma *vmas;
	uint64_t rmap_gen;
	struct uf_object *mm_next;	/* under mm->obj_lock */
	const struct uf_fill_observer_ops *observer;	/* or NULL (observer.h) */
	struct uf_ws *ws;		/* its data: ws_*.c's working set */
	/* served by a ufault-serve (uf_object_attach, attach.c): none of the
	 * cache state above is used, every call goes to the server */
	struct uf_attach *attach;
	const struct uf_remote_ops *remote;	/* with @attach: its calls */
};

/*
 * The calls of an object served by another process (attach.c, above the
 * page cache): the page cache's own entry points (uf_object_put, size,
 * pread, pwrite, truncate, punch_hole, sync) hand an attached object to
 * these, with no ufault lock held.
 */
struct uf_remote_ops {
	void (*free)(struct uf_object *obj);		/* the last put */
	uint64_t (*size)(const struct uf_object *obj);
	ssize_t (*pread)(struct uf_object *obj, void *buf, size_t len, uint64_t off);
	ssize_t (*pwrite)(struct uf_object *obj, const void *buf, size_t len, uint64_t off);
	int (*truncate)(struct uf_object *obj, uint64_t size);
	int (*punch_hole)(struct uf_object *obj, uint64_t off, uint64_t len);
	int (*sync)(struct uf_object *obj);
	/* uf_mmap() of the object; uf_munmap(), uf_mprotect(), uf_msync()
	 * of [start, end), where a mapping of the object is (vma.c finds it
	 * through mm->remote_find) */
	int (*mmap)(struct uf_object *obj, size_t len, int prot, int flags, uint64_t offset,
		    void **addrp);
	int (*munmap)(struct uf_object *obj, unsigned long start, unsigned long end);
	int (*mprotect)(struct uf_object *obj, unsigned long start, unsigned long end, int prot);
	int (*msync)(struct uf_object *obj, unsigned long start, unsigned long end);
};

/* pid.c's checks on an mm and an object: is this a fork child of the
 * process that made @mm, @obj? */
static inline bool uf_forked(const struct uf_mm *mm)
{
	return mm && mm->pid != uf_pid();
}

static inline bool uf_object_forked(const struct uf_object *obj)
{
	return obj->pid != uf_pid();
}

#endif /* UF_MM_TYPES_H */
