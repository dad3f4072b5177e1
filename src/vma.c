// SPDX-License-Identifier: MIT
/*
 * Mappings: the VMA table of an mm, uf_mmap(), uf_mmap_ops(), uf_munmap().
 *
 * Lock order: mm->vma_lock (exclusive here to change the table)
 *               -> vma->ref_lock
 * A handler thread looks a VMA up under vma_lock shared and takes a
 * reference; uf_munmap() unlinks the VMA, puts a PROT_NONE placeholder over
 * the range (so the addresses are not reused while a handler may still copy
 * into them), waits for the references to drain, then unmaps.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PROT_ALLOWED	(PROT_READ | PROT_WRITE | PROT_EXEC)

/* Locking: mm->vma_lock held (either mode). */
static size_t __vma_index(struct uf_mm *mm, unsigned long addr)
{
	size_t lo = 0, hi = mm->nvmas;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (mm->vmas[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;	/* first VMA whose end is above addr */
}

/* Locking: mm->vma_lock held (either mode). */
struct uf_vma *__uf_vma_find(struct uf_mm *mm, unsigned long addr)
{
	size_t i = __vma_index(mm, addr);

	if (i < mm->nvmas && mm->vmas[i]->start <= addr)
		return mm->vmas[i];
	return NULL;
}

/* Locking: mm->vma_lock held exclusive. */
static int __vma_link(struct uf_mm *mm, struct uf_vma *vma)
{
	size_t i;

	if (mm->nvmas == mm->vmas_cap) {
		size_t cap = mm->vmas_cap ? 2 * mm->vmas_cap : 16;
		struct uf_vma **v = realloc(mm->vmas, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		mm->vmas = v;
		mm->vmas_cap = cap;
	}
	i = __vma_index(mm, vma->start);
	memmove(&mm->vmas[i + 1], &mm->vmas[i], (mm->nvmas - i) * sizeof(*mm->vmas));
	mm->vmas[i] = vma;
	mm->nvmas++;
	if (vma->obj) {
		vma->obj_next = vma->obj->vmas;
		vma->obj->vmas = vma;
	}
	return 0;
}

/* Locking: mm->vma_lock held exclusive. */
static void __vma_unlink(struct uf_mm *mm, struct uf_vma *vma)
{
	size_t i = __vma_index(mm, vma->start);

	memmove(&mm->vmas[i], &mm->vmas[i + 1], (mm->nvmas - i - 1) * sizeof(*mm->vmas));
	mm->nvmas--;
	__atomic_store_n(&vma->dead, true, __ATOMIC_RELEASE);
	if (vma->obj) {
		struct uf_vma **pp;

		for (pp = &vma->obj->vmas; *pp; pp = &(*pp)->obj_next) {
			if (*pp == vma) {
				*pp = vma->obj_next;
				break;
			}
		}
	}
}

/* The object page @addr of @vma shows.
 * Locking: mm->vma_lock held (any mode), for vma->nl_pgoff. */
uint64_t __uf_vma_pgoff(const struct uf_vma *vma, unsigned long addr)
{
	uint64_t idx = (addr - vma->start) >> PAGE_SHIFT;

	return vma->nl_pgoff ? vma->nl_pgoff[idx] & ~NL_WINDOW : vma->pgoff + idx;
}

/*
 * Find the VMA at @addr and take a reference; compute the object page the
 * address shows.  Return NULL if no ufault mapping is there.
 * Locking: takes mm->vma_lock shared.
 */
struct uf_vma *uf_vma_lookup_get(struct uf_mm *mm, unsigned long addr, uint64_t *pgoff,
				 bool *nonlinear)
{
	struct uf_vma *vma;

	pthread_rwlock_rdlock(&mm->vma_lock);
	vma = __uf_vma_find(mm, addr);
	if (vma) {
		uint64_t idx = (addr - vma->start) >> PAGE_SHIFT;

		*pgoff = __uf_vma_pgoff(vma, addr);
		*nonlinear = vma->nl_pgoff && (vma->nl_pgoff[idx] & NL_WINDOW);
		pthread_mutex_lock(&vma->ref_lock);
		vma->refs++;
		pthread_mutex_unlock(&vma->ref_lock);
	}
	pthread_rwlock_unlock(&mm->vma_lock);
	return vma;
}

void uf_vma_put(struct uf_vma *vma)
{
	pthread_mutex_lock(&vma->ref_lock);
	if (--vma->refs == 0)
		pthread_cond_broadcast(&vma->ref_cond);
	pthread_mutex_unlock(&vma->ref_lock);
}

/*
 * Register [start, start + len) of @vma with the mm's userfaultfd: MISSING
 * always, and WP (asynchronous, write-protected at once) for dirty tracking
 * of shared writable object mappings.
 */
int uf_vma_register(struct uf_vma *vma, unsigned long start, unsigned long len)
{
	/*
	 * WP mode also turns the kernel's fault-around off for the range:
	 * under a cache budget, a mapped page must be one the program
	 * touched, since reclaim reads "mapped" as "referenced".
	 */
	bool wp = (vma->flags & VMA_WP) ||
		  (vma->mm->budget_pages && vma->mm->wp_sync && (vma->flags & VMA_SHARED));
	int ret = uf_uffd_register(&vma->mm->uffd, start, len, wp);

	if (ret)
		return ret;
	/* (a window registers again with the mode the VMA already has) */
	if (wp && !(vma->flags & VMA_REG_WP))
		vma->flags |= VMA_REG_WP;
	/* A child must never touch an unregistered copy: it would fill the
	 * shared cache with zero pages. */
	if (madvise((void *)start, len, MADV_DONTFORK) < 0)
		return -errno;
	if (vma->flags & VMA_WP)
		return uf_vma_writeprotect(vma, start, len);
	return 0;
}

static struct uf_vma *vma_alloc(struct uf_mm *mm, size_t len, int prot)
{
	struct uf_vma *vma = calloc(1, sizeof(*vma));

	if (!vma)
		return NULL;
	vma->mm = mm;
	vma->id = __atomic_add_fetch(&mm->next_vma_id, 1, __ATOMIC_RELAXED);
	vma->prot = prot;
	vma->refs = 1;
	vma->end = len;		/* start is added once mapped */
	pthread_mutex_init(&vma->ref_lock, NULL);
	pthread_cond_init(&vma->ref_cond, NULL);
	if (uf_readahead_init(vma)) {
		free(vma);
		return NULL;
	}
	return vma;
}

static void vma_free(struct uf_vma *vma)
{
	pthread_mutex_destroy(&vma->ref_lock);
	pthread_cond_destroy(&vma->ref_cond);
	uf_readahead_free(vma);
	free(vma->nl_pgoff);
	free(vma);
}

/* Map @vma (vma->end holds its length), register it, link it, open it. */
static int vma_install(struct uf_mm *mm, struct uf_vma *vma, int mflags, int fd,
		       uint64_t offset, void **addrp)
{
	size_t len = vma->end;
	void *p;
	int ret;

	p = mmap(NULL, len, vma->prot, mflags | MAP_NORESERVE, fd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	vma->start = (unsigned long)p;
	vma->end = vma->start + len;
	ret = uf_vma_register(vma, vma->start, len);
	if (ret)
		goto fail;
	pthread_rwlock_wrlock(&mm->vma_lock);
	ret = __vma_link(mm, vma);
	pthread_rwlock_unlock(&mm->vma_lock);
	if (ret)
		goto fail;
	if (vma->vm_ops->open)
		vma->vm_ops->open(vma);
	*addrp = p;
	return 0;
fail:
	munmap(p, len);
	return ret;
}

static const struct uf_vm_operations uf_file_vm_ops = {
	.fault	= uf_filemap_fault,
};

UF_EXPORT int uf_mmap(struct uf_mm *mm, size_t len, int prot, int flags,
		      struct uf_object *obj, uint64_t offset, void **addrp)
{
	struct uf_vma *vma;
	int ret;

	if (!mm || !obj || !addrp || !len || !PAGE_ALIGNED(len) || !PAGE_ALIGNED(offset))
		return -EINVAL;
	if (!(prot & PROT_READ) || (prot & ~PROT_ALLOWED))
		return -EINVAL;
	if (flags != UF_MAP_SHARED && flags != UF_MAP_PRIVATE)
		return -EINVAL;
	if (obj->mm != mm)
		return -EINVAL;
	if (offset > (uint64_t)INT64_MAX - len)
		return -EOVERFLOW;
	if (obj->readonly && flags == UF_MAP_SHARED && (prot & PROT_WRITE))
		return -EACCES;

	vma = vma_alloc(mm, len, prot);
	if (!vma)
		return -ENOMEM;
	vma->obj = obj;
	vma->pgoff = offset >> PAGE_SHIFT;
	vma->vm_ops = &uf_file_vm_ops;
	if (flags == UF_MAP_SHARED) {
		vma->flags = VMA_SHARED;
		if ((prot & PROT_WRITE) && (mm->wp_async || mm->wp_sync))
			vma->flags |= VMA_WP;
	} else {
		vma->flags = VMA_PRIVATE;
	}
	uf_object_get(obj);
	ret = vma_install(mm, vma, flags == UF_MAP_SHARED ? MAP_SHARED : MAP_PRIVATE,
			  obj->memfd, offset, addrp);
	if (ret) {
		uf_object_put(obj);
		vma_free(vma);
	}
	return ret;
}

UF_EXPORT int uf_mmap_ops(struct uf_mm *mm, size_t len, int prot,
			  const struct uf_vm_operations *ops, void *private_data,
			  void **addrp)
{
	struct uf_vma *vma;
	int ret;

	if (!mm || !ops || !addrp || !len || !PAGE_ALIGNED(len))
		return -EINVAL;
	if (!(prot & PROT_READ) || (prot & ~PROT_ALLOWED))
		return -EINVAL;
	if (!ops->fault && !ops->nopage)
		return -EINVAL;

	vma = vma_alloc(mm, len, prot);
	if (!vma)
		return -ENOMEM;
	vma->flags = VMA_OPS | VMA_PRIVATE;
	vma->vm_ops = ops;
	vma->private_data = private_data;
	ret = vma_install(mm, vma, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, addrp);
	if (ret)
		vma_free(vma);
	return ret;
}

/* Locking: mm->vma_lock not held. */
static void vma_teardown(struct uf_mm *mm, struct uf_vma *vma)
{
	size_t len = vma->end - vma->start;
	struct uf_object *obj = vma->obj;

	if (vma->vm_ops->close)
		vma->vm_ops->close(vma);
	if (obj && (vma->flags & VMA_SHARED) && (vma->prot & PROT_WRITE)) {
		/* no write may land between the scan and the placeholder: one
		 * racing with the unmap faults, as after it */
		mprotect((void *)vma->start, len, vma->prot & ~PROT_WRITE);
		uf_vma_collect_dirty(vma, vma->start, vma->end);
	}

	/* Placeholder: wakes nobody by itself, keeps the range ours. */
	mmap((void *)vma->start, len, PROT_NONE,
	     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uf_uffd_wake(&mm->uffd, vma->start, len);

	pthread_mutex_lock(&vma->ref_lock);
	vma->refs--;
	while (vma->refs)
		pthread_cond_wait(&vma->ref_cond, &vma->ref_lock);
	pthread_mutex_unlock(&vma->ref_lock);

	munmap((void *)vma->start, len);
	if (obj)
		uf_object_put(obj);
	vma_free(vma);
}

UF_EXPORT int uf_munmap(struct uf_mm *mm, void *addr, size_t len)
{
	unsigned long start = (unsigned long)addr;
	struct uf_vma *vma;

	if (!mm || !PAGE_ALIGNED(start) || !len)
		return -EINVAL;
	len = (len + PAGE_SIZE - 1) & PAGE_MASK;

	pthread_rwlock_wrlock(&mm->vma_lock);
	vma = __uf_vma_find(mm, start);
	if (!vma || vma->start != start || vma->end - vma->start != len) {
		pthread_rwlock_unlock(&mm->vma_lock);
		return -EINVAL;
	}
	if (vma == uf_fault_vma()) {
		pthread_rwlock_unlock(&mm->vma_lock);
		return -EDEADLK;
	}
	__vma_unlink(mm, vma);
	pthread_rwlock_unlock(&mm->vma_lock);

	vma_teardown(mm, vma);
	return 0;
}

void uf_unmap_all(struct uf_mm *mm)
{
	for (;;) {
		struct uf_vma *vma = NULL;

		pthread_rwlock_wrlock(&mm->vma_lock);
		if (mm->nvmas) {
			vma = mm->vmas[mm->nvmas - 1];
			__vma_unlink(mm, vma);
		}
		pthread_rwlock_unlock(&mm->vma_lock);
		if (!vma)
			return;
		vma_teardown(mm, vma);
	}
}

UF_EXPORT struct uf_vma *uf_find_vma(struct uf_mm *mm, const void *addr)
{
	struct uf_vma *vma;

	if (!mm)
		return NULL;
	pthread_rwlock_rdlock(&mm->vma_lock);
	vma = __uf_vma_find(mm, (unsigned long)addr);
	pthread_rwlock_unlock(&mm->vma_lock);
	return vma;
}

UF_EXPORT void *uf_vma_private(const struct uf_vma *vma)
{
	return vma ? __atomic_load_n(&vma->private_data, __ATOMIC_ACQUIRE) : NULL;
}

UF_EXPORT void *uf_vma_start(const struct uf_vma *vma)
{
	return vma ? (void *)vma->start : NULL;
}

UF_EXPORT size_t uf_vma_len(const struct uf_vma *vma)
{
	return vma ? vma->end - vma->start : 0;
}

UF_EXPORT struct uf_object *uf_vma_object(const struct uf_vma *vma)
{
	return vma ? vma->obj : NULL;
}
