/* SPDX-License-Identifier: MIT */
/*
 * Library-private declarations.  The lock order is src/lib/lockorder.h: the
 * one list, which lockdep.c checks in a LOCKDEP=1 build and every other
 * file's comments refer to.
 */
#ifndef UF_INTERNAL_H
#define UF_INTERNAL_H

#define UF_NO_DEPRECATED_WARNINGS	/* the core calls ->nopage itself */
#include "ufault.h"
#include "compat.h"
#include "lockdep.h"

#include <pthread.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>

#define PAGE_SHIFT	12
#define PAGE_SIZE	UF_PAGE_SIZE
#define PAGE_MASK	(~(PAGE_SIZE - 1))
#define PAGE_ALIGNED(x)	(((uint64_t)(x) & (PAGE_SIZE - 1)) == 0)
#define PAGE_ALIGN(x)	(((x) + PAGE_SIZE - 1) & PAGE_MASK)	/* up, as mmap(2) rounds a length */
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define BITS_PER_LONG	(8 * sizeof(unsigned long))

#define UF_MAX_HANDLERS	64
#define UF_MAX_SIZE	((1ULL << 63) - PAGE_SIZE)	/* largest object size */
#define UF_EXPORT	__attribute__((visibility("default")))

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

#define uf_add(p, n)	__atomic_add_fetch((p), (n), __ATOMIC_RELAXED)
#define uf_load(p)	__atomic_load_n((p), __ATOMIC_RELAXED)

/*
 * The engine (uffd.c): the userfaultfd, its features and the handler
 * threads that read it.  Events go up through the ops its owner gave.
 */
struct uf_uffd;
struct uf_uffd_ops {
	/* a page fault; @slot is the reading handler's index */
	void (*fault)(void *owner, unsigned int slot, const struct uffd_msg *msg);
	/* any other event (unmap, remap, remove) */
	void (*event)(void *owner, const struct uffd_msg *msg);
	/* how long a handler may sleep with no event (ms, -1: forever);
	 * ->idle runs each time a handler wakes */
	int (*idle_ms)(void *owner);
	void (*idle)(void *owner);
};

/* A thread of ufault's own (thread.c): its stack is not a fork child's. */
struct uf_thread {
	pthread_t id;
	void *stack;
	size_t size;
	void *(*fn)(void *);
	void *arg;
};

/*
 * The handler threads of an engine and what they write at every event: in
 * memory fork children do not inherit (uf_nocow_alloc()), since after
 * fork() each page a handler writes costs a copy-on-write fault while the
 * child lives, and the handler that reads the fork event writes these
 * before it reads.  @nidle counts handlers waiting for an event (atomic).
 */
struct uf_uffd_threads {
	unsigned int nidle;
	bool timer_armed;		/* atomic */
	struct uf_uffd_handler {
		struct uf_uffd *uffd;
		unsigned int slot;
		uint64_t busy_since;	/* ns, 0 while idle (atomic) */
		int ep;			/* its epoll set (guest_lock), or -1 */
	} handlers[UF_MAX_HANDLERS];
	struct uf_thread threads[UF_MAX_HANDLERS];
	struct uf_thread monitor;
};

struct uf_uffd {
	int fd;
	int stopfd;			/* eventfd: handler threads exit */
	int kickfd;			/* eventfd: messages wait in pending */
	uint64_t features;		/* granted by UFFDIO_API */
	const struct uf_uffd_ops *ops;
	void *owner;

	/*
	 * Handler threads: the configured ones, plus spares the monitor
	 * starts when every handler has been busy for a while (a fault()
	 * that touches another ufault mapping waits for another handler).
	 * @nthreads grows under @lock and is read atomically.
	 */
	pthread_mutex_t lock;
	bool stopping;			/* under @lock: start no more spares */
	unsigned int nthreads;
	struct uf_uffd_threads *t;	/* (uf_uffd_start) */
	int timerfd;			/* the monitor's alarm */
	bool monitor_started;

	/*
	 * Address-space events (unmap, remap, remove) are read under
	 * ev_lock and counted; ev_done counts those handed to ->event.
	 * The kernel lets the thread that caused an event go on as soon as
	 * it is read, so uf_uffd_quiesce() is how the owner waits until its
	 * table shows every change made so far.  Faults a thread read
	 * while it waited inside an ioctl (uffd_drain) wait in pending.
	 */
	pthread_mutex_t ev_lock;
	pthread_cond_t ev_cond;
	uint64_t ev_read, ev_done;
	struct uffd_msg *evq;		/* events read, not yet applied, in order */
	size_t nevq, evq_cap;
	bool ev_applying;		/* a thread applies evq (one at a time) */
	struct uffd_msg *pending;	/* faults read by another thread */
	size_t npending, pending_cap;
	/*
	 * A copy into the program's own mappings (uf_uffd_copy_mapped)
	 * holds copy_lock shared; a read of the fd holds it exclusive
	 * (outside ev_lock).  The kernel changes a mapping before it queues
	 * the event, and copies there fail with EAGAIN only until the event
	 * is read: with no read during the copy, and every event read before
	 * applied, the owner's table is the kernel's for its length.
	 */
	pthread_rwlock_t copy_lock;

	/*
	 * Guests: the userfaultfds of other address spaces (fork children),
	 * read by this engine's handler threads, each with its own queues
	 * and copy_lock as above, and no threads of its own (@host set).
	 * The host's list and each guest's @users (handlers using it) are
	 * under the host's guest_lock, a leaf; a guest leaves the list only
	 * while no handler uses it.
	 */
	pthread_mutex_t guest_lock;
	struct uf_uffd *guests;
	unsigned int nguests;		/* atomic */
	struct uf_uffd *host, *guest_next;
	int users;
	struct uf_uffd *engine_next;	/* engines with threads (uffd.c) */
};

#define UF_UFFD_DONTWAKE	0x01	/* uf_uffd_copy: leave waiters asleep */
#define UF_UFFD_WP		0x02	/* uf_uffd_copy: map write-protected */

int uf_uffd_probe(bool user_mode_only, uint64_t *avail);
bool uf_uffd_probe_feature(bool user_mode_only, uint64_t feature);
int uf_uffd_open(struct uf_uffd *u, bool user_mode_only, uint64_t want);
int uf_uffd_new_fd(uint64_t want, uint64_t *got);
int uf_uffd_fd_register(int fd, unsigned long start, unsigned long len);
void uf_uffd_fd_unregister(int fd, unsigned long start, unsigned long len);
int uf_uffd_fd_poison(int fd, unsigned long addr, unsigned long len);
void uf_uffd_fd_wake(int fd, unsigned long addr, unsigned long len);
bool uf_uffd_fd_is_uffd(int fd);
int uf_uffd_start(struct uf_uffd *u, unsigned int nthreads, const struct uf_uffd_ops *ops,
		  void *owner);
void uf_uffd_stop(struct uf_uffd *u);
void uf_uffd_close(struct uf_uffd *u);
int uf_uffd_register(struct uf_uffd *u, unsigned long start, unsigned long len, bool wp);
int uf_uffd_writeprotect(struct uf_uffd *u, unsigned long start, unsigned long len,
			 bool protect, bool dontwake);
void uf_uffd_wake(struct uf_uffd *u, unsigned long addr, size_t len);
int uf_uffd_copy(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
		 unsigned int flags, size_t *copied);
int uf_uffd_copy_mapped(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
			unsigned int flags, size_t *copied);
int uf_uffd_poison(struct uf_uffd *u, unsigned long addr, size_t len);
int uf_uffd_poison_mapped(struct uf_uffd *u, unsigned long addr, size_t len);
int uf_uffd_writeprotect_mapped(struct uf_uffd *u, unsigned long start, unsigned long len,
				bool protect, bool dontwake);
int uf_uffd_unregister(struct uf_uffd *u, unsigned long start, unsigned long len);
void uf_uffd_quiesce(struct uf_uffd *u);
void uf_uffd_settle(struct uf_uffd *u);
int uf_uffd_run(struct uf_uffd *u, int (*fn)(void *arg), void *arg);
struct uf_range {
	unsigned long start, end;
};
int uf_uffd_zap(struct uf_uffd *u, const struct uf_range *r, size_t n);
void uf_uffd_guest_init(struct uf_uffd *g, int fd, struct uf_uffd *host,
			const struct uf_uffd_ops *ops, void *owner);
void uf_uffd_attach(struct uf_uffd *g);
int uf_uffd_detach(struct uf_uffd *g, bool wait);
void uf_uffd_guest_hold(struct uf_uffd *g);
void uf_uffd_guest_unhold(struct uf_uffd *g);
bool uf_uffd_alive(struct uf_uffd *g);
int uf_uffd_poison_holes(struct uf_uffd *u, unsigned long addr, size_t len, size_t step);
int uf_uffd_zeropage_mapped(struct uf_uffd *u, unsigned long addr, size_t len,
			    unsigned int flags);

struct uf_as;
struct uf_object;
struct uf_vma;

/* table.c: an address space's VMAs, sorted by start, under its table lock */
struct uf_vma_table {
	struct uf_vma **vmas;
	size_t n, cap;
	bool nocow;			/* in memory a fork does not copy */
};
size_t __uf_table_index(const struct uf_vma_table *t, unsigned long addr);
struct uf_vma *__uf_table_find(const struct uf_vma_table *t, unsigned long addr);
int __uf_table_insert(struct uf_vma_table *t, struct uf_vma *v);
void __uf_table_remove_at(struct uf_vma_table *t, size_t i);
void uf_table_free(struct uf_vma_table *t);

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
};

/* VMAs to open (made by a split) and to release, once the table lock is
 * dropped: ->open, ->close and the last object put must not run under it
 * (table.c). */
struct uf_vma_lists {
	struct uf_vma *opened, *released;
};
int __uf_as_link(struct uf_as *as, struct uf_vma *v);
void __uf_as_unlink(struct uf_as *as, struct uf_vma *v);
struct uf_vma *__uf_as_split(struct uf_as *as, struct uf_vma *v, unsigned long addr,
			     struct uf_vma_lists *l);
void __uf_as_unmap_range(struct uf_as *as, unsigned long s, unsigned long e,
			 struct uf_vma_lists *l);
void __uf_as_move(struct uf_as *as, unsigned long from, unsigned long to, unsigned long len,
		  struct uf_vma_lists *l);
void uf_vma_lists_finish(struct uf_vma_lists *l);

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
	/* set by the first uf_object_attach() (atomic): the object served
	 * by another process with a mapping in [start, end), with a
	 * reference, or NULL; its obj->remote does the mapping calls */
	struct uf_object *(*remote_find)(struct uf_mm *mm, unsigned long start,
					 unsigned long end);

	size_t ra_max;			/* readahead pages */
	struct uf_worker *worker;	/* background work (worker.c) */
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

/*
 * rmap.c: a VMA as the layers below the address space see it: its
 * lifetime and references, the object page an address shows, and (these
 * two) the engine and table lock of the address space it belongs to.
 */
struct uf_vma *uf_vma_alloc(struct uf_mm *mm, size_t len, int prot);
void uf_vma_free(struct uf_vma *vma);
void uf_vma_put(struct uf_vma *vma);
void uf_vma_release(struct uf_vma *vma);
uint64_t __uf_vma_pgoff(const struct uf_vma *vma, unsigned long addr);
void uf_vma_present(int fd, const struct uf_vma *vma, unsigned long start, unsigned long end,
		    void (*fn)(void *arg, uint64_t pg), void *arg);
/*
 * The object's mappings (obj->vmas): the mm's own VMAs of it; a child's
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

static inline struct uf_uffd *uf_vma_uffd(const struct uf_vma *vma)
{
	return vma->as->uffd;
}

static inline pthread_rwlock_t *uf_vma_table_lock(const struct uf_vma *vma)
{
	return vma->as->vma_lock;
}

/* Is @vma another process's (as.c)? */
static inline bool uf_vma_remote(const struct uf_vma *vma)
{
	return vma->as->ops->remote;
}

/* as.c */
extern const struct uf_as_ops uf_child_as_ops, uf_client_as_ops;
extern const struct uf_uffd_ops uf_as_uffd_ops;
void uf_as_fork(struct uf_as *parent, const struct uffd_msg *msg);
void uf_as_event(void *owner, const struct uffd_msg *msg);
void uf_as_reap(struct uf_mm *mm, bool force);
struct uf_as *uf_as_next_gone(struct uf_mm *mm);
void uf_as_collect_writes(struct uf_object *obj);
bool __uf_as_collect_writes_try(struct uf_object *obj);
int uf_as_adopt(struct uf_mm *mm, int fd, struct uf_vma *const *tmpl, size_t n,
		const struct uf_uffd_ops *ops, struct uf_as **heldp, struct uf_as **asp);
void uf_as_unhold(struct uf_as *as);
void uf_as_release(struct uf_as *as);
int uf_as_map(struct uf_as *as, const struct uf_vma *tmpl);
void uf_as_unmap(struct uf_as *as, unsigned long start, unsigned long end);
int uf_as_protect(struct uf_as *as, unsigned long start, unsigned long end, int prot);

/* A sparse map of per-page bits (pagemap.c): the root node, with the
 * tree's height in its low bits. */
struct uf_pagemap {
	uintptr_t root;
};

struct serve_region;

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
	 * written to the store (pagemap.c) */
	struct uf_pagemap pages;
	uint64_t npresent;
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
	struct uf_ws *ws;		/* record and replay (workingset.c) */
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

/* attach.c: objects served by another process, and serving them */
struct uf_attach;
struct uf_attach_srv;
void uf_attach_destroy_all(struct uf_mm *mm);

/* thread.c: ufault's own threads, on stacks fork children do not inherit */
int uf_thread_start(struct uf_thread *t, void *(*fn)(void *), void *arg);
void uf_thread_join(struct uf_thread *t);

/* pid.c: is this a fork child of the process that made @mm, @obj? */
pid_t uf_pid(void);

bool uf_forked(const struct uf_mm *mm);
bool uf_object_forked(const struct uf_object *obj);

/* nocow.c: memory a fork does not copy, for state no fork child reads */
void *uf_nocow_alloc(size_t n);
void *uf_nocow_realloc(void *p, size_t n);
void uf_nocow_free(void *p);
void *uf_nocow_map(size_t len);

/* mm.c */
void uf_mm_put(struct uf_mm *mm);
void uf_mm_put_child(struct uf_mm *mm);

/* vma.c: the mappings of the program's own address space */
struct uf_vma *uf_vma_lookup_get(struct uf_mm *mm, unsigned long addr, uint64_t *pgoff,
				 bool *nonlinear);
struct uf_vma *__uf_vma_find(struct uf_mm *mm, unsigned long addr);
int uf_vma_register(struct uf_vma *vma, unsigned long start, unsigned long len);
void uf_vma_inherit(struct uf_vma *vma, unsigned long start, unsigned long len);
void uf_unmap_all(struct uf_mm *mm);
void uf_vma_free_child(struct uf_vma *vma);

/* self.c: the program's own address space's ops, and its events */
extern const struct uf_as_ops uf_own_as_ops;
void uf_vma_event(void *owner, const struct uffd_msg *msg);
void *uf_vma_map_fixed(struct uf_vma *vma, unsigned long addr, size_t len, uint64_t off);
int uf_vma_zap(struct uf_mm *mm, const struct uf_range *r, size_t n);

/* procmaps.c: what raises no event, from /proc/self/maps */
int uf_vma_refresh(struct uf_mm *mm, unsigned long start, unsigned long end);
int uf_vma_refresh_fault(struct uf_mm *mm, unsigned long addr);
int uf_vma_refresh_object(struct uf_object *obj);

/* fault.c: ->fault of the mm's engine and of a child's (as.c); between
 * faults, lifting poison markers (uf_fault_idle, uf_fault_idle_ms) */
void uf_fault_handle(void *owner, unsigned int slot, const struct uffd_msg *msg);
void uf_fault_as(void *owner, unsigned int slot, const struct uffd_msg *msg);
int uf_fault_idle_ms(struct uf_mm *mm);
void uf_fault_sigbus(struct uf_vma *vma, unsigned long addr, pid_t tid);
int uf_fault_poison_page(struct uf_vma *vma, unsigned long page_addr);
void uf_fault_idle(struct uf_mm *mm);
struct uf_vma *uf_fault_vma(void);
/* fdata->flags, set by uf_filemap_fault(): the page is past EOF (the
 * kernel raises SIGBUS itself on the retry) */
#define UF_FAULT_FLAG_EOF	0x80000000u
/* ... its copy woke the faulting thread (no wake is due) */
#define UF_FAULT_FLAG_WOKEN	0x40000000u
void uf_fault_settle(struct uf_mm *mm);

/* object.c: object lifetime, and the mm's list of objects (mm->obj_lock) */
bool uf_object_tryget(struct uf_object *obj);
/* Was the object's mm destroyed (object calls other than sync fail)? */
static inline bool uf_object_orphaned(const struct uf_object *obj)
{
	return !obj->mm || __atomic_load_n(&obj->mm->dead, __ATOMIC_ACQUIRE);
}

static inline uint64_t size_pages(uint64_t size)
{
	return DIV_ROUND_UP(size, PAGE_SIZE);
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
 * back from the memfd.
 */
struct uf_fill_sink {
	struct uf_object *obj;
	void (*fn)(struct uf_fill_sink *sink, uint64_t pgoff, const char *buf, size_t npages);
};
extern __thread struct uf_fill_sink *uf_fill_sink;
struct uf_ws_run;
#define UF_READV_PAGES	512	/* pages of one ->readv call at most */
int uf_object_fill_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n,
			size_t *filled, struct uf_vma *vma);
int uf_object_insert(struct uf_object *obj, uint64_t pgoff, const void *src);
uint64_t uf_object_cache_pages(struct uf_object *obj);
struct uf_bounce;
struct uf_bounce *uf_bounce_get(size_t len, void **bufp);
void uf_bounce_put(struct uf_bounce *b);

/*
 * pagemap.c: the present and dirty bits of an object's pages, sparse.
 * Bit operations need obj->invalidate_lock held (any mode); growing the
 * map and freeing its empty parts (uf_pagemap_grow, uf_pagemap_clear_range)
 * need it exclusive.
 */
enum uf_pg { UF_PG_PRESENT, UF_PG_DIRTY, UF_PG_NMAPS };
#define UF_PG_MASK_ALL	((1U << UF_PG_PRESENT) | (1U << UF_PG_DIRTY))
bool uf_pagemap_test(struct uf_pagemap *pm, enum uf_pg map, uint64_t pg);
/* 1: was set, 0: newly set, -ENOMEM (no leaf; uf_pagemap_reserve() first) */
int uf_pagemap_set(struct uf_pagemap *pm, enum uf_pg map, uint64_t pg);
bool uf_pagemap_clear(struct uf_pagemap *pm, enum uf_pg map, uint64_t pg);
/* Make sure setting bits of [first, first + n) needs no allocation. */
int uf_pagemap_reserve(struct uf_pagemap *pm, uint64_t first, uint64_t n);
/* The first page in [from, end) whose bit is set, or @end. */
uint64_t uf_pagemap_next(struct uf_pagemap *pm, enum uf_pg map, uint64_t from, uint64_t end);
/* Are the bits of all of [first, first + n) set (e.g. a 2 MiB extent)? */
bool uf_pagemap_full(struct uf_pagemap *pm, enum uf_pg map, uint64_t first, uint64_t n);
/* Clear the maps in @mask over [first, end) and free the parts left
 * empty; return how many present bits were cleared.  @mask 0: only free. */
uint64_t uf_pagemap_clear_range(struct uf_pagemap *pm, unsigned int mask, uint64_t first,
				uint64_t end);
int uf_pagemap_grow(struct uf_pagemap *pm, uint64_t pages);
void uf_pagemap_free(struct uf_pagemap *pm);

/* writeback.c */
int uf_vma_collect_dirty(struct uf_vma *vma, unsigned long start, unsigned long end);
void __uf_vma_mark_dirty(struct uf_vma *vma, unsigned long start, unsigned long end);
void __uf_vma_mark_written(struct uf_vma *vma, unsigned long start, unsigned long end);
int uf_vma_writeprotect(struct uf_vma *vma, unsigned long start, unsigned long len);
int uf_vma_protect_cached(struct uf_vma *vma, unsigned long start, unsigned long end);
bool __uf_object_tracked(struct uf_object *obj);
int __uf_object_protect_holes(struct uf_object *obj, uint64_t first, uint64_t n,
			      const struct uf_vma *skip);
int __uf_object_writeback(struct uf_object *obj, uint64_t first, uint64_t last);
int uf_object_sync_range(struct uf_object *obj, uint64_t first, uint64_t last, bool collect);
void __uf_object_protect(struct uf_object *obj, uint64_t first, uint64_t n);
void uf_handle_wp_fault(struct uf_vma *vma, unsigned long addr, uint64_t pgoff);

/* reclaim.c */
long uf_reclaim(struct uf_mm *mm, size_t room);
long uf_cache_charge(struct uf_mm *mm, size_t want, size_t need);
void uf_cache_uncharge(struct uf_mm *mm, size_t n);
void __uf_reclaim_note_fill(struct uf_object *obj, uint64_t pgoff, bool page_locked);

/* worker.c: background work of an mm, one thread */
struct uf_work {
	void (*fn)(struct uf_work *work, bool run);	/* run, or drop */
	struct uf_work *next;
};
int uf_worker_start(struct uf_mm *mm);
void uf_worker_stop(struct uf_mm *mm);
bool uf_worker_queue(struct uf_mm *mm, struct uf_work *work);

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

/* huge.c: 2 MiB extents of a cache collapsed into huge folios */
#define UF_HUGE_SHIFT	21
#define UF_HUGE_SIZE	(1UL << UF_HUGE_SHIFT)
#define UF_HUGE_PAGES	(UF_HUGE_SIZE >> PAGE_SHIFT)
void *uf_mmap_aligned(size_t len, int prot, int flags, int fd, uint64_t off);
int uf_huge_init(struct uf_mm *mm);
void uf_huge_stop(struct uf_mm *mm);
void uf_huge_free(struct uf_mm *mm, bool child);
void __uf_huge_filled(struct uf_object *obj, uint64_t first, uint64_t n);
void uf_huge_busy(struct uf_mm *mm);
void __uf_huge_punched(struct uf_object *obj, uint64_t first, uint64_t last);
uint64_t __uf_huge_evicted(struct uf_object *obj, uint64_t first, uint64_t last);
void __uf_huge_cut(struct uf_object *obj, uint64_t first, uint64_t old_last);
void __uf_huge_grown(struct uf_object *obj, uint64_t first);
void __uf_huge_widen(struct uf_object *obj, uint64_t *first, uint64_t *last);
void uf_huge_forget(struct uf_object *obj);
uint64_t uf_object_huge_extents(struct uf_object *obj);

/* populate.c */
void uf_vma_populate_cached(struct uf_vma *vma);
void uf_object_populate_cached(struct uf_object *obj, uint64_t first, uint64_t n);


/* object.c: the cache's inode mode (read-only clients cannot reopen it
 * writable) */
int uf_cache_fd_restrict(int fd);

/* truncate.c */
int uf_object_cache_map(struct uf_object *obj, uint64_t size);
int __uf_object_set_size(struct uf_object *obj, uint64_t size);

/* store_file.c */
extern const struct uf_store_ops uf_file_store_ops;
int uf_file_store_new(int fd, void **storep);
void uf_file_store_free_child(void *store);
int uf_file_store_open(int fd, bool writer, void **storep);
struct stat;
int uf_file_store_stat(void *store, struct stat *st);

/* workingset.c: recording what is touched, prefetching it again */
struct uf_ra_req;
bool uf_ws_window(struct uf_object *obj, const struct uf_vma *vma, uint64_t pgoff,
		  struct uf_ra_req *req);
void uf_ws_filled(struct uf_object *obj, uint64_t first, uint64_t n, bool fault);
bool uf_ws_watching(struct uf_object *obj);
void uf_ws_unwatch(struct uf_object *obj);
void uf_ws_checkpoint(struct uf_object *obj);
void uf_ws_note(struct uf_object *obj, uint64_t first, uint64_t n, bool checked);
void uf_ws_release(struct uf_object *obj);
void uf_ws_free_child(struct uf_object *obj);

/* A working set read from a record file (uf_object_serve_prefetch):
 * shared by the processes it is pushed into, freed by its last put. */
struct uf_ws_run {
	uint64_t start, len;
};
struct uf_ws_set {
	int refs;			/* atomic */
	struct uf_ws_run *runs;		/* in recorded order */
	struct uf_ws_run *sorted;	/* by first page */
	size_t nruns;
};
uint64_t uf_ws_serve_claim(struct uf_object *obj, struct uf_ws_set **setp);
void uf_ws_serve_unclaim(struct uf_object *obj, uint64_t rec);
bool uf_ws_serve_recording(struct uf_object *obj, uint64_t rec);
void uf_ws_serve_note(struct uf_object *obj, uint64_t rec, uint64_t pg);
const struct uf_ws_run *uf_ws_set_find(const struct uf_ws_set *set, uint64_t pg);
void uf_ws_set_put(struct uf_ws_set *set);

/* Test switch (UFAULT_BREAK_PROTOCOL, read by uf_mm_create): fills skip
 * the invalidate lock, so that ufault-stress can show it finds the race. */
extern int uf_break_protocol;
static inline bool uf_protocol_broken(void)
{
	return __atomic_load_n(&uf_break_protocol, __ATOMIC_RELAXED);
}

#endif /* UF_INTERNAL_H */
