// SPDX-License-Identifier: MIT
/*
 * Warm writable shared mappings.
 *
 * A writable shared object mapping is registered for write-protect (dirty
 * tracking, writeback.c), and a write-protect registration turns the
 * kernel's fault-around off: every page the program reads through it takes
 * its own kernel fault, where a read-only mapping gets 16 pages per fault.
 * So when such a mapping is made, what the cache already holds is mapped at
 * once with MADV_POPULATE_READ, run by run.  A populated page keeps its
 * write-protect marker (the read maps it protected), so the first write to
 * it is still seen and a later sync writes exactly the written pages.
 *
 * Likewise the pages a working-set prefetch brings in (ws_replay.c) are
 * mapped as they arrive, in the mappings of the program's own that the
 * prefetch's copy does not fill directly: private ones, and the shared
 * mappings of a read-only object (which are the memfd mapped private).
 * On this kind of machine a read fault on a cached page costs several
 * times what the first touch of a page mapped ahead does (a hypervisor
 * that shadows page tables makes every fault an exit), so a prefetched
 * page left unmapped would still cost the program a fault.
 *
 * Neither under a cache budget: there, reclaim reads "mapped" as
 * "referenced" (reclaim.c), and a mapping must show only what the program
 * touched.
 *
 * Locking: takes obj->invalidate_lock shared, so no page of a run leaves
 * the cache (truncate, punch, reclaim) while it is populated: a populate
 * of a present page is the kernel's own minor fault, never a userfault.
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SYS_process_madvise
#define SYS_process_madvise	440
#endif
#define PIDFD_SELF_PROCESS	(-10001)	/* PIDFD_SELF_THREAD_GROUP, 6.15+ */
#define POPULATE_IOV		128		/* ranges of one process_madvise */

void uf_vma_populate_cached(struct uf_vma *vma)
{
	struct uf_object *obj = vma->obj;
	struct uf_mm *mm = vma->mm;
	off_t first, off, end, size;
	unsigned long start, len;
	unsigned int flags;

	/* (the program may unmap or move the mapping at any time: the VMA's
	 * fields are read under the VMA lock) */
	pthread_rwlock_rdlock(&mm->vma_lock);
	flags = vma->flags;
	start = vma->start;
	len = vma->end - vma->start;
	first = (off_t)(vma->pgoff << PAGE_SHIFT);
	pthread_rwlock_unlock(&mm->vma_lock);
	/* (a watched record: a mapping shows only what was touched) */
	if (!obj || !(flags & VMA_WP) || mm->budget_pages || uf_fill_watched(obj))
		return;
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	size = (off_t)((obj->size + PAGE_SIZE - 1) & PAGE_MASK);
	end = first + (off_t)len;
	if (end > size)
		end = size;
	/* the cache's own view of what it holds: data and holes of the memfd */
	for (off = first; off < end; ) {
		off_t data = lseek(obj->memfd, off, SEEK_DATA), hole;

		if (data < 0 || data >= end)
			break;
		hole = lseek(obj->memfd, data, SEEK_HOLE);
		if (hole < 0 || hole > end)
			hole = end;
		/* best effort: an old kernel without it just maps on faults */
		if (madvise((void *)(start + (unsigned long)(data - first)),
			    (size_t)(hole - data), MADV_POPULATE_READ) < 0 && errno == EINVAL)
			break;
		off = hole;
	}
	pthread_rwlock_unlock(&obj->invalidate_lock);
}

/* process_madvise(2) cannot populate this process here (before 6.15 it
 * knows no PIDFD_SELF; before 6.13 it refuses MADV_POPULATE_READ) */
static bool populate_vec_off;

/* MADV_POPULATE_READ over @n ranges: one process_madvise(2) where the
 * kernel has it for this, else one madvise(2) each.  Best effort. */
static void populate_vec(struct iovec *iov, size_t n)
{
	size_t i;

	if (!n)
		return;
	if (!__atomic_load_n(&populate_vec_off, __ATOMIC_RELAXED)) {
		if (syscall(SYS_process_madvise, PIDFD_SELF_PROCESS, iov, n, MADV_POPULATE_READ,
			    0) >= 0 || (errno != EBADF && errno != EINVAL && errno != ENOSYS &&
					errno != EPERM && errno != ESRCH))
			return;
		__atomic_store_n(&populate_vec_off, true, __ATOMIC_RELAXED);
	}
	for (i = 0; i < n; i++)
		if (madvise(iov[i].iov_base, iov[i].iov_len, MADV_POPULATE_READ) < 0 &&
		    errno == EINVAL)
			return;		/* an old kernel: faults map them */
}

/*
 * Map the pages of @n runs of @obj (a prefetch's batch) where the cache
 * holds them, in each linear mapping of the program's own that a fill's
 * copy does not map (see copy_dest() in fill.c): private mappings and
 * read-only objects' shared ones; the ranges of all runs in one system
 * call per mapping.  Best effort, and no fault of the program's is waited
 * for: the VMA lock is only tried.
 * Locking: takes mm->vma_lock shared (tried), obj->invalidate_lock shared,
 * obj->rmap_lock shared; none may be held by the caller.
 */
void uf_object_populate_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n)
{
	struct iovec iov[POPULATE_IOV];
	struct uf_mm *mm = obj->mm;
	struct uf_vma *vma;
	size_t i, niov;

	if (mm->budget_pages || !n || pthread_rwlock_tryrdlock(&mm->vma_lock))
		return;
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(vma, obj) {
		uint64_t vend = vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT);

		if (uf_vma_remote(vma) || vma->nl_pgoff || __atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) ||
		    ((vma->flags & VMA_SHARED) && !(vma->flags & VMA_PRIV_MAP)))
			continue;
		for (i = 0, niov = 0; i < n; i++) {
			uint64_t a = runs[i].start > vma->pgoff ? runs[i].start : vma->pgoff;
			uint64_t b = runs[i].start + runs[i].len < vend ? runs[i].start + runs[i].len
								   : vend;

			while (a < b) {
				uint64_t e;

				if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, a)) {
					a++;
					continue;
				}
				for (e = a + 1; e < b &&
				     uf_pagebits_test(&obj->pages, UF_PG_PRESENT, e); e++)
					;
				if (niov == POPULATE_IOV) {
					populate_vec(iov, niov);
					niov = 0;
				}
				iov[niov].iov_base = (void *)(vma->start +
							      ((a - vma->pgoff) << PAGE_SHIFT));
				iov[niov++].iov_len = (size_t)(e - a) << PAGE_SHIFT;
				a = e;
			}
		}
		populate_vec(iov, niov);
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	pthread_rwlock_unlock(&mm->vma_lock);
}
