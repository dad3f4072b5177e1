/* SPDX-License-Identifier: MIT */
/*
 * Private to the files serving another process's memory: serve.c (the
 * regions, uf_object_serve_uffd*()), serve_fault.c (a fault, running
 * ahead), serve_huge.c (hugetlbfs memory), serve_fair.c (tenants over
 * their share served low), serve_push.c (the working set pushed).
 */
#ifndef UF_AS_SERVE_H
#define UF_AS_SERVE_H

#include "as/as.h"

/* Sequential streams per region whose next page is remembered. */
#define SERVE_STREAMS	4
/* Attempts to copy a page that reclaim keeps evicting between the fill
 * and the copy, before the access gets SIGBUS. */
#define SERVE_TRIES	16
/* How long a fault waits for room in a full cache (serve_fill()). */
#define SERVE_ROOM_TRIES	1000
#define SERVE_ROOM_WAIT_US	2000
/* Huge pages a stream's fault in hugetlbfs memory copies past its own. */
#define SERVE_HUGE_AHEAD	2

struct serve_region {
	int refs;			/* VMAs sharing it (splits, forks): atomic */
	uint64_t first, npages;		/* its object pages */
	/* obj->served, under obj->page_lock, with a reference to @obj
	 * (regions_link: truncate and punch leave these pages alone) */
	struct uf_object *obj;
	struct uf_served_range pin;	/* on obj->served */
	unsigned long *removed;		/* a bit per page (atomic ops) */
	uint64_t next[SERVE_STREAMS];	/* where recent runs ended (atomic) */
	unsigned int clock;		/* the next slot of @next (atomic) */
	/* the caller's report of a removal (struct uf_serve_opts) */
	void (*on_remove)(void *arg, uint64_t start, uint64_t len);
	void *arg;
	uint64_t rec;			/* the process's record (uf_ws_serve_claim) */
	struct uf_ws_set *set;		/* the working set pushed into it, or NULL */
	/* 1 + the place in recorded order of the run of @set the last fault
	 * met, and the fault's before (the push goes on after them:
	 * serve_push.c), 0: none; atomic */
	size_t set_met, set_met_prev;
	/* running ahead of a sequential stream (readahead.c; below): its
	 * owner is the process of the stream (a region may be a fork
	 * child's too) */
	struct uf_runahead ahead;
	bool huge;			/* hugetlbfs memory: 2 MiB pages (below) */
	/* hugetlbfs memory: a bit per huge page being delivered now (by a
	 * fault or the run-ahead: the others leave it alone), and one per
	 * huge page delivered (the run-ahead skips them); atomic ops */
	unsigned long *hbusy, *hdone;
	uint32_t hgen;			/* a futex: bumped when a delivery ends */
	int hwaiters;			/* faults waiting on it (atomic) */
	unsigned int tenant;		/* struct uf_serve_opts' (serve_fair.c) */
};

/*
 * Running ahead of a sequential stream: readahead.c's run-ahead decides
 * the windows (ra_max pages each, the first page of each a marker left to
 * the process's fault) and runs the worker; the sink below delivers them.
 * A fault that overtook the worker copies the rest of that window itself,
 * as far as the cache has it, and the worker stops its window at the
 * first page the process has: a window costs a fault, or two, however
 * the worker is scheduled.
 *
 * The sink's copies are the push's (__push_vma): under as->vma_lock
 * shared and obj->invalidate_lock shared, past the balloon's removals,
 * never over a page the process has (EEXIST: skipped), stopped for good
 * when the process is gone (ESRCH).  It fills as a fault does, making
 * room first (the cache stays inside its budget), and copies the pages
 * it fills on from the fill's buffer (ahead_fill_fn); the memfd is read
 * back only for those the cache had.  Each sink holds the address space
 * (uf_uffd_guest_hold), the object and the region.
 */
struct serve_ahead_work {
	struct uf_ra_sink sink;		/* readahead.c's: first */
	struct uf_as *as;		/* held */
	struct uf_object *obj;		/* referenced */
	struct serve_region *r;		/* referenced */
	/* the window being copied: a bit per page the process has from it;
	 * pages from @cut on are left to the process's faults */
	uint64_t first, n, cut;
	unsigned long *done;
};


/* serve.c: regions and their lifetime, the VMAs' ops */
bool region_removed(struct serve_region *r, uint64_t pg);
bool region_stream(struct serve_region *r, uint64_t pg);
void region_stream_note(struct serve_region *r, uint64_t from, uint64_t to);
void region_put(struct serve_region *r);
extern const struct uf_vm_operations serve_vm_ops;

/* serve_fault.c: serving a fault by copy, running ahead of a stream */
int cache_copy(struct uf_object *obj, struct uf_uffd *u, unsigned long addr, uint64_t pg,
	       size_t n, unsigned int mode, size_t *copied);
void ahead_release(struct uf_ra_sink *rs);
int ahead_fair(struct serve_ahead_work *w, uint64_t first, uint64_t n,
	       int (*deliver)(struct serve_ahead_work *w, uint64_t first, uint64_t n));
void ahead_kick(struct uf_vma *vma, struct serve_region *r, uint64_t pg, uint64_t end,
		bool start, bool claimed);
struct uf_page *serve_fault(struct uf_vma *vma, struct uf_fault_data *fdata);

/* serve_huge.c: hugetlbfs memory, 2 MiB pages */
extern const struct uf_ra_sink_ops huge_sink_ops;
size_t huge_win(const struct uf_mm *mm);
int huge_region_init(struct serve_region *r);
struct uf_page *serve_fault_huge(struct uf_vma *vma, struct uf_fault_data *fdata);

/* serve_fair.c: how many of the mm's handler threads may wait at once in
 * serve_fair_begin() (all but one: the others' faults go on) */
unsigned int serve_fair_waiters(const struct uf_vma *vma);

/* serve_push.c: a working set pushed into the process */
struct serve_push;
struct serve_push *push_create(struct uf_object *obj, struct uf_ws_set *set,
			       unsigned int tenant);
void push_go(struct serve_push *p, struct uf_as *as);

#endif /* UF_AS_SERVE_H */
