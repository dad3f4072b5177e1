// SPDX-License-Identifier: MIT
/*
 * Mappings of the program's own address space: uf_mmap(), uf_mmap_ops(),
 * uf_munmap(), uf_mprotect(), uf_msync(), the lookups, and the VMA
 * accessors.  Its table is table.c's, its ops and events self.c's, what
 * the kernel shows of it procmaps.c's.
 *
 * Locks (the order is in lockorder.h): mm->vma_lock exclusive here to
 * change the table, obj->invalidate_lock shared to mark pages dirty,
 * vma->ref_lock for references.
 * A handler thread looks a VMA up under vma_lock shared and takes a
 * reference; uf_munmap() unlinks the VMA, makes the range inaccessible and
 * unregisters it, puts a PROT_NONE placeholder over it (so the addresses
 * are not reused while a handler may still copy into them), waits for the
 * references to drain, then unmaps.  None of this raises a userfaultfd
 * event: ufault never waits for its own handlers to read one.
 */
#define _GNU_SOURCE
#include "as/as.h"
#include "vma.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROT_ALLOWED	(PROT_READ | PROT_WRITE | PROT_EXEC)

/* Locking: mm->vma_lock held (either mode). */
struct uf_vma *__uf_vma_find(struct uf_mm *mm, unsigned long addr)
{
	return __uf_table_find(&mm->self.vt, addr);
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
	 * touched, since reclaim reads "mapped" as "referenced"; so too
	 * while a record watches readahead (ws_record.c).
	 */
	bool wp = (vma->flags & VMA_WP) ||
		  (vma->mm->budget_pages && vma->mm->wp_sync && (vma->flags & VMA_SHARED)) ||
		  (vma->obj && !uf_vma_remote(vma) && uf_fill_watched(vma->obj));
	int ret = uf_uffd_register(&vma->mm->uffd, start, len, wp);

	if (ret)
		return ret;
	/* (a window registers again with the mode the VMA already has) */
	if (wp && !(vma->flags & VMA_REG_WP))
		vma->flags |= VMA_REG_WP;
	/* A child must never touch an unregistered copy: it would fill the
	 * shared cache with zero pages.  With fork events the range is
	 * inherited once the table shows it (uf_vma_inherit). */
	if (madvise((void *)start, len, MADV_DONTFORK) < 0)
		return -errno;
	/* a window is protected whole; a new linear mapping only where the
	 * cache holds pages, once linked (vma_install) */
	if ((vma->flags & VMA_WP) && vma->nl_pgoff)
		return uf_vma_writeprotect(vma, start, len);
	return 0;
}

/*
 * With fork events a child inherits [start, start + len) of @vma, served
 * as its own (as.c).  Called once the table shows the range: a child
 * forked before has neither, one forked after has both.
 */
void uf_vma_inherit(struct uf_vma *vma, unsigned long start, unsigned long len)
{
	if (vma->mm->fork_events)
		madvise((void *)start, len, MADV_DOFORK);
}

/* A fork child's copy of a VMA: free its memory only (see mm.c). */
void uf_vma_free_child(struct uf_vma *vma)
{
	if (vma->obj)
		uf_object_put(vma->obj);	/* the child's path: frees only */
	free(vma->nl_pgoff);
	free(vma);
}

/*
 * The kernel gave us a free range for @vma: whatever the table still shows
 * there was unmapped or moved away by the program, and the kernel queues
 * that event after it freed the range: wait until it is applied.  A
 * kernel without unmap events leaves stale entries, dropped here (as
 * after 2 s, should an event never come) onto l->released.
 * Locking: returns with mm->vma_lock held exclusive.
 */
static void vma_lock_free_range(struct uf_mm *mm, struct uf_vma *vma, struct uf_vma_lists *l)
{
	unsigned int tries;

	for (tries = 0;; tries++) {
		size_t i;

		uf_uffd_quiesce(&mm->uffd);
		pthread_rwlock_wrlock(&mm->vma_lock);
		i = __vma_index(mm, vma->start);
		if (i >= mm->self.vt.n || mm->self.vt.vmas[i]->start >= vma->end || tries >= 2000 ||
		    !(mm->uffd.features & UFFD_FEATURE_EVENT_UNMAP))
			break;
		/* the event for what was there is on its way */
		pthread_rwlock_unlock(&mm->vma_lock);
		usleep(1000);
	}
	__uf_as_unmap_range(&mm->self, vma->start, vma->end, l);
}

/* Map @vma (vma->end holds its length), register it, link it, open it. */
static int vma_install(struct uf_mm *mm, struct uf_vma *vma, int mflags, int fd,
		       uint64_t offset, void **addrp)
{
	size_t len = vma->end;
	void *p;
	int ret;

	const struct uf_vm_operations *ops;
	struct uf_vma_lists l = { NULL, NULL };

	/* an object mapping at file offset modulo 2 MiB: huge extents map
	 * with one PMD (huge.c) */
	if (fd >= 0)
		p = uf_mmap_aligned(len, vma->prot, mflags | MAP_NORESERVE, fd, offset);
	else
		p = mmap(NULL, len, vma->prot, mflags | MAP_NORESERVE, fd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	vma->start = (unsigned long)p;
	vma->end = vma->start + len;
	pthread_rwlock_wrlock(&mm->vma_lock);
	__uf_vma_busy(mm, vma, true);
	pthread_rwlock_unlock(&mm->vma_lock);
	ret = uf_vma_register(vma, vma->start, len);
	if (ret)
		goto fail;
	vma_lock_free_range(mm, vma, &l);
	/*
	 * Linked under rmap_lock: a fill either copied before (its page is
	 * present, and protected here) or sees the VMA and protects its holes
	 * in it before it copies.  Nothing of the program's can touch the
	 * mapping before uf_mmap() returns.
	 */
	rmap_wrlock(vma);
	ret = __uf_as_link(&mm->self, vma);
	if (!ret && (vma->flags & VMA_WP))
		vma->obj->rmap_gen++;
	rmap_unlock(vma);
	if (!ret && (vma->flags & VMA_WP)) {
		ret = uf_vma_protect_cached(vma, vma->start, vma->end);
		if (ret)
			__uf_as_unlink(&mm->self, vma);
	}
	if (!ret)
		__uf_vma_busy(mm, vma, false);
	ops = vma->vm_ops;	/* read before the program can unmap it */
	if (!ret)
		uf_vma_inherit(vma, vma->start, len);
	pthread_rwlock_unlock(&mm->vma_lock);
	uf_vma_lists_finish(&l);
	if (ret)
		goto fail;
	if (ops->open)
		ops->open(vma);
	*addrp = p;
	return 0;
fail:
	/* unregistered first: the unmap raises no event to wait for */
	uf_uffd_unregister(&mm->uffd, vma->start, len);
	munmap(p, len);
	pthread_rwlock_wrlock(&mm->vma_lock);
	__uf_vma_busy(mm, vma, false);
	pthread_rwlock_unlock(&mm->vma_lock);
	return ret;
}

/* The object served by another process (attach.c) with a mapping in
 * [s, e), with a reference, or NULL: its obj->remote does the call. */
static struct uf_object *remote_at(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	struct uf_object *(*find)(struct uf_mm *, unsigned long, unsigned long) =
		__atomic_load_n(&mm->remote_find, __ATOMIC_ACQUIRE);

	return find ? find(mm, s, e) : NULL;
}

static const struct uf_vm_operations uf_file_vm_ops = {
	.fault	= uf_filemap_fault,
};

UF_EXPORT int uf_mmap(struct uf_mm *mm, size_t len, int prot, int flags,
		      struct uf_object *obj, uint64_t offset, void **addrp)
{
	struct uf_vma *vma;
	int ret;

	struct stat st;
	int mflags;

	if (!mm || !obj || !addrp || !len || !PAGE_ALIGNED(offset))
		return -EINVAL;
	if (len > SIZE_MAX - (PAGE_SIZE - 1))
		return -ENOMEM;
	len = PAGE_ALIGN(len);
	if (!(prot & PROT_READ) || (prot & ~PROT_ALLOWED))
		return -EINVAL;
	if (flags != UF_MAP_SHARED && flags != UF_MAP_PRIVATE)
		return -EINVAL;
	if (obj->mm != mm)
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	if (offset > (uint64_t)INT64_MAX - len)
		return -EOVERFLOW;
	if (obj->readonly && flags == UF_MAP_SHARED && (prot & PROT_WRITE))
		return -EACCES;
	if (obj->remote)
		return obj->remote->mmap(obj, len, prot, flags, offset, addrp);

	vma = uf_vma_alloc(mm, len, prot);
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
	/*
	 * A shared mapping of a read-only object is the cache mapped
	 * MAP_PRIVATE: it reads the same pages, but should the system's
	 * mprotect() make it writable (which the kernel cannot refuse: a
	 * userfaultfd range must be writable in principle), what is written
	 * stays in that mapping, copied on write, and never reaches the cache,
	 * the other mappings or the store.
	 */
	mflags = flags == UF_MAP_SHARED ? MAP_SHARED : MAP_PRIVATE;
	if (obj->readonly && flags == UF_MAP_SHARED) {
		vma->flags |= VMA_PRIV_MAP;
		mflags = MAP_PRIVATE;
	}
	if (fstat(obj->memfd, &st) == 0)
		vma->ino = st.st_ino;
	uf_object_get(obj);
	ret = vma_install(mm, vma, mflags, obj->memfd, offset, addrp);
	if (ret) {
		uf_object_put(obj);
		uf_vma_free(vma);
		return ret;
	}
	uf_vma_populate_cached(vma);
	return 0;
}

UF_EXPORT int uf_mmap_ops(struct uf_mm *mm, size_t len, int prot,
			  const struct uf_vm_operations *ops, void *private_data,
			  void **addrp)
{
	struct uf_vma *vma;
	int ret;

	if (!mm || !ops || !addrp || !len)
		return -EINVAL;
	if (len > SIZE_MAX - (PAGE_SIZE - 1))
		return -ENOMEM;
	len = PAGE_ALIGN(len);
	if (!(prot & PROT_READ) || (prot & ~PROT_ALLOWED))
		return -EINVAL;
	if (!ops->fault && !ops->nopage)
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;

	vma = uf_vma_alloc(mm, len, prot);
	if (!vma)
		return -ENOMEM;
	vma->flags = VMA_OPS | VMA_PRIVATE;
	vma->vm_ops = ops;
	vma->private_data = private_data;
	ret = vma_install(mm, vma, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, addrp);
	if (ret)
		uf_vma_free(vma);
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

	/*
	 * No access from here on (it gets SIGSEGV, as after the unmap); then
	 * unregistered (which wakes the threads waiting there: they meet
	 * PROT_NONE), so that the placeholder and the unmap raise no event.
	 * The placeholder keeps the range ours while a handler may still
	 * copy into it.
	 */
	mprotect((void *)vma->start, len, PROT_NONE);
	uf_uffd_unregister(&mm->uffd, vma->start, len);
	mmap((void *)vma->start, len, PROT_NONE,
	     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	pthread_mutex_lock(&vma->ref_lock);
	vma->refs--;
	while (vma->refs)
		pthread_cond_wait(&vma->ref_cond, &vma->ref_lock);
	pthread_mutex_unlock(&vma->ref_lock);

	munmap((void *)vma->start, len);
	pthread_rwlock_wrlock(&mm->vma_lock);
	__uf_vma_busy(mm, vma, false);
	pthread_rwlock_unlock(&mm->vma_lock);
	if (obj)
		uf_object_put(obj);
	uf_vma_free(vma);
}

UF_EXPORT int uf_munmap(struct uf_mm *mm, void *addr, size_t len)
{
	unsigned long start = (unsigned long)addr, a;
	struct uf_vma *vma, *gone = NULL;
	struct uf_object *obj;
	int ret;

	if (!mm || !PAGE_ALIGNED(start) || !len)
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	if (len > SIZE_MAX - (PAGE_SIZE - 1))
		return -EINVAL;
	len = PAGE_ALIGN(len);
	if (start + len < start)
		return -EINVAL;
	obj = remote_at(mm, start, start + len);
	if (obj) {
		ret = obj->remote->munmap(obj, start, start + len);
		uf_object_put(obj);
		return ret;
	}

	/* what the program did to the range with the system's calls first:
	 * never unmap what is no longer ufault's */
	uf_uffd_quiesce(&mm->uffd);
	uf_vma_refresh(mm, start, start + len + 1);
	pthread_rwlock_wrlock(&mm->vma_lock);
	/* whole mappings, one after the other (uf_mprotect() splits) */
	for (a = start; a < start + len; a = vma->end) {
		vma = __uf_vma_find(mm, a);
		if (!vma || vma->start != a || vma->end > start + len) {
			pthread_rwlock_unlock(&mm->vma_lock);
			return -EINVAL;
		}
	}
	for (a = start; a < start + len; a = vma->end) {
		vma = __uf_vma_find(mm, a);
		if (vma == uf_fault_vma()) {
			pthread_rwlock_unlock(&mm->vma_lock);
			return -EDEADLK;
		}
	}
	for (a = start; a < start + len; a = vma->end) {
		vma = __uf_vma_find(mm, a);
		__uf_as_unlink(&mm->self, vma);
		__uf_vma_busy(mm, vma, true);
		vma->ev_next = gone;
		gone = vma;
	}
	pthread_rwlock_unlock(&mm->vma_lock);

	while ((vma = gone)) {
		gone = vma->ev_next;
		vma_teardown(mm, vma);
	}
	return 0;
}

/*
 * Change the protection of @v to @prot keeping dirty tracking right:
 * write permission added to a shared mapping of an object is tracked
 * (write-protect registration) before the first write can land; taken
 * away, what was written is collected once the mapping is read-only.
 * Locking: mm->vma_lock held exclusive.
 */
static int __vma_mprotect(struct uf_vma *v, int prot)
{
	struct uf_mm *mm = v->mm;
	size_t len = v->end - v->start;
	bool tracked = v->obj && (v->flags & VMA_SHARED);

	if (tracked && (prot & PROT_WRITE) && !(v->flags & VMA_WP) &&
	    (mm->wp_async || mm->wp_sync)) {
		int ret = 0;

		unsigned int old = v->flags;

		if (!(v->flags & VMA_REG_WP))
			ret = uf_uffd_register(&mm->uffd, v->start, len, true);
		if (ret)
			return ret;
		/* tracked first, so a fill from now on protects its holes
		 * here; then what is cached already (read without the lock by
		 * the fault path) */
		rmap_wrlock(v);
		__atomic_store_n(&v->flags, v->flags | VMA_REG_WP | VMA_WP, __ATOMIC_RELAXED);
		v->obj->rmap_gen++;
		rmap_unlock(v);
		ret = uf_vma_protect_cached(v, v->start, v->end);
		if (ret) {
			rmap_wrlock(v);
			__atomic_store_n(&v->flags, old | VMA_REG_WP, __ATOMIC_RELAXED);
			rmap_unlock(v);
			return ret;
		}
	}
	if (mprotect((void *)v->start, len, prot) < 0)
		return -errno;
	if (tracked && (v->prot & PROT_WRITE) && !(prot & PROT_WRITE))
		uf_vma_collect_dirty(v, v->start, v->end);
	v->prot = prot;
	return 0;
}

UF_EXPORT int uf_mprotect(struct uf_mm *mm, void *addr, size_t len, int prot)
{
	unsigned long s = (unsigned long)addr, e, a;
	struct uf_vma_lists l = { NULL, NULL };
	struct uf_object *obj;
	struct uf_vma *v;
	int ret = 0;

	if (!mm || !PAGE_ALIGNED(s) || (prot & ~PROT_ALLOWED))
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	if (!len)
		return 0;
	if (len > ULONG_MAX - PAGE_SIZE || s + PAGE_ALIGN(len) < s)
		return -ENOMEM;
	e = s + PAGE_ALIGN(len);
	obj = remote_at(mm, s, e);
	if (obj) {
		ret = obj->remote->mprotect(obj, s, e, prot);
		uf_object_put(obj);
		return ret;
	}

	uf_uffd_quiesce(&mm->uffd);
	uf_vma_refresh(mm, s, e);
	pthread_rwlock_wrlock(&mm->vma_lock);
	/* all of it ufault's, and allowed: else nothing changes */
	for (a = s; a < e; a = v->end) {
		v = __uf_vma_find(mm, a);
		if (!v || v->start > a) {
			ret = -ENOMEM;
			goto out;
		}
		if ((prot & PROT_WRITE) && (v->flags & VMA_SHARED) && v->obj && v->obj->readonly) {
			ret = -EACCES;
			goto out;
		}
	}
	/* whole VMAs (a split alone changes nothing a program sees) */
	v = __uf_vma_find(mm, s);
	if (v->start < s && !__uf_as_split(&mm->self, v, s, &l)) {
		ret = -ENOMEM;
		goto out;
	}
	v = __uf_vma_find(mm, e - 1);
	if (v->end > e && !__uf_as_split(&mm->self, v, e, &l)) {
		ret = -ENOMEM;
		goto out;
	}
	for (a = s; a < e && !ret; a = v->end) {
		v = __uf_vma_find(mm, a);
		ret = __vma_mprotect(v, prot);
	}
out:
	pthread_rwlock_unlock(&mm->vma_lock);
	uf_vma_lists_finish(&l);
	return ret;
}

/* uf_msync: collect a range's written pages under the table lock, then
 * write each object's part back (writeback.c) with the lock dropped. */
struct msync_part {
	struct uf_object *obj;
	uint64_t first, last;
};

UF_EXPORT int uf_msync(struct uf_mm *mm, void *addr, size_t len, int flags)
{
	unsigned long start = (unsigned long)addr, end, a;
	struct msync_part *parts = NULL;
	struct uf_object *obj;
	size_t nparts = 0, i;
	int ret = 0;

	if (!mm || !PAGE_ALIGNED(start) || (flags & ~UF_MS_SYNC))
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	if (!len)
		return 0;
	if (len > SIZE_MAX - PAGE_SIZE)
		return -ENOMEM;
	end = start + PAGE_ALIGN(len);
	if (end < start)
		return -ENOMEM;
	obj = remote_at(mm, start, end);
	if (obj) {
		ret = obj->remote->msync(obj, start, end);
		uf_object_put(obj);
		return ret;
	}

	uf_uffd_quiesce(&mm->uffd);
	uf_vma_refresh(mm, start, end);
	/* collect under the VMA lock; write back after dropping it */
	pthread_rwlock_rdlock(&mm->vma_lock);
	for (a = start; a < end; ) {
		struct uf_vma *vma = __uf_vma_find(mm, a);
		unsigned long e;

		if (!vma || vma->start > a) {
			ret = -ENOMEM;
			break;
		}
		e = vma->end < end ? vma->end : end;
		if (vma->obj && (vma->flags & VMA_SHARED) && (vma->prot & PROT_WRITE)) {
			struct msync_part *np = realloc(parts, (nparts + 1) * sizeof(*np));

			if (!np) {
				ret = -ENOMEM;
				break;
			}
			parts = np;
			ret = uf_vma_collect_dirty(vma, a, e);
			if (ret)
				break;
			uf_object_get(vma->obj);
			parts[nparts].obj = vma->obj;
			if (vma->nl_pgoff) {
				/* windows can show any page: write all of them */
				parts[nparts].first = 0;
				parts[nparts].last = UINT64_MAX;
			} else {
				parts[nparts].first = __uf_vma_pgoff(vma, a);
				parts[nparts].last = __uf_vma_pgoff(vma, e - PAGE_SIZE);
			}
			nparts++;
		}
		a = e;
	}
	pthread_rwlock_unlock(&mm->vma_lock);

	for (i = 0; i < nparts; i++) {
		if (!ret)
			ret = uf_object_sync_range(parts[i].obj, parts[i].first, parts[i].last, false);
		uf_object_put(parts[i].obj);
	}
	free(parts);
	return ret;
}

void uf_unmap_all(struct uf_mm *mm)
{
	/* what the program unmapped itself is not ufault's to unmap */
	uf_uffd_quiesce(&mm->uffd);
	uf_vma_refresh(mm, 0, ULONG_MAX);
	for (;;) {
		struct uf_vma *vma = NULL;

		pthread_rwlock_wrlock(&mm->vma_lock);
		if (mm->self.vt.n) {
			vma = mm->self.vt.vmas[mm->self.vt.n - 1];
			__uf_as_unlink(&mm->self, vma);
			__uf_vma_busy(mm, vma, true);
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

	if (!mm || uf_forked(mm))
		return NULL;
	uf_uffd_quiesce(&mm->uffd);
	pthread_rwlock_rdlock(&mm->vma_lock);
	vma = __uf_vma_find(mm, (unsigned long)addr);
	pthread_rwlock_unlock(&mm->vma_lock);
	return vma;
}

UF_EXPORT void *uf_vma_private(const struct uf_vma *vma)
{
	return vma ? __atomic_load_n(&vma->private_data, __ATOMIC_ACQUIRE) : NULL;
}

/* (start and end change when the program unmaps or moves part of it) */
UF_EXPORT void *uf_vma_start(const struct uf_vma *vma)
{
	unsigned long start;

	if (!vma)
		return NULL;
	pthread_rwlock_rdlock(&vma->mm->vma_lock);
	start = vma->start;
	pthread_rwlock_unlock(&vma->mm->vma_lock);
	return (void *)start;
}

UF_EXPORT size_t uf_vma_len(const struct uf_vma *vma)
{
	size_t len;

	if (!vma)
		return 0;
	pthread_rwlock_rdlock(&vma->mm->vma_lock);
	len = vma->end - vma->start;
	pthread_rwlock_unlock(&vma->mm->vma_lock);
	return len;
}

UF_EXPORT struct uf_object *uf_vma_object(const struct uf_vma *vma)
{
	return vma ? vma->obj : NULL;
}
