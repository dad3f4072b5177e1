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
 * Not under a cache budget: there, reclaim reads "mapped" as "referenced"
 * (reclaim.c), and a mapping must show only what the program touched.
 *
 * Locking: takes obj->invalidate_lock shared, so no page of a run leaves
 * the cache (truncate, punch, reclaim) while it is populated.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22	/* Linux 5.14 */
#endif

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
	if (!obj || !(flags & VMA_WP) || mm->budget_pages)
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
