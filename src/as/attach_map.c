// SPDX-License-Identifier: MIT
/*
 * An attached object's mappings, on the client (attach.c is the rest of
 * the client): its table of mappings (sorted by start, an entry per
 * mapping, split as munmap and mprotect cut them), the mapping ops
 * uf_mmap(), uf_munmap(), uf_mprotect() and uf_msync() hand an attached
 * object to (each map, unmap and mprotect tells the server before it
 * returns, so its copy of the table is the client's), finding the
 * attached object a range is mapped from (the mm's ->remote_find), and
 * uf_attach_destroy_all().
 *
 * Locking: mm->attach_lock (the lists) and an attached object's a->lock
 * (its socket and table of mappings) are each taken with no other ufault
 * lock held, and never one under the other (lockorder.h).
 */
#define _GNU_SOURCE
#include "as/attach.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

/* Locking: a->lock held.  The first map entry whose end is above @addr. */
static size_t __att_index(struct uf_attach *a, unsigned long addr)
{
	size_t i = 0;

	while (i < a->nmaps && a->maps[i].end <= addr)
		i++;
	return i;
}

static int __att_insert(struct uf_attach *a, size_t i, const struct att_map *m)
{
	if (a->nmaps == a->maps_cap) {
		size_t cap = a->maps_cap ? 2 * a->maps_cap : 8;
		struct att_map *p = realloc(a->maps, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->maps = p;
		a->maps_cap = cap;
	}
	memmove(&a->maps[i + 1], &a->maps[i], (a->nmaps - i) * sizeof(*a->maps));
	a->maps[i] = *m;
	a->nmaps++;
	return 0;
}

/* Is [s, e) all mappings of @a?  Locking: a->lock held. */
static bool __att_covers(struct uf_attach *a, unsigned long s, unsigned long e)
{
	size_t i = __att_index(a, s);
	unsigned long at = s;

	for (; i < a->nmaps && at < e; i++) {
		if (a->maps[i].start > at)
			return false;
		at = a->maps[i].end;
	}
	return at >= e;
}

/* Split the entry across @addr, if one is.  Locking: a->lock held. */
static int __att_split(struct uf_attach *a, unsigned long addr)
{
	size_t i = __att_index(a, addr);
	struct att_map m;

	if (i >= a->nmaps || a->maps[i].start >= addr)
		return 0;
	m = a->maps[i];
	m.pgoff += (addr - m.start) >> PAGE_SHIFT;
	m.start = addr;
	if (__att_insert(a, i + 1, &m))
		return -ENOMEM;
	a->maps[i].end = addr;
	uf_object_get(a->obj);		/* each entry holds one */
	return 0;
}

/*
 * The attached objects of @mm, each with a reference, in *listp (NULL
 * when none): how many.  An object in its last put is left out.
 * Locking: takes mm->attach_lock.
 */
static size_t att_snapshot(struct uf_mm *mm, struct uf_attach ***listp)
{
	struct uf_attach *a, **list = NULL;
	size_t n = 0, cap = 0;

	*listp = NULL;
	if (!__atomic_load_n(&mm->attached, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&mm->attach_lock);
	for (a = mm->attached; a; a = a->next)
		cap++;
	list = calloc(cap ? cap : 1, sizeof(*list));
	/* (its free takes it off the list first: under the lock, @a and
	 * its object are still there) */
	for (a = mm->attached; list && a; a = a->next)
		if (uf_object_tryget(a->obj))
			list[n++] = a;
	pthread_mutex_unlock(&mm->attach_lock);
	*listp = list;
	return n;
}

/* The attached object with a mapping in [s, e), with a reference. */
static struct uf_attach *att_find(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	struct uf_attach **list, *found = NULL;
	size_t n = att_snapshot(mm, &list), i, k;

	for (k = 0; k < n; k++) {
		struct uf_attach *a = list[k];

		if (!found) {
			pthread_mutex_lock(&a->lock);
			i = __att_index(a, s);
			if (i < a->nmaps && a->maps[i].start < e)
				found = a;
			pthread_mutex_unlock(&a->lock);
			if (found == a)
				continue;
		}
		uf_object_put(a->obj);
	}
	free(list);
	return found;
}

/* ->mmap: uf_mmap() of an attached object. */
int att_mmap(struct uf_object *obj, size_t len, int prot, int flags, uint64_t offset,
	     void **addrp)
{
	struct uf_attach *a = obj->attach;
	bool shared = flags == UF_MAP_SHARED;
	int mflags = shared && !obj->readonly ? MAP_SHARED : MAP_PRIVATE;
	struct att_req r = { .op = ATT_MAP };
	struct att_map m;
	void *p;
	int ret;

	if (obj->readonly && shared && (prot & PROT_WRITE))
		return -EACCES;
	if (__atomic_load_n(&a->dead, __ATOMIC_ACQUIRE))
		return -ENOTCONN;
	/* at the file offset modulo 2 MiB: the server's huge extents map
	 * with one PMD here too; served by copy, private anonymous memory
	 * that the server copies the cache's pages into */
	if (a->copy)
		p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	else
		p = uf_mmap_aligned(len, prot, mflags | MAP_NORESERVE, obj->memfd, offset);
	if (p == MAP_FAILED)
		return -errno;
	/* a fork child would not be served: it must not have them (its
	 * kernel would fill holes with zeros, into the shared cache) */
	if (madvise(p, len, MADV_DONTFORK) < 0) {
		ret = -errno;
		munmap(p, len);
		return ret;
	}
	ret = uf_uffd_fd_register(a->uffd, (unsigned long)p, len);
	if (ret) {
		munmap(p, len);
		return ret;
	}
	m.start = (unsigned long)p;
	m.end = m.start + len;
	m.pgoff = offset >> PAGE_SHIFT;
	m.prot = prot;
	m.shared = shared;
	r.a = m.start;
	r.b = len;
	r.c = m.pgoff;
	r.d = (uint64_t)prot | (shared ? ATT_SHARED : 0);
	pthread_mutex_lock(&a->lock);
	ret = (int)att_call(a, &r, NULL, NULL);
	if (!ret)
		ret = __att_insert(a, __att_index(a, m.start), &m);
	pthread_mutex_unlock(&a->lock);
	if (ret) {
		/* (nobody has the address yet: unregistered, nothing faults) */
		uf_uffd_fd_unregister(a->uffd, m.start, len);
		munmap(p, len);
		if (ret != -ENOTCONN)
			att_call_simple(a, ATT_UNMAP, m.start, len, 0, 0);
		return ret;
	}
	uf_object_get(obj);		/* the mapping's */
	*addrp = p;
	return 0;
}

/* ->munmap: uf_munmap() of [s, e), where a mapping of @obj is. */
int att_munmap(struct uf_object *obj, unsigned long s, unsigned long e)
{
	struct uf_attach *a = obj->attach;
	size_t i, puts = 0;
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	if (!__att_covers(a, s, e) || __att_split(a, s) || __att_split(a, e)) {
		ret = -EINVAL;
		goto out;
	}
	/* no access from here (SIGSEGV, as after the unmap); then
	 * unregistered (waiters wake into PROT_NONE), unmapped with no
	 * event to wait for, and the server told */
	mprotect((void *)s, e - s, PROT_NONE);
	uf_uffd_fd_unregister(a->uffd, s, e - s);
	munmap((void *)s, e - s);
	{
		struct att_req r = { .op = ATT_UNMAP, .a = s, .b = e - s };

		att_call(a, &r, NULL, NULL);
	}
	i = __att_index(a, s);
	while (i < a->nmaps && a->maps[i].start < e) {
		memmove(&a->maps[i], &a->maps[i + 1], (a->nmaps - i - 1) * sizeof(*a->maps));
		a->nmaps--;
		puts++;
	}
out:
	pthread_mutex_unlock(&a->lock);
	while (puts--)
		uf_object_put(a->obj);
	return ret;
}

/* ->mprotect: uf_mprotect() of [s, e), where a mapping of @obj is. */
int att_mprotect(struct uf_object *obj, unsigned long s, unsigned long e, int prot)
{
	struct uf_attach *a = obj->attach;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	if (!__att_covers(a, s, e)) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = __att_index(a, s); (prot & PROT_WRITE) && i < a->nmaps && a->maps[i].start < e;
	     i++)
		if (a->maps[i].shared && a->obj->readonly) {
			ret = -EACCES;
			goto out;
		}
	if (__att_split(a, s) || __att_split(a, e)) {
		ret = -ENOMEM;
		goto out;
	}
	if (mprotect((void *)s, e - s, prot) < 0) {
		ret = -errno;
		goto out;
	}
	for (i = __att_index(a, s); i < a->nmaps && a->maps[i].start < e; i++)
		a->maps[i].prot = prot;
	{
		struct att_req r = { .op = ATT_PROTECT, .a = s, .b = e - s, .c = (uint64_t)prot };
		int64_t r64 = att_call(a, &r, NULL, NULL);

		if (r64 && r64 != -ENOTCONN)
			ret = (int)r64;
	}
out:
	pthread_mutex_unlock(&a->lock);
	return ret;
}

/* ->msync: uf_msync() of [s, e), where a mapping of @obj is. */
int att_msync(struct uf_object *obj, unsigned long s, unsigned long e)
{
	struct uf_attach *a = obj->attach;
	bool covered;
	int ret;

	pthread_mutex_lock(&a->lock);
	covered = __att_covers(a, s, e);
	pthread_mutex_unlock(&a->lock);
	/* (the server writes back every page of the object it takes as
	 * dirty: this range's among them) */
	ret = !covered ? -ENOMEM : att_sync(a->obj);
	return ret;
}

/* ->remote_find of the mm (vma.c): the attached object with a mapping in
 * [s, e), with a reference, or NULL. */
struct uf_object *att_find_object(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	struct uf_attach *a = att_find(mm, s, e);

	return a ? a->obj : NULL;
}
/*
 * uf_attach_destroy_all - uf_mm_destroy(): the clients this mm serves are
 * let go (their threads end: every page a client has not received takes
 * SIGBUS there), and the mappings of objects attached here are unmapped.
 * Locking: takes mm->attach_lock, a->lock; none held.
 */
void uf_attach_destroy_all(struct uf_mm *mm)
{
	struct uf_attach_srv *c;

	pthread_mutex_lock(&mm->attach_lock);
	for (c = mm->served; c; c = c->next)
		shutdown(c->sock, SHUT_RDWR);
	while (mm->served)
		pthread_cond_wait(&mm->attach_cond, &mm->attach_lock);
	pthread_mutex_unlock(&mm->attach_lock);

	for (;;) {
		struct uf_object *obj;
		int ret;
		struct uf_attach **list;
		size_t n = att_snapshot(mm, &list), k;
		unsigned long s = 0, e = 0;

		for (k = 0; k < n; k++) {
			struct uf_attach *a = list[k];

			pthread_mutex_lock(&a->lock);
			if (!e && a->nmaps) {
				s = a->maps[0].start;
				e = a->maps[0].end;
			}
			pthread_mutex_unlock(&a->lock);
			uf_object_put(a->obj);
		}
		free(list);
		if (!e || !(obj = att_find_object(mm, s, e)))
			return;
		ret = att_munmap(obj, s, e);
		uf_object_put(obj);
		if (ret)
			return;
	}
}
