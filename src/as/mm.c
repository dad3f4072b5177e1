// SPDX-License-Identifier: MIT
/*
 * struct uf_mm: one address-space manager: its engine (the userfaultfd and
 * handler threads, uffd.c), the VMA table, the objects and the statistics.
 * A process may create several.  The only process-wide state is the
 * cached pid (pid.c) and per-thread buffers (filemap.c).
 */
#define _GNU_SOURCE
#include "as/as.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Dirty tracking for shared writable object mappings, best first:
 *  - asynchronous write-protect + PAGEMAP_SCAN (6.7+): no event per write;
 *  - synchronous write-protect: the first write after a page is cleaned
 *    raises an event.  Used when a cache budget is set, because eviction
 *    must be able to hold writers off a page while it goes (see reclaim.c);
 *  - neither (old kernels): every cached page of such a mapping is dirty.
 */
static int mm_open_uffd(struct uf_mm *mm, unsigned int flags, bool budget)
{
	bool umo = flags & UF_MM_USER_MODE_ONLY;
	uint64_t avail = 0, want;
	int ret;

	ret = uf_uffd_probe(umo, &avail);
	if (ret)
		return ret;
	if (!(avail & UFFD_FEATURE_MISSING_SHMEM) || !(avail & UFFD_FEATURE_THREAD_ID))
		return -ENOSYS;		/* before Linux 4.14 */

	want = UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_THREAD_ID;
	want |= avail & (UFFD_FEATURE_EXACT_ADDRESS | UFFD_FEATURE_POISON);
	/*
	 * The program's own munmap(), mremap() and madvise(MADV_DONTNEED) on
	 * ufault memory: the VMA table follows them (vma.c).
	 */
	want |= avail & (UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMAP |
			 UFFD_FEATURE_EVENT_REMOVE);
	/*
	 * fork(): a child keeps its ufault memory, served as an address space
	 * of its own (as.c), where the kernel grants the fork event (it needs
	 * CAP_SYS_PTRACE; UFFDIO_API refuses it otherwise).  Else regions
	 * are MADV_DONTFORK, as a child's copy would lose its registration
	 * and fill the shared cache with zero pages.
	 */
	if ((avail & UFFD_FEATURE_EVENT_FORK) && !(flags & UF_MM_NO_FORK) &&
	    uf_uffd_probe_feature(umo, UFFD_FEATURE_EVENT_FORK))
		want |= UFFD_FEATURE_EVENT_FORK;
	if (!(flags & UF_MM_NO_WP_ASYNC) && !budget &&
	    (avail & UFFD_FEATURE_WP_ASYNC) && (avail & UFFD_FEATURE_WP_UNPOPULATED) &&
	    (avail & UFFD_FEATURE_WP_HUGETLBFS_SHMEM))
		want |= UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED |
			UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
	else if (avail & UFFD_FEATURE_WP_HUGETLBFS_SHMEM)
		want |= UFFD_FEATURE_WP_HUGETLBFS_SHMEM;

	ret = uf_uffd_open(&mm->uffd, umo, want);
	if (ret)
		return ret;
	mm->fork_events = want & UFFD_FEATURE_EVENT_FORK;
	mm->wp_async = want & UFFD_FEATURE_WP_ASYNC;
	mm->wp_sync = !mm->wp_async && (want & UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	/* PAGEMAP_SCAN: written pages (async mode), mapped pages (reclaim) */
	mm->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (mm->pagemap_fd < 0 && mm->wp_async)
		return -errno;
	return 0;
}

/* ->event: a fork makes an address space (as.c); the rest is vma.c's. */
static void mm_event(void *owner, const struct uffd_msg *msg)
{
	if (msg->event == UFFD_EVENT_FORK)
		uf_as_fork(&((struct uf_mm *)owner)->self, msg);
	else
		uf_vma_event(owner, msg);
}

static int mm_idle_ms(void *owner)
{
	struct uf_mm *mm = owner;
	int ms = uf_fault_idle_ms(mm);

	/* fork children: look now and then whether they are gone (as.c) */
	if (ms < 0 && __atomic_load_n(&mm->nchildren, __ATOMIC_RELAXED))
		ms = 100;
	return ms;
}

static void mm_idle(void *owner)
{
	uf_fault_idle(owner);
	uf_as_reap(owner, false);
}

/* What the engine's handler threads call (uffd.c). */
static const struct uf_uffd_ops mm_uffd_ops = {
	.fault		= uf_fault_handle,	/* fault.c */
	.event		= mm_event,		/* unmap, remap, remove: vma.c */
	.idle_ms	= mm_idle_ms,
	.idle		= mm_idle,
};

/* What the fault path and the page cache call up (cache/mm_types.h). */
static const struct uf_mm_ops mm_ops = {
	.find			= __uf_vma_find,
	.zap			= uf_vma_zap,
	.refresh_object		= uf_vma_refresh_object,
	.collect_writes		= uf_as_collect_writes,
	.collect_writes_try	= __uf_as_collect_writes_try,
	.put			= uf_mm_put,
	.put_child		= uf_mm_put_child,
};

UF_EXPORT int uf_mm_create(const struct uf_mm_config *cfg, struct uf_mm **mmp)
{
	struct uf_mm_config def = { 0 };
	struct uf_mm *mm;
	int ret;

	if (!mmp)
		return -EINVAL;
	if (!cfg)
		cfg = &def;
	if (cfg->handler_threads > UF_MAX_HANDLERS ||
	    (cfg->flags & ~(UF_MM_USER_MODE_ONLY | UF_MM_NO_WP_ASYNC | UF_MM_NO_HUGE |
			    UF_MM_NO_FORK)) ||
	    cfg->reclaim_policy > UF_RECLAIM_FIFO ||
	    (cfg->readahead_max && cfg->readahead_max < PAGE_SIZE))
		return -EINVAL;

	mm = calloc(1, sizeof(*mm));
	if (!mm)
		return -ENOMEM;
	mm->uffd.fd = mm->uffd.stopfd = mm->uffd.kickfd = mm->pagemap_fd = -1;
	mm->refs = 1;		/* dropped by uf_mm_destroy() */
	mm->pid = uf_pid();
	mm->ops = &mm_ops;
	/* the program's own address space: the engine, vma_lock, a table */
	mm->self.mm = mm;
	mm->self.ops = &uf_own_as_ops;
	mm->self.uffd = &mm->uffd;
	mm->self.vma_lock = &mm->vma_lock;
	/* Test switch for ufault-stress: break the truncate protocol on
	 * purpose (see filemap.c), to show that the race finder finds it. */
	if (getenv("UFAULT_BREAK_PROTOCOL"))
		__atomic_store_n(&uf_break_protocol, 1, __ATOMIC_RELAXED);
	mm->ra_max = cfg->readahead_max ? cfg->readahead_max / PAGE_SIZE : 512;
	mm->budget_pages = DIV_ROUND_UP(cfg->cache_budget, PAGE_SIZE);
	/* under a budget, one readahead window is at most 1/8 of it */
	if (mm->budget_pages && mm->ra_max > mm->budget_pages / 8)
		mm->ra_max = mm->budget_pages / 8 ? mm->budget_pages / 8 : 1;
	mm->policy = cfg->reclaim_policy;
	pthread_rwlock_init(&mm->vma_lock, NULL);
	uf_lockdep_class(&mm->vma_lock, UF_LK_VMA);
	pthread_mutex_init(&mm->obj_lock, NULL);
	uf_lockdep_class(&mm->obj_lock, UF_LK_OBJ);
	pthread_mutex_init(&mm->reclaim_lock, NULL);
	uf_lockdep_class(&mm->reclaim_lock, UF_LK_RECLAIM);
	pthread_mutex_init(&mm->charge_lock, NULL);
	uf_lockdep_class(&mm->charge_lock, UF_LK_CHARGE);
	pthread_mutex_init(&mm->poison_lock, NULL);
	uf_lockdep_class(&mm->poison_lock, UF_LK_POISON);
	pthread_mutex_init(&mm->zap_lock, NULL);
	uf_lockdep_class(&mm->zap_lock, UF_LK_ZAP);
	pthread_mutex_init(&mm->as_lock, NULL);
	uf_lockdep_class(&mm->as_lock, UF_LK_AS);
	pthread_mutex_init(&mm->attach_lock, NULL);
	uf_lockdep_class(&mm->attach_lock, UF_LK_ATTACH);
	pthread_cond_init(&mm->attach_cond, NULL);
	pthread_mutex_init(&mm->inflight_lock, NULL);
	uf_lockdep_class(&mm->inflight_lock, UF_LK_INFLIGHT);
	pthread_cond_init(&mm->inflight_cond, NULL);

	ret = mm_open_uffd(mm, cfg->flags, cfg->cache_budget != 0);
	if (ret)
		goto fail;
	ret = uf_uffd_start(&mm->uffd, cfg->handler_threads ? cfg->handler_threads : 1,
			    &mm_uffd_ops, mm);
	if (ret)
		goto fail;
	ret = uf_worker_start(mm);
	if (!ret && !(cfg->flags & UF_MM_NO_HUGE))
		ret = uf_huge_init(mm);
	if (ret)
		goto fail;
	*mmp = mm;
	return 0;
fail:
	uf_mm_destroy(mm);
	return ret;
}

/* The last reference: the objects that outlived the destroy are gone. */
void uf_mm_put(struct uf_mm *mm)
{
	if (uf_forked(mm)) {
		uf_mm_put_child(mm);
		return;
	}
	if (__atomic_sub_fetch(&mm->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	uf_uffd_close(&mm->uffd);
	if (mm->pagemap_fd >= 0)
		close(mm->pagemap_fd);
	uf_table_free(&mm->self.vt);
	uf_huge_free(mm, false);
	pthread_rwlock_destroy(&mm->vma_lock);
	pthread_mutex_destroy(&mm->obj_lock);
	pthread_mutex_destroy(&mm->reclaim_lock);
	pthread_mutex_destroy(&mm->charge_lock);
	pthread_mutex_destroy(&mm->poison_lock);
	pthread_mutex_destroy(&mm->zap_lock);
	free(mm->zaps);
	pthread_mutex_destroy(&mm->as_lock);
	pthread_mutex_destroy(&mm->attach_lock);
	pthread_cond_destroy(&mm->attach_cond);
	pthread_mutex_destroy(&mm->inflight_lock);
	pthread_cond_destroy(&mm->inflight_cond);
	free(mm);
}

/*
 * In a fork child: the last reference to the child's copy of an mm frees
 * its memory and closes the child's copies of its fds, nothing else.  No
 * lock is taken (a thread of the parent may have held any of them at the
 * fork, and it does not exist here), no ioctl is made (the userfaultfd is
 * the parent's), no thread is joined, no eventfd written, and nothing is
 * unmapped (the regions were not inherited: MADV_DONTFORK).
 */
void uf_mm_put_child(struct uf_mm *mm)
{
	if (__atomic_sub_fetch(&mm->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (mm->uffd.fd >= 0)
		close(mm->uffd.fd);
	if (mm->uffd.stopfd >= 0)
		close(mm->uffd.stopfd);
	if (mm->uffd.kickfd >= 0)
		close(mm->uffd.kickfd);
	if (mm->pagemap_fd >= 0)
		close(mm->pagemap_fd);
	uf_nocow_free(mm->uffd.pending);	/* (its parent's: nothing here) */
	uf_table_free(&mm->self.vt);
	uf_huge_free(mm, true);
	free(mm);
}

UF_EXPORT void uf_mm_destroy(struct uf_mm *mm)
{
	struct uf_object *obj;
	struct uf_as *as;

	if (!mm)
		return;
	if (uf_forked(mm)) {
		/* the child's copies of the VMAs hold object references */
		size_t i;

		for (i = 0; i < mm->self.vt.n; i++)
			uf_vma_free_child(mm->self.vt.vmas[i]);
		mm->self.vt.n = 0;
		uf_mm_put_child(mm);
		return;
	}
	/* object calls starting from now fail; those under way complete */
	__atomic_store_n(&mm->dead, true, __ATOMIC_RELEASE);
	/* attached clients let go, attached objects' mappings unmapped */
	uf_attach_destroy_all(mm);
	/* its address spaces let go: other processes' first (SIGBUS for
	 * what they have not got), then the program's own (unmapped) */
	while ((as = uf_as_next_gone(mm)))
		as->ops->destroy(as);
	mm->self.ops->destroy(&mm->self);
	uf_worker_stop(mm);	/* after the mappings: its items hold them */
	uf_huge_stop(mm);

	/* Objects the caller still holds: write them back now; afterwards
	 * uf_object_put() only frees them.  Sync takes mm->vma_lock, which
	 * is outside mm->obj_lock, so sync from a snapshot of the list. */
	{
		struct uf_object **snap;
		size_t n = 0, i;

		pthread_mutex_lock(&mm->obj_lock);
		for (obj = mm->objects; obj; obj = obj->mm_next)
			n++;
		snap = calloc(n ? n : 1, sizeof(*snap));
		for (obj = mm->objects, i = 0; snap && obj; obj = obj->mm_next)
			if (uf_object_tryget(obj))
				snap[i++] = obj;
		n = i;
		pthread_mutex_unlock(&mm->obj_lock);
		/* out of memory: no early sync; the last put still syncs */
		for (i = 0; snap && i < n; i++) {
			uf_object_sync(snap[i]);
			uf_object_put(snap[i]);
		}
		free(snap);
	}

	uf_uffd_stop(&mm->uffd);

	/* orphaned objects keep their pointer (and reference) to the mm:
	 * the mm's memory and fds go with the last of them */
	pthread_mutex_lock(&mm->obj_lock);
	mm->objects = NULL;
	pthread_mutex_unlock(&mm->obj_lock);
	uf_mm_put(mm);
}

static void stats_copy(struct uf_stats *st, const struct uf_counters *c)
{
	int i;

	memset(st, 0, sizeof(*st));
	st->minor_faults = uf_load(&c->minor_faults);
	st->major_faults = uf_load(&c->major_faults);
	st->sigbus = uf_load(&c->sigbus);
	st->oom = uf_load(&c->oom);
	st->pages_read = uf_load(&c->pages_read);
	st->pages_written = uf_load(&c->pages_written);
	st->readahead_pages = uf_load(&c->readahead_pages);
	st->evicted_pages = uf_load(&c->evicted_pages);
	st->huge_collapses = uf_load(&c->huge_collapses);
	st->sigbus_store = uf_load(&c->sigbus_store);
	st->sigbus_room = uf_load(&c->sigbus_room);
	st->sigbus_outside = uf_load(&c->sigbus_outside);
	st->sigbus_other = uf_load(&c->sigbus_other);
	for (i = 0; i < UF_LAT_BUCKETS; i++)
		st->lat_us[i] = uf_load(&c->lat_us[i]);
}

/*
 * uf_mm_stats() and uf_vma_stats() are versioned: UFAULT_0.8 fills the
 * whole struct; UFAULT_0.3's and 0.1's (below) only what their struct had.
 */
__asm__(".symver uf_mm_stats_0_8, uf_mm_stats@@UFAULT_0.8");
__asm__(".symver uf_vma_stats_0_8, uf_vma_stats@@UFAULT_0.8");

UF_EXPORT int uf_mm_stats_0_8(struct uf_mm *mm, struct uf_stats *st);
UF_EXPORT int uf_mm_stats_0_8(struct uf_mm *mm, struct uf_stats *st)
{
	struct uf_object *obj;

	if (!mm || !st)
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	uf_fault_settle(mm);
	uf_as_reap(mm, true);	/* (children gone no longer count) */
	stats_copy(st, &mm->stats);
	pthread_mutex_lock(&mm->obj_lock);
	for (obj = mm->objects; obj; obj = obj->mm_next) {
		st->cache_pages += uf_object_cache_pages(obj);
		st->huge_extents += uf_object_huge_extents(obj);
	}
	pthread_mutex_unlock(&mm->obj_lock);
	return 0;
}

UF_EXPORT int uf_vma_stats_0_8(struct uf_vma *vma, struct uf_stats *st);
UF_EXPORT int uf_vma_stats_0_8(struct uf_vma *vma, struct uf_stats *st)
{
	if (!vma || !st)
		return -EINVAL;
	if (uf_forked(vma->mm))
		return -ECHILD;
	uf_fault_settle(vma->mm);
	stats_copy(st, &vma->stats);
	if (vma->obj) {
		st->cache_pages = uf_object_cache_pages(vma->obj);
		st->huge_extents = uf_object_huge_extents(vma->obj);
	}
	return 0;
}

/*
 * ABI: programs built against UFAULT_0.1's ufault.h pass a struct uf_stats
 * that ends at lat_us; they are bound to these, which fill only that.
 */
#define UF_STATS_0_1_SIZE	offsetof(struct uf_stats, huge_extents)
#define UF_STATS_0_3_SIZE	offsetof(struct uf_stats, sigbus_store)

/* The first @size bytes of the whole struct: what an older one held. */
static int mm_stats_upto(struct uf_mm *mm, struct uf_stats *st, size_t size)
{
	struct uf_stats full;
	int ret;

	if (!st)
		return -EINVAL;
	ret = uf_mm_stats_0_8(mm, &full);
	if (!ret)
		memcpy(st, &full, size);
	return ret;
}

static int vma_stats_upto(struct uf_vma *vma, struct uf_stats *st, size_t size)
{
	struct uf_stats full;
	int ret;

	if (!st)
		return -EINVAL;
	ret = uf_vma_stats_0_8(vma, &full);
	if (!ret)
		memcpy(st, &full, size);
	return ret;
}

UF_EXPORT int uf_mm_stats_0_3(struct uf_mm *mm, struct uf_stats *st);
UF_EXPORT int uf_vma_stats_0_3(struct uf_vma *vma, struct uf_stats *st);
UF_EXPORT int uf_mm_stats_0_1(struct uf_mm *mm, struct uf_stats *st);
UF_EXPORT int uf_vma_stats_0_1(struct uf_vma *vma, struct uf_stats *st);
__asm__(".symver uf_mm_stats_0_3, uf_mm_stats@UFAULT_0.3");
__asm__(".symver uf_vma_stats_0_3, uf_vma_stats@UFAULT_0.3");
__asm__(".symver uf_mm_stats_0_1, uf_mm_stats@UFAULT_0.1");
__asm__(".symver uf_vma_stats_0_1, uf_vma_stats@UFAULT_0.1");

UF_EXPORT int uf_mm_stats_0_3(struct uf_mm *mm, struct uf_stats *st)
{
	return mm_stats_upto(mm, st, UF_STATS_0_3_SIZE);
}

UF_EXPORT int uf_vma_stats_0_3(struct uf_vma *vma, struct uf_stats *st)
{
	return vma_stats_upto(vma, st, UF_STATS_0_3_SIZE);
}

UF_EXPORT int uf_mm_stats_0_1(struct uf_mm *mm, struct uf_stats *st)
{
	return mm_stats_upto(mm, st, UF_STATS_0_1_SIZE);
}

UF_EXPORT int uf_vma_stats_0_1(struct uf_vma *vma, struct uf_stats *st)
{
	return vma_stats_upto(vma, st, UF_STATS_0_1_SIZE);
}
