// SPDX-License-Identifier: MIT
/*
 * Nonlinear mappings: uf_remap_file_pages() turns part of a shared object
 * mapping into a window onto arbitrary pages of the object.
 *
 * The window is the object's memfd mapped MAP_FIXED over the range at the
 * window's offset, registered with userfaultfd again.  (The kernel's own
 * remap_file_pages() is emulated the same way since 4.0, and drops the
 * userfaultfd registration: it must not be used.)  vma->nl_pgoff records,
 * page by page, which object page each address shows; faults there reach
 * ->fault with that pgoff and UF_FAULT_FLAG_NONLINEAR.  Truncate and hole
 * punch reach windows as any mapping of the memfd.
 *
 * Locks (the order is in lockorder.h): mm->vma_lock exclusive here.
 */
#define _GNU_SOURCE
#include "as/as.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

/*
 * Put back what [s, e) showed before a remap that failed half way: the
 * pages nl_pgoff still records, run by run.  Best effort: the kernel has
 * already failed once.
 * Locking: mm->vma_lock held exclusive.
 */
static void restore(struct uf_vma *vma, unsigned long s, unsigned long e)
{
	unsigned long a = s;

	while (a < e) {
		uint64_t idx = (a - vma->start) >> PAGE_SHIFT;
		uint64_t pg = vma->nl_pgoff[idx] & ~NL_WINDOW, n = 1;

		while (a + (n << PAGE_SHIFT) < e &&
		       (vma->nl_pgoff[idx + n] & ~NL_WINDOW) == pg + n)
			n++;
		if (uf_vma_map_fixed(vma, a, n << PAGE_SHIFT, pg << PAGE_SHIFT) != MAP_FAILED)
			uf_vma_register(vma, a, n << PAGE_SHIFT);
		a += n << PAGE_SHIFT;
	}
}

UF_EXPORT int uf_remap_file_pages(struct uf_mm *mm, void *start, size_t size,
				  int prot, uint64_t pgoff, int flags)
{
	unsigned long s = (unsigned long)start, e, i;
	struct uf_vma *vma;
	bool fresh;
	void *p;
	int ret;

	if (!mm || !PAGE_ALIGNED(s) || !size || !PAGE_ALIGNED(size) || prot || flags)
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	e = s + size;
	if (e < s || pgoff > ((uint64_t)INT64_MAX >> PAGE_SHIFT) - (size >> PAGE_SHIFT))
		return -EINVAL;

	/* the mapping as the program left it (moved, grown in place) */
	uf_uffd_quiesce(&mm->uffd);
	uf_vma_refresh(mm, s, e);
	pthread_rwlock_wrlock(&mm->vma_lock);
	vma = __uf_vma_find(mm, s);
	fresh = false;
	ret = -EINVAL;
	if (!vma || e > vma->end || !vma->obj || !(vma->flags & VMA_SHARED) ||
	    !vma->vm_ops->fault)
		goto out;
	if (!vma->nl_pgoff) {
		size_t n = (vma->end - vma->start) >> PAGE_SHIFT;
		uint64_t *nl = malloc(n * sizeof(*nl));

		ret = -ENOMEM;
		if (!nl)
			goto out;
		for (i = 0; i < n; i++)
			nl[i] = vma->pgoff + i;
		/* (a fill reads it under rmap_lock alone: lockorder.h, RMAP) */
		pthread_rwlock_wrlock(&vma->obj->rmap_lock);
		vma->nl_pgoff = nl;
		pthread_rwlock_unlock(&vma->obj->rmap_lock);
		fresh = true;
	}
	/*
	 * Writes to the pages leaving the range must not be forgotten.  A
	 * scan cannot see a write that lands after it and before the new
	 * mapping: take every cached page the range shows as dirty.
	 */
	if (vma->prot & PROT_WRITE) {
		pthread_rwlock_rdlock(&vma->obj->invalidate_lock);
		__uf_vma_mark_dirty(vma, s, e);
		pthread_rwlock_unlock(&vma->obj->invalidate_lock);
	}

	p = uf_vma_map_fixed(vma, s, size, pgoff << PAGE_SHIFT);
	if (p == MAP_FAILED) {
		ret = -errno;
		restore(vma, s, e);
		goto out;
	}
	ret = uf_vma_register(vma, s, size);
	if (ret) {
		restore(vma, s, e);
		goto out;
	}
	pthread_rwlock_wrlock(&vma->obj->rmap_lock);
	for (i = 0; i < size >> PAGE_SHIFT; i++)
		vma->nl_pgoff[((s - vma->start) >> PAGE_SHIFT) + i] = (pgoff + i) | NL_WINDOW;
	pthread_rwlock_unlock(&vma->obj->rmap_lock);
	uf_vma_inherit(vma, s, size);
out:
	if (ret && fresh) {
		pthread_rwlock_wrlock(&vma->obj->rmap_lock);
		free(vma->nl_pgoff);
		vma->nl_pgoff = NULL;
		pthread_rwlock_unlock(&vma->obj->rmap_lock);
	}
	pthread_rwlock_unlock(&mm->vma_lock);
	return ret;
}

UF_EXPORT int uf_filemap_populate(struct uf_vma *vma, unsigned long addr, unsigned long len,
				  int prot, uint64_t pgoff, int nonblock)
{
	struct uf_object *obj;
	int ret;

	(void)nonblock;
	if (!vma || !(obj = vma->obj))
		return -EINVAL;
	ret = uf_remap_file_pages(vma->mm, (void *)addr, len, prot, pgoff, 0);
	if (ret)
		return ret;
	/* populate: bring the pages into the cache now */
	pthread_rwlock_rdlock(&obj->invalidate_lock);
	ret = uf_object_fill(obj, pgoff, len >> PAGE_SHIFT, UF_FILL_ALL, NULL, NULL, NULL);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return ret;
}

UF_EXPORT int uf_vma_set_private(struct uf_vma *vma, void *private_data)
{
	if (!vma)
		return -EINVAL;
	__atomic_store_n(&vma->private_data, private_data, __ATOMIC_RELEASE);
	return 0;
}

UF_EXPORT int uf_vma_set_ops(struct uf_vma *vma, const struct uf_vm_operations *ops)
{
	if (!vma || !ops || !vma->obj || (!ops->fault && !ops->nopage))
		return -EINVAL;
	if (uf_forked(vma->mm))
		return -ECHILD;
	pthread_rwlock_wrlock(&vma->mm->vma_lock);
	if (vma->nl_pgoff && !ops->fault) {
		pthread_rwlock_unlock(&vma->mm->vma_lock);
		return -EINVAL;
	}
	__atomic_store_n(&vma->vm_ops, ops, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&vma->mm->vma_lock);
	return 0;
}
