// SPDX-License-Identifier: MIT
/*
 * Dirty pages and writeback: uf_object_sync(), and what uf_msync() (vma.c)
 * calls for each object it syncs, uf_object_sync_range(); and the pages a
 * mapping shows present (uf_vma_present(), PAGEMAP_SCAN as the dirty
 * scans use it, for reclaim and a watched record).
 *
 * A page is dirty when its bit in obj->pages says so (UF_PG_DIRTY:
 * uf_object_pwrite() and write faults set it) or
 * when a shared writable mapping wrote it.  Mapping writes are found with
 * asynchronous userfaultfd write-protect: the mapping is registered WP with
 * UFFD_FEATURE_WP_ASYNC, a write clears the protection without any event,
 * and PAGEMAP_SCAN reports the written pages and protects them again in the
 * same call.  A write after the scan is seen by the next one: no write is
 * lost.  With a cache budget (or without WP_ASYNC) the protection is
 * synchronous instead: the first write to a clean page raises an event,
 * handle_wp_fault() marks the page dirty and lifts the protection, and
 * writeback protects a page again before it reads its bytes.  Without any
 * write-protect support, every cached page of such a mapping is dirty.
 *
 * Only cached pages carry write protection: a hole's first access is a
 * missing-page event, and the fill protects it in every tracked mapping
 * before its copy (__uf_object_protect_holes); a new mapping protects
 * what is cached (uf_vma_protect_cached).  Scans and protects walk cached
 * runs, so they cost what is cached, not the mappings' length.
 *
 * Locks (the order is in lockorder.h): obj->sync_lock, mm->vma_lock shared,
 * obj->invalidate_lock, obj->rmap_lock, obj->page_lock.
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Call @fn(@arg, pg) for the object page of each address of [start, end)
 * in @vma that the process's page tables map now (PAGEMAP_SCAN of the
 * pagemap @fd, PAGE_IS_PRESENT), in address order.  A scan that fails
 * ends it: the rest looks unmapped.
 * Locking: obj->rmap_lock held (any mode), for where @vma lies.
 */
void uf_vma_present(int fd, const struct uf_vma *vma, unsigned long start, unsigned long end,
		    void (*fn)(void *arg, uint64_t pg), void *arg)
{
	struct page_region vec[64];
	struct pm_scan_arg scan = {
		.size = sizeof(scan),
		.vec = (unsigned long)vec,
		.vec_len = 64,
		.category_mask = PAGE_IS_PRESENT,
		.return_mask = PAGE_IS_PRESENT,
	};

	while (start < end) {
		unsigned long a;
		long n, i;

		scan.start = start;
		scan.end = end;
		n = ioctl(fd, PAGEMAP_SCAN, &scan);
		if (n < 0)
			return;
		for (i = 0; i < n; i++)
			for (a = vec[i].start; a < vec[i].end; a += PAGE_SIZE)
				fn(arg, __uf_vma_pgoff(vma, a));
		if (scan.walk_end <= start)
			return;
		start = scan.walk_end;
	}
}

int uf_vma_writeprotect(struct uf_vma *vma, unsigned long start, unsigned long len)
{
	return uf_uffd_writeprotect(&vma->mm->uffd, start, len, true, false);
}

/*
 * The next run of cached pages in [*p, end): set *p to its first page and
 * return its end (*p == end: none).  Cost: what is cached.
 * Locking: obj->invalidate_lock held.
 */
static uint64_t next_cached_run(struct uf_object *obj, uint64_t *p, uint64_t end)
{
	uint64_t q = uf_pagebits_next(&obj->pages, UF_PG_PRESENT, *p, end);

	*p = q;
	while (q < end && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q))
		q++;
	return q;
}

/*
 * Write-protect what [start, end) of @vma shows of the cache, for a
 * mapping that begins write-protect tracking there (made, grown, made
 * writable): the kernel would map a cached page on its first access
 * without the protection, and let a write through untracked (synchronous
 * mode) or report a read as a write (asynchronous).  Holes need nothing:
 * their first access is a missing-page event, and a fill protects them in
 * every tracked mapping before it copies (__uf_object_protect_holes).  So
 * the cost, page tables included, is what is cached, not the length.  A
 * nonlinear VMA, whose windows show any page, is protected whole.
 * Locking: mm->vma_lock held exclusive; takes obj->invalidate_lock shared.
 */
int uf_vma_protect_cached(struct uf_vma *vma, unsigned long start, unsigned long end)
{
	struct uf_object *obj = vma->obj;
	uint64_t pg0, p, e, q;
	int ret = 0;

	if (!obj || start >= end)
		return 0;
	if (vma->nl_pgoff)
		return uf_vma_writeprotect(vma, start, end - start);
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	pg0 = p = __uf_vma_pgoff(vma, start);
	e = pg0 + ((end - start) >> PAGE_SHIFT);
	while (!ret && p < e) {
		q = next_cached_run(obj, &p, e);
		if (p < q)
			ret = uf_vma_writeprotect(vma, start + ((p - pg0) << PAGE_SHIFT),
						  (q - p) << PAGE_SHIFT);
		p = q;
	}
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return ret;
}

/* The addresses of @vma (nonlinear) that show pages [first, first + n),
 * protected run by run.  Cost: the VMA's length (windows are small). */
static int protect_holes_nonlinear(struct uf_vma *vma, uint64_t first, uint64_t n)
{
	size_t npages = (vma->end - vma->start) >> PAGE_SHIFT, i, j;
	int ret;

	for (i = 0; i < npages; i = j) {
		uint64_t pg = vma->nl_pgoff[i] & ~NL_WINDOW;

		if (pg < first || pg >= first + n) {
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < npages && (vma->nl_pgoff[j] & ~NL_WINDOW) >= first &&
		     (vma->nl_pgoff[j] & ~NL_WINDOW) < first + n; j++)
			;
		ret = uf_uffd_writeprotect_mapped(&vma->mm->uffd, vma->start + (i << PAGE_SHIFT),
						  (j - i) << PAGE_SHIFT, true, false);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Object pages [first, first + n), holes, are about to enter the cache:
 * write-protect them first in every write-protect tracked mapping of @obj
 * but @skip (a copy straight into @skip maps them protected itself), so
 * that no mapping ever shows them unprotected (see uf_vma_protect_cached).
 * On a none PTE the protection is a marker, which the kernel keeps when it
 * later maps the page.  Return 0, or -EAGAIN (or another error) when a
 * mapping cannot be protected now: the program changed its mappings and
 * the table does not show it yet (an address may be another mapping's by
 * now); the caller must not then insert the pages as clean.
 * Locking: obj->rmap_lock held shared (the mappings stay where they are),
 * obj->page_lock held (no other protect or fill of these pages between the
 * check that they are holes and the copy).
 */
int __uf_object_protect_holes(struct uf_object *obj, uint64_t first, uint64_t n,
			      const struct uf_vma *skip)
{
	struct uf_vma *vma;
	int ret;

	uf_rmap_foreach(vma, obj) {
		uint64_t vend = vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT), a, b;

		if (!(__atomic_load_n(&vma->flags, __ATOMIC_RELAXED) & VMA_WP) || vma == skip)
			continue;
		if (vma->nl_pgoff) {
			ret = protect_holes_nonlinear(vma, first, n);
			if (ret)
				return ret;
			continue;
		}
		a = first > vma->pgoff ? first : vma->pgoff;
		b = first + n < vend ? first + n : vend;
		if (a >= b)
			continue;
		ret = uf_uffd_writeprotect_mapped(&obj->mm->uffd,
						  vma->start + ((a - vma->pgoff) << PAGE_SHIFT),
						  (b - a) << PAGE_SHIFT, true, false);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Mark dirty the cached object pages that [start, end) of @vma shows (a
 * page not in the cache has nothing to write).  Cost: what is cached
 * (page by page in a nonlinear VMA).
 * Locking: mm->vma_lock held (any mode), obj->invalidate_lock shared.
 */
void __uf_vma_mark_dirty(struct uf_vma *vma, unsigned long start, unsigned long end)
{
	struct uf_object *obj = vma->obj;
	unsigned long a;

	if (!vma->nl_pgoff) {
		uint64_t p = __uf_vma_pgoff(vma, start), e = p + ((end - start) >> PAGE_SHIFT);

		for (p = uf_pagebits_next(&obj->pages, UF_PG_PRESENT, p, e); p < e;
		     p = uf_pagebits_next(&obj->pages, UF_PG_PRESENT, p + 1, e))
			uf_pagebits_set(&obj->pages, UF_PG_DIRTY, p);
		return;
	}
	for (a = start; a < end; a += PAGE_SIZE) {
		uint64_t pgoff = __uf_vma_pgoff(vma, a);

		/* a present page has its leaf: setting cannot fail */
		if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pgoff))
			uf_pagebits_set(&obj->pages, UF_PG_DIRTY, pgoff);
	}
}

/*
 * Mark dirty the pages of [start, end) of @vma that the kernel reports
 * written (or mapped, without write-protect tracking).  A present page is
 * dirty.  So is a page the cache's memfd holds that is not present yet: a
 * fill has copied it but not yet marked it (the fill holds
 * invalidate_lock shared, as the caller does), and a thread can write it
 * in that window; the scan clears its written bit, so waiting for the
 * present bit would lose the write.  The memfd is asked (mincore on
 * cache_map), because the scan also reports pages that hold no page at all
 * (a store error's poison marker): their hole must not reach the store.
 * Writeback reads the page from the memfd either way.  One mincore() asks
 * for MARK_BATCH pages: a mapping of gigabytes, mostly holes, leaving a
 * server costs it a call per batch, not per page.  A fork child's VMA
 * leaving its table marks what the child may have written the same way
 * (as.c).
 * Locking: obj->invalidate_lock held (either mode).
 */
#define MARK_BATCH	1024

void __uf_vma_mark_written(struct uf_vma *vma, unsigned long start, unsigned long end)
{
	struct uf_object *obj = vma->obj;
	uint64_t cap = obj->cache_cap >> PAGE_SHIFT;	/* pages cache_map shows */
	unsigned char vec[MARK_BATCH];
	unsigned long a;
	size_t n, k, in;

	for (a = start; a < end; a += n << PAGE_SHIFT) {
		uint64_t pg0 = __uf_vma_pgoff(vma, a);
		bool all = true;

		/* a batch of pages whose offsets follow on (a nonlinear
		 * window may break the run), each looked at in one call */
		n = (end - a) >> PAGE_SHIFT < MARK_BATCH ? (end - a) >> PAGE_SHIFT : MARK_BATCH;
		for (k = 0; k < n; k++) {
			if (k && __uf_vma_pgoff(vma, a + (k << PAGE_SHIFT)) != pg0 + k) {
				n = k;
				break;
			}
			all &= uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pg0 + k);
		}
		memset(vec, 0, n);
		in = pg0 >= cap ? 0 : cap - pg0 < n ? (size_t)(cap - pg0) : n;
		if (!all && in && mincore(obj->cache_map + (pg0 << PAGE_SHIFT), in << PAGE_SHIFT, vec))
			memset(vec, 0, n);
		for (k = 0; k < n; k++)
			if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pg0 + k) || (vec[k] & 1))
				(void)uf_pagebits_set(&obj->pages, UF_PG_DIRTY, pg0 + k);
	}
}

/*
 * Move the "written" state of [start, end) of @vma into the dirty bits.
 * Locking: obj->invalidate_lock held shared.
 */
static int collect_range(struct uf_vma *vma, unsigned long start, unsigned long end)
{
	struct uf_mm *mm = vma->mm;
	int ret = 0;

	if (vma->flags & VMA_WP) {
		struct page_region vec[64];
		struct pm_scan_arg arg = {
			.size = sizeof(arg),
			.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			.vec = (unsigned long)vec,
			.vec_len = 64,
			.category_mask = PAGE_IS_WRITTEN,
			.return_mask = PAGE_IS_WRITTEN,
		};

		while (start < end) {
			long n, i;

			arg.start = start;
			arg.end = end;
			n = ioctl(mm->pagemap_fd, PAGEMAP_SCAN, &arg);
			if (n < 0 && errno == EPERM) {
				/* part of the range is no longer write-protect
				 * tracked (the program remapped it, its event
				 * not applied yet): take its pages as dirty */
				__uf_vma_mark_dirty(vma, start, end);
				break;
			}
			if (n < 0) {
				ret = -errno;
				break;
			}
			for (i = 0; i < n; i++)
				__uf_vma_mark_written(vma, vec[i].start, vec[i].end);
			if (arg.walk_end <= start)
				break;
			start = arg.walk_end;
		}
	} else {
		/* no asynchronous write-protect: every cached page may be dirty */
		size_t npages = (end - start) >> PAGE_SHIFT, i;
		unsigned char *vec = malloc(npages ? npages : 1);

		if (!vec || mincore((void *)start, end - start, vec) < 0) {
			ret = vec ? -errno : -ENOMEM;
		} else {
			for (i = 0; i < npages; i++)
				if (vec[i] & 1)
					__uf_vma_mark_written(vma, start + (i << PAGE_SHIFT),
						     start + ((i + 1) << PAGE_SHIFT));
		}
		free(vec);
	}
	return ret;
}

/*
 * The work of uf_vma_collect_dirty(), below, once its locks are taken.
 * Locking: obj->invalidate_lock held shared, copies in flight done.
 */
static int __collect_dirty(struct uf_vma *vma, unsigned long start, unsigned long end)
{
	struct uf_object *obj = vma->obj;
	uint64_t pg0, p, e, q;
	int ret = 0;

	if (vma->nl_pgoff)
		return collect_range(vma, start, end);	/* windows show any page */
	pg0 = p = __uf_vma_pgoff(vma, start);
	e = pg0 + ((end - start) >> PAGE_SHIFT);
	while (!ret && p < e) {
		q = next_cached_run(obj, &p, e);
		if (p < q)
			ret = collect_range(vma, start + ((p - pg0) << PAGE_SHIFT),
					    start + ((q - pg0) << PAGE_SHIFT));
		p = q;
	}
	return ret;
}

/*
 * Move the "written" state of [start, end) of a shared writable object
 * mapping into the dirty bits (obj->pages), write-protecting the pages
 * again.  Only the cached runs are scanned: a scan that matches
 * write-protect over a hole reports it written and puts a marker on every
 * PTE of it, page tables the length of the mapping.  A page being copied
 * in is in no run yet: obj->rmap_lock, held shared by a fill from its copy
 * to its present bit, is taken once here so that every copy made before
 * the call counts (a write it had then would be lost to an unmap).
 * Locking: mm->vma_lock held (any mode), or the VMA is already unlinked.
 * Takes obj->invalidate_lock shared: the page state (pagebits.c) is not
 * freed under it.
 */
int uf_vma_collect_dirty(struct uf_vma *vma, unsigned long start, unsigned long end)
{
	struct uf_object *obj = vma->obj;
	int ret;

	if (vma->mm->wp_sync)
		return 0;	/* the dirty bits are kept exact by write faults */
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	pthread_rwlock_wrlock(&obj->rmap_lock);
	pthread_rwlock_unlock(&obj->rmap_lock);
	ret = __collect_dirty(vma, start, end);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return ret;
}

/* Collect the written pages of every shared writable mapping of @obj.
 * Locking: mm->vma_lock held shared; takes obj->invalidate_lock and
 * obj->rmap_lock shared, as uf_vma_collect_dirty() does. */
static int __object_collect_dirty(struct uf_object *obj)
{
	struct uf_vma *vma;
	int ret = 0;

	if (obj->mm->wp_sync)
		return 0;
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	pthread_rwlock_wrlock(&obj->rmap_lock);		/* copies in flight done */
	pthread_rwlock_unlock(&obj->rmap_lock);
	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(vma, obj) {
		if ((vma->flags & VMA_SHARED) && (vma->prot & PROT_WRITE)) {
			int r = __collect_dirty(vma, vma->start, vma->end);

			if (r && !ret)
				ret = r;
		}
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return ret;
}

/*
 * Synchronous write-protect: protect object pages [first, first + n) again
 * in every shared writable mapping, so the next write to them faults.
 * Locking: mm->vma_lock and obj->rmap_lock held shared.
 */
void __uf_object_protect(struct uf_object *obj, uint64_t first, uint64_t n)
{
	struct uf_vma *vma;

	uf_rmap_foreach(vma, obj) {
		uint64_t vfirst, vlast;

		if (!(vma->flags & VMA_WP))
			continue;
		if (vma->nl_pgoff) {
			uf_vma_writeprotect(vma, vma->start, vma->end - vma->start);
			continue;
		}
		vfirst = first > vma->pgoff ? first : vma->pgoff;
		vlast = first + n < vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT) ?
			first + n : vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT);
		if (vfirst < vlast)
			uf_vma_writeprotect(vma, vma->start + ((vfirst - vma->pgoff) << PAGE_SHIFT),
					    (vlast - vfirst) << PAGE_SHIFT);
	}
}

#define WB_BATCH 64	/* pages per store write */

/*
 * Write the dirty pages of [first, last] to the store.  A page's dirty bit
 * is cleared (and, with synchronous write-protect, the page protected
 * again) before its bytes are read, so a write racing with writeback marks
 * it again.  A page whose write fails is marked dirty again.
 * Return 0 or the first store error.
 * Locking: mm->vma_lock held shared (unless the mm is gone) and
 * obj->invalidate_lock held; either obj->sync_lock or the invalidate lock
 * exclusive keeps other writebacks out.
 */
int __uf_object_writeback(struct uf_object *obj, uint64_t first, uint64_t last)
{
	bool sync_wp = obj->mm && obj->mm->wp_sync;
	uint64_t size, end, p;
	struct uf_bounce *bounce;
	char *buf;
	int err = 0;

	size = obj->size;
	end = DIV_ROUND_UP(size, PAGE_SIZE);
	if (last >= end)
		last = end ? end - 1 : 0;
	bounce = uf_bounce_get(WB_BATCH << PAGE_SHIFT, (void **)&buf);
	if (!bounce)
		return -ENOMEM;
	for (p = first; end && p <= last; ) {
		uint64_t run, off, i;
		size_t len;
		ssize_t n;
		int ret;

		/* only the dirty pages are visited: cost what is cached */
		p = uf_pagebits_next(&obj->pages, UF_PG_DIRTY, p, last + 1);
		if (p > last)
			break;
		if (sync_wp) {
			pthread_rwlock_rdlock(&obj->rmap_lock);
			pthread_mutex_lock(&obj->page_lock);
		}
		for (run = 0; p + run <= last && run < WB_BATCH &&
		     uf_pagebits_clear(&obj->pages, UF_PG_DIRTY, p + run); run++)
			;
		if (sync_wp) {
			if (run)
				__uf_object_protect(obj, p, run);
			pthread_mutex_unlock(&obj->page_lock);
			pthread_rwlock_unlock(&obj->rmap_lock);
		}
		if (!run) {		/* cleaned meanwhile */
			p++;
			continue;
		}
		off = p << PAGE_SHIFT;
		len = run << PAGE_SHIFT;
		if (off + len > size)
			len = size - off;	/* never past EOF */
		n = pread(obj->memfd, buf, len, (off_t)off);
		if (n < 0)
			ret = -errno;
		else {
			if ((size_t)n < len)
				memset(buf + n, 0, len - (size_t)n);
			ret = obj->ops->write(obj->store, buf, len, off);
		}
		if (ret) {
			for (i = 0; i < run; i++)
				uf_pagebits_set(&obj->pages, UF_PG_DIRTY, p + i);
			if (!err)
				err = ret;
		} else if (obj->mm) {
			uf_add(&obj->mm->stats.pages_written, run);
		}
		p += run;
	}
	uf_bounce_put(bounce);
	return err;
}

/* Collect and write back [first, last] of @obj, then ->sync the store.
 * Locking: takes obj->sync_lock, mm->vma_lock, obj->invalidate_lock. */
int uf_object_sync_range(struct uf_object *obj, uint64_t first, uint64_t last, bool collect)
{
	struct uf_mm *mm = obj->mm;
	int ret = 0, r;

	/* the table as the kernel has it: events applied, growth and the
	 * system's mprotect() seen */
	if (collect && mm && !__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE)) {
		uf_uffd_quiesce(&mm->uffd);
		mm->ops->refresh_object(obj);
	}
	pthread_mutex_lock(&obj->sync_lock);
	/* what fork children may have written (as.c) */
	if (mm && !__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		mm->ops->collect_writes(obj);
	if (mm)
		pthread_rwlock_rdlock(&mm->vma_lock);
	if (collect && mm)
		ret = __object_collect_dirty(obj);
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	r = __uf_object_writeback(obj, first, last);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	if (mm)
		pthread_rwlock_unlock(&mm->vma_lock);
	if (r)
		ret = r;
	if (!ret && obj->ops->sync)
		ret = obj->ops->sync(obj->store);
	pthread_mutex_unlock(&obj->sync_lock);
	return ret;
}

/*
 * A write fault on a write-protected page (synchronous mode): the page is
 * dirty now; lift the protection, which wakes the writer.  A page evicted
 * meanwhile keeps its protection marker: the writer faults it in again.
 */
void uf_handle_wp_fault(struct uf_vma *vma, unsigned long addr, uint64_t pgoff)
{
	struct uf_object *obj = vma->obj;
	unsigned long page_addr = addr & PAGE_MASK;

	if (!obj) {
		uf_uffd_wake(&vma->mm->uffd, page_addr, PAGE_SIZE);
		return;
	}
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	pthread_mutex_lock(&obj->page_lock);
	if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pgoff)) {
		uf_pagebits_set(&obj->pages, UF_PG_DIRTY, pgoff);
		/* lifting the protection wakes the writer */
		if (uf_uffd_writeprotect(&vma->mm->uffd, page_addr, PAGE_SIZE, false, false) < 0)
			uf_uffd_wake(&vma->mm->uffd, page_addr, PAGE_SIZE);
	} else {
		uf_uffd_wake(&vma->mm->uffd, page_addr, PAGE_SIZE);
	}
	pthread_mutex_unlock(&obj->page_lock);
	pthread_rwlock_unlock(&obj->invalidate_lock);
}

UF_EXPORT int uf_object_sync(struct uf_object *obj)
{
	if (obj && obj->attach && !uf_object_forked(obj))
		return obj->remote->sync(obj);
	if (!obj || !obj->ops)
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	/* a store that cannot be written (no ->write: HTTP, a packed
	 * snapshot) refuses; an object opened read-only over one that can
	 * has nothing dirty, as fsync(2) of an O_RDONLY file */
	if (!obj->ops->write)
		return -EROFS;
	if (obj->readonly)
		return 0;
	return uf_object_sync_range(obj, 0, UINT64_MAX, true);
}
