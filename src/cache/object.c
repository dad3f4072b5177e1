// SPDX-License-Identifier: MIT
/*
 * Object lifetime: uf_object_create(), uf_object_open(),
 * uf_object_create_mem() (the memory store: the file store's methods on a
 * sparse memfd), references, and the last put, which writes back and
 * frees.  An object is on its mm's list (mm->objects, under mm->obj_lock)
 * from its creation to its last put; reclaim and uf_mm_destroy() walk it.
 * The last put drops the object's reference to its mm through the mm's
 * ops (mm->ops, cache/mm_types.h): the mm is the layer above.
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The mm's list of objects, which reclaim and uf_mm_destroy() walk. */
static void mm_objects_add(struct uf_mm *mm, struct uf_object *obj)
{
	__atomic_add_fetch(&mm->refs, 1, __ATOMIC_RELAXED);	/* dropped by the object's free */
	pthread_mutex_lock(&mm->obj_lock);
	obj->mm_next = mm->objects;
	mm->objects = obj;
	pthread_mutex_unlock(&mm->obj_lock);
}

static void mm_objects_del(struct uf_mm *mm, struct uf_object *obj)
{
	struct uf_object **pp;

	pthread_mutex_lock(&mm->obj_lock);
	for (pp = &mm->objects; *pp; pp = &(*pp)->mm_next) {
		if (*pp == obj) {
			*pp = obj->mm_next;
			break;
		}
	}
	pthread_mutex_unlock(&mm->obj_lock);
}

static int object_new(struct uf_mm *mm, const struct uf_store_ops *ops, void *store,
		      uint64_t size, bool readonly, struct uf_object **objp)
{
	struct uf_object *obj;
	int ret;

	if (uf_forked(mm))
		return -ECHILD;
	if (size > UF_MAX_SIZE)
		return -EFBIG;
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return -ENOMEM;
	obj->mm = mm;
	obj->pid = mm->pid;
	obj->refs = 1;
	obj->ops = ops;
	obj->store = store;
	obj->readonly = readonly || !ops->write;
	obj->size = size;
	obj->cache_map = MAP_FAILED;
	pthread_rwlock_init(&obj->invalidate_lock, NULL);
	uf_lockdep_class(&obj->invalidate_lock, UF_LK_INVALIDATE);
	pthread_mutex_init(&obj->page_lock, NULL);
	uf_lockdep_class(&obj->page_lock, UF_LK_PAGE);
	pthread_mutex_init(&obj->sync_lock, NULL);
	uf_lockdep_class(&obj->sync_lock, UF_LK_SYNC);
	pthread_rwlock_init(&obj->rmap_lock, NULL);
	uf_lockdep_class(&obj->rmap_lock, UF_LK_RMAP);

	obj->memfd = memfd_create("ufault-cache", MFD_CLOEXEC);
	if (obj->memfd < 0 || uf_cache_fd_restrict(obj->memfd) < 0) {
		ret = -errno;
		goto fail;
	}
	if (ftruncate(obj->memfd, (off_t)size) < 0) {
		ret = -errno;
		goto fail;
	}
	/* the address space first: it says -ENOMEM for a size that cannot
	 * be cached at all */
	ret = uf_object_cache_map(obj, size);
	if (ret)
		goto fail;
	ret = uf_pagebits_grow(&obj->pages, size_pages(size));
	if (ret)
		goto fail;
	mm_objects_add(mm, obj);
	*objp = obj;
	return 0;
fail:
	obj->ops = NULL;	/* the caller still owns the store */
	obj->mm = NULL;
	obj->refs = 1;
	uf_object_put(obj);
	return ret;
}

/*
 * ->readv of @ops, as far as ->size says there is one: 0 and *@readv, or
 * -EINVAL (->readv with no ->size, a ->size short of ->readv) or -E2BIG
 * (a nonzero byte past this version's struct, up to ->size).
 */
static int store_ops_readv(const struct uf_store_ops *ops,
			   int (**readv)(void *, const struct uf_store_iov *, size_t))
{
	const unsigned char *p = (const unsigned char *)ops;
	size_t i;

	*readv = NULL;
	if (!ops->size)
		return ops->readv ? -EINVAL : 0;
	if (ops->size < offsetof(struct uf_store_ops, readv) + sizeof(ops->readv))
		return -EINVAL;
	for (i = sizeof(*ops); i < ops->size; i++)
		if (p[i])
			return -E2BIG;
	*readv = ops->readv;
	return 0;
}

/*
 * uf_object_create() is versioned: UFAULT_0.7's reads ->size and the
 * members it covers (->readv); the first one (UFAULT_0.1, below), bound
 * to programs built before struct uf_store_ops had ->size, reads the six
 * members those programs' tables have, and nothing past them.
 */
__asm__(".symver uf_object_create_0_7, uf_object_create@@UFAULT_0.7");
__asm__(".symver uf_object_create_0_1, uf_object_create@UFAULT_0.1");

UF_EXPORT int uf_object_create_0_7(struct uf_mm *mm, const struct uf_store_ops *ops,
				   void *store, uint64_t size, struct uf_object **objp);
UF_EXPORT int uf_object_create_0_7(struct uf_mm *mm, const struct uf_store_ops *ops,
				   void *store, uint64_t size, struct uf_object **objp)
{
	int (*readv)(void *, const struct uf_store_iov *, size_t);
	int ret;

	if (!mm || !ops || !ops->read || !objp)
		return -EINVAL;
	ret = store_ops_readv(ops, &readv);
	if (ret)
		return ret;
	ret = object_new(mm, ops, store, size, false, objp);
	if (!ret)
		(*objp)->readv = readv;
	return ret;
}

UF_EXPORT int uf_object_create_0_1(struct uf_mm *mm, const struct uf_store_ops *ops,
				   void *store, uint64_t size, struct uf_object **objp);
UF_EXPORT int uf_object_create_0_1(struct uf_mm *mm, const struct uf_store_ops *ops,
				   void *store, uint64_t size, struct uf_object **objp)
{
	if (!mm || !ops || !ops->read || !objp)
		return -EINVAL;
	return object_new(mm, ops, store, size, false, objp);
}

/* What ->readv of struct uf_store_ops sets, after the object is made.
 * Locking: none (the method is read atomically). */
UF_EXPORT int uf_object_set_readv(struct uf_object *obj,
				  int (*readv)(void *store, const struct uf_store_iov *iov,
					       size_t n))
{
	if (!obj || obj->attach || obj->ops == &uf_file_store_ops)
		return -EINVAL;
	__atomic_store_n(&obj->readv, readv, __ATOMIC_RELEASE);
	return 0;
}

UF_EXPORT int uf_object_open(struct uf_mm *mm, const char *path, int oflags,
			     struct uf_object **objp)
{
	int acc = oflags & O_ACCMODE, fd, ret;
	void *store;
	struct stat st;

	if (!mm || !path || !objp || (oflags & ~(O_ACCMODE | O_CREAT)) ||
	    (acc != O_RDONLY && acc != O_RDWR))
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	fd = open(path, oflags | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	ret = uf_file_store_open(fd, acc == O_RDWR, &store);
	if (ret) {
		close(fd);
		return ret;
	}
	ret = object_new(mm, &uf_file_store_ops, store, (uint64_t)st.st_size,
			 acc == O_RDONLY, objp);
	if (ret)
		uf_file_store_ops.release(store);
	return ret;
}

/*
 * Take a reference unless the last one is gone (the object is being freed):
 * for walks of mm->objects, which may meet an object in its last put.
 * Locking: mm->obj_lock held.
 */
bool uf_object_tryget(struct uf_object *obj)
{
	int refs = __atomic_load_n(&obj->refs, __ATOMIC_RELAXED);

	while (refs > 0)
		if (__atomic_compare_exchange_n(&obj->refs, &refs, refs + 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return true;
	return false;
}

UF_EXPORT void uf_object_get(struct uf_object *obj)
{
	if (obj)
		__atomic_add_fetch(&obj->refs, 1, __ATOMIC_RELAXED);
}

/*
 * The last put in a fork child: free the child's copy of the object and
 * nothing else (see mm_free_child() in mm.c): no sync, no store release
 * (the store's resources are the parent's too), no lock, no munmap (the
 * cache mapping was not inherited).
 */
static void object_free_child(struct uf_object *obj)
{
	/* a built-in store is the child's memory too; a program's own store
	 * is left alone (its ->release may act on what the parent shares) */
	if (obj->ops == &uf_file_store_ops)
		uf_file_store_free_child(obj->store);
	if (obj->observer)
		obj->observer->free_child(obj);
	if (obj->memfd >= 0)
		close(obj->memfd);
	uf_pagebits_free(&obj->pages);
	free(obj->fifo);
	if (obj->mm)
		obj->mm->ops->put_child(obj->mm);
	free(obj);
}

UF_EXPORT void uf_object_put(struct uf_object *obj)
{
	if (!obj || __atomic_sub_fetch(&obj->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (obj->attach && !uf_object_forked(obj)) {
		obj->remote->free(obj);
		return;
	}
	if (uf_object_forked(obj)) {
		object_free_child(obj);
		return;
	}
	/* off the mm's list first: no walk of it can reach the object now */
	if (obj->mm)
		mm_objects_del(obj->mm, obj);
	uf_huge_forget(obj);		/* and no collapse */
	if (obj->observer)		/* a record ends, a prefetch stops */
		obj->observer->release(obj);
	if (obj->ops) {
		uf_object_sync(obj);
		if (obj->ops->release)
			obj->ops->release(obj->store);
	}
	if (obj->cache_map != MAP_FAILED) {
		/* unregistered first, the unmap raises no event to wait for */
		if (obj->mm)
			uf_uffd_unregister(&obj->mm->uffd, (unsigned long)obj->cache_map,
					   obj->cache_cap);
		munmap(obj->cache_map, obj->cache_cap);
	}
	if (obj->memfd >= 0)
		close(obj->memfd);
	uf_pagebits_free(&obj->pages);
	free(obj->fifo);
	pthread_rwlock_destroy(&obj->invalidate_lock);
	pthread_mutex_destroy(&obj->page_lock);
	pthread_mutex_destroy(&obj->sync_lock);
	pthread_rwlock_destroy(&obj->rmap_lock);
	if (obj->mm)
		obj->mm->ops->put(obj->mm);	/* its memory may go now (destroyed before) */
	free(obj);
}

UF_EXPORT uint64_t uf_object_size(const struct uf_object *obj)
{
	if (obj && obj->attach)
		return obj->remote->size(obj);
	return obj ? __atomic_load_n(&obj->size, __ATOMIC_ACQUIRE) : 0;
}

UF_EXPORT int uf_object_create_mem(struct uf_mm *mm, uint64_t size, struct uf_object **objp)
{
	void *store;
	int fd, ret;

	if (!mm || !objp)
		return -EINVAL;
	if (size > UF_MAX_SIZE)
		return -EFBIG;
	fd = memfd_create("ufault-store", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = uf_file_store_new(fd, &store);
	if (ret) {
		close(fd);
		return ret;
	}
	ret = uf_object_create_0_7(mm, &uf_file_store_ops, store, size, objp);
	if (ret)
		uf_file_store_ops.release(store);
	return ret;
}

/*
 * The cache's inode mode: 0400, owned by this process's uid.  Read-only
 * clients receive a read-only file of the cache (attach.c), and anyone
 * holding an fd may reopen it through /proc/self/fd/N: that open is
 * checked against this mode, so no uid but ours (and root) can turn a
 * read-only fd into a writable one.  The fds this process holds keep
 * their access.  -1 with errno on failure.
 */
int uf_cache_fd_restrict(int fd)
{
	return fchmod(fd, 0400);
}
