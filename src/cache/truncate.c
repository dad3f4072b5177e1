// SPDX-License-Identifier: MIT
/*
 * Truncate and hole punch, without the race the fault() API was made to
 * close: a page being filled while truncate removes it must not reappear.
 *
 * Locks (the order is in lockorder.h): truncate and punch hold mm->vma_lock
 * shared (the mappings of the object do not change) and
 * obj->invalidate_lock exclusive while they change
 * i_size, the memfd and the store.  Fillers (filemap.c) hold it shared
 * across "check pgoff < i_size, read the store, insert into the cache", so
 * a fill either completes before the truncate (and its page is then cut by
 * it) or starts after it (and sees the new i_size).
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Make obj->cache_map cover @size bytes: a MAP_SHARED mapping of the
 * memfd, registered MISSING, target of uffd copies.  Past i_size it is
 * never used.  It is PROT_NONE: a copy fills a hole of the memfd whatever
 * the mapping's protection, and a stray access (nothing of ufault's ever
 * reads or writes it) gets SIGSEGV from the kernel, EFAULT in a system
 * call, instead of a missing-page fault no VMA of the table covers, which
 * would be served again and again.
 * Locking: obj->invalidate_lock held exclusive (or the object is new).
 */
int uf_object_cache_map(struct uf_object *obj, uint64_t size)
{
	uint64_t cap = obj->cache_cap;
	void *p;
	int ret;

	if (size <= cap && obj->cache_map != MAP_FAILED)
		return 0;
	if (!cap)
		cap = 64ULL << 20;
	while (cap < size)
		cap *= 2;
	p = mmap(NULL, cap, PROT_NONE, MAP_SHARED | MAP_NORESERVE, obj->memfd, 0);
	if (p == MAP_FAILED)
		return -errno;
	ret = uf_uffd_register(&obj->mm->uffd, (unsigned long)p, cap, false);
	if (!ret && madvise(p, cap, MADV_DONTFORK) < 0)
		ret = -errno;
	if (ret) {
		/* (unregistered first: no event to wait for) */
		uf_uffd_unregister(&obj->mm->uffd, (unsigned long)p, cap);
		munmap(p, cap);
		return ret;
	}
	if (obj->cache_map != MAP_FAILED) {
		/* unregistered first, the unmap raises no event to wait for
		 * (the caller holds the invalidate lock) */
		uf_uffd_unregister(&obj->mm->uffd, (unsigned long)obj->cache_map, obj->cache_cap);
		munmap(obj->cache_map, obj->cache_cap);
	}
	obj->cache_map = p;
	obj->cache_cap = cap;
	return 0;
}

/* Forget the cache state of pages [first, last); the page state memory
 * of what is left empty goes too.  Cost: what is cached there.
 * Locking: obj->invalidate_lock held exclusive. */
static void clear_pages(struct uf_object *obj, uint64_t first, uint64_t last)
{
	uint64_t n = uf_pagebits_clear_range(&obj->pages, UF_PG_MASK_ALL, first, last);

	uf_add(&obj->npresent, -n);
	__uf_huge_punched(obj, first, last);	/* extents split */
}

static int zero_memfd(struct uf_object *obj, uint64_t off, uint64_t len)
{
	static const char zeros[PAGE_SIZE];

	while (len) {
		size_t n = len < PAGE_SIZE ? (size_t)len : PAGE_SIZE;
		ssize_t w = pwrite(obj->memfd, zeros, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/*
 * Synchronous write-protect: a zapped PTE that was writable leaves no
 * protection marker behind.  A page that comes back through a fill or a
 * pwrite is protected before it is in the cache (filemap.c); what stayed
 * cached from @first on (a huge extent's pages the kernel could not
 * split away) is protected again here.  Cost: what is cached.
 * Locking: mm->vma_lock held shared, obj->invalidate_lock exclusive; takes
 * obj->rmap_lock shared.
 */
static void reprotect(struct uf_object *obj, uint64_t first)
{
	uint64_t end = DIV_ROUND_UP(obj->size, PAGE_SIZE), p, q;

	pthread_rwlock_rdlock(&obj->rmap_lock);
	for (p = uf_pagebits_next(&obj->pages, UF_PG_PRESENT, first, end); p < end;
	     p = uf_pagebits_next(&obj->pages, UF_PG_PRESENT, q, end)) {
		for (q = p + 1; q < end && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q); q++)
			;
		__uf_object_protect(obj, p, q - p);
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
}

static int store_truncate(struct uf_object *obj, uint64_t size)
{
	return obj->ops->truncate ? obj->ops->truncate(obj->store, size) : 0;
}

/*
 * Does a process served from @obj show a page of [first, last)
 * (obj->served, linked by serve.c)?  A truncate or punch there would
 * leave zeros where the snapshot's bytes were, to fault in later: they
 * are refused (-EBUSY) while it is served.
 * Locking: obj->invalidate_lock held exclusive; takes obj->page_lock.
 */
static bool served_busy(struct uf_object *obj, uint64_t first, uint64_t last)
{
	struct uf_served_range *r;
	bool busy = false;

	pthread_mutex_lock(&obj->page_lock);
	for (r = obj->served; r && !busy; r = r->next)
		busy = r->first < last && first < r->first + r->npages;
	pthread_mutex_unlock(&obj->page_lock);
	return busy;
}

/*
 * Set i_size to @size: the store, the memfd (which zaps PTEs past EOF) and
 * the cache state.  On error the size is unchanged.
 * Locking: mm->vma_lock held shared, obj->invalidate_lock exclusive.
 */
int __uf_object_set_size(struct uf_object *obj, uint64_t size)
{
	uint64_t old;
	int ret = 0;

	old = obj->size;
	if (size < old) {
		ret = store_truncate(obj, size);
		if (ret)
			return ret;
		__atomic_store_n(&obj->size, size, __ATOMIC_RELEASE);
		/* a huge extent cut in two is split first */
		__uf_huge_cut(obj, DIV_ROUND_UP(size, PAGE_SIZE), DIV_ROUND_UP(old, PAGE_SIZE));
		/* Zaps every PTE past EOF in every mapping, nonlinear windows
		 * included, and zeroes the cache page's tail past EOF. */
		if (ftruncate(obj->memfd, (off_t)size) < 0)
			return -errno;
		clear_pages(obj, DIV_ROUND_UP(size, PAGE_SIZE), DIV_ROUND_UP(old, PAGE_SIZE));
	} else if (size > old) {
		uint64_t tail = old & (PAGE_SIZE - 1);

		ret = uf_object_cache_map(obj, size);
		if (!ret)
			ret = uf_pagebits_grow(&obj->pages, DIV_ROUND_UP(size, PAGE_SIZE));
		/* cut whatever the store held past the old end, then extend */
		if (!ret)
			ret = store_truncate(obj, old);
		if (!ret)
			ret = store_truncate(obj, size);
		if (ret)
			return ret;
		/*
		 * Bytes written through a mapping past the old EOF sit in the
		 * cached last page; tmpfs would expose them now.  Zero the
		 * whole tail of that page, past the new EOF too: with the memfd
		 * at the page's end first, so the zeroing does not extend it.
		 */
		if (tail && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, old >> PAGE_SHIFT)) {
			uint64_t end = (old | (PAGE_SIZE - 1)) + 1;

			if (ftruncate(obj->memfd, (off_t)end) < 0 || zero_memfd(obj, old, end - old)) {
				ret = -errno;
				ftruncate(obj->memfd, (off_t)old);
				store_truncate(obj, old);
				return ret;
			}
		}
		if (ftruncate(obj->memfd, (off_t)size) < 0) {
			ret = -errno;
			ftruncate(obj->memfd, (off_t)old);
			store_truncate(obj, old);
			return ret;
		}
		__atomic_store_n(&obj->size, size, __ATOMIC_RELEASE);
		__uf_huge_grown(obj, DIV_ROUND_UP(old, PAGE_SIZE));
	}
	if (obj->mm->wp_sync)
		reprotect(obj, DIV_ROUND_UP(size < old ? size : old, PAGE_SIZE));
	return 0;
}

UF_EXPORT int uf_object_truncate(struct uf_object *obj, uint64_t size)
{
	int ret;

	if (obj && obj->attach && !uf_object_orphaned(obj) && !uf_object_forked(obj))
		return size > UF_MAX_SIZE ? -EFBIG : obj->remote->truncate(obj, size);
	if (!obj || !obj->ops || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	if (obj->readonly)
		return -EROFS;
	if (size > UF_MAX_SIZE)
		return -EFBIG;

	pthread_rwlock_rdlock(&obj->mm->vma_lock);
	pthread_rwlock_wrlock(&obj->invalidate_lock);
	/* a served process's region is the snapshot's for as long as it is */
	if (size < obj->size &&
	    served_busy(obj, size >> PAGE_SHIFT, DIV_ROUND_UP(obj->size, PAGE_SIZE)))
		ret = -EBUSY;
	else
		ret = __uf_object_set_size(obj, size);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	pthread_rwlock_unlock(&obj->mm->vma_lock);
	return ret;
}

UF_EXPORT int uf_object_punch_hole(struct uf_object *obj, uint64_t offset, uint64_t len)
{
	uint64_t end, first, last;
	int ret = 0;

	if (obj && obj->attach && !uf_object_orphaned(obj) && len && !uf_object_forked(obj))
		return obj->remote->punch_hole(obj, offset, len);
	if (!obj || !obj->ops || uf_object_orphaned(obj) || !len)
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	if (obj->readonly)
		return -EROFS;

	pthread_rwlock_rdlock(&obj->mm->vma_lock);
	pthread_rwlock_wrlock(&obj->invalidate_lock);
	if (offset >= obj->size)
		goto out;
	end = offset + len < offset || offset + len > obj->size ? obj->size : offset + len;
	len = end - offset;
	if (served_busy(obj, offset >> PAGE_SHIFT, DIV_ROUND_UP(end, PAGE_SIZE))) {
		ret = -EBUSY;
		goto out;
	}

	/* the store first: if it fails, nothing has changed */
	if (obj->ops->punch_hole)
		ret = obj->ops->punch_hole(obj->store, offset, len);
	if (!obj->ops->punch_hole || ret == -EOPNOTSUPP) {
		static const char zeros[PAGE_SIZE];
		uint64_t o;

		ret = 0;
		for (o = offset; o < end && !ret; o += PAGE_SIZE - (o & (PAGE_SIZE - 1))) {
			uint64_t n = PAGE_SIZE - (o & (PAGE_SIZE - 1));

			ret = obj->ops->write(obj->store, zeros, n < end - o ? n : end - o, o);
		}
	}
	if (ret)
		goto out;

	/* whole pages leave the cache (zapped in every mapping) */
	first = DIV_ROUND_UP(offset, PAGE_SIZE);
	last = end >> PAGE_SHIFT;
	if (end == obj->size)
		last = DIV_ROUND_UP(end, PAGE_SIZE);
	if (last > first) {
		if (fallocate(obj->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)(first << PAGE_SHIFT), (off_t)((last - first) << PAGE_SHIFT)) < 0) {
			ret = -errno;
			goto out;
		}
		clear_pages(obj, first, last);
		if (obj->mm->wp_sync)
			reprotect(obj, first);
	}
	/* partial pages at the edges are zeroed where cached */
	if ((offset & (PAGE_SIZE - 1)) &&
	    uf_pagebits_test(&obj->pages, UF_PG_PRESENT, offset >> PAGE_SHIFT)) {
		uint64_t e = (offset | (PAGE_SIZE - 1)) + 1;

		ret = zero_memfd(obj, offset, (e < end ? e : end) - offset);
	}
	if (!ret && (end & (PAGE_SIZE - 1)) && end < obj->size &&
	    ((end >> PAGE_SHIFT) != (offset >> PAGE_SHIFT) || !(offset & (PAGE_SIZE - 1))) &&
	    uf_pagebits_test(&obj->pages, UF_PG_PRESENT, end >> PAGE_SHIFT)) {
		uint64_t s = end & PAGE_MASK;

		if (s < offset)
			s = offset;
		ret = zero_memfd(obj, s, end - s);
	}
out:
	pthread_rwlock_unlock(&obj->invalidate_lock);
	pthread_rwlock_unlock(&obj->mm->vma_lock);
	return ret;
}
