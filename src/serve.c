// SPDX-License-Identifier: MIT
/*
 * Serving another process's anonymous memory from an object's cache:
 * the library half of ufault-serve (tools/ufault-serve.c).
 *
 * A Firecracker VMM maps guest memory MAP_PRIVATE | MAP_ANONYMOUS,
 * registers it MISSING on a userfaultfd of its own and hands that fd over
 * with a table of regions: region i's pages are the memory file's bytes
 * at regions[i].offset.  Anonymous memory cannot map the cache's pages,
 * so each fault is served as the kernel serves a private file mapping's
 * first touch, with a copy: the page is made present in the object's
 * cache (the fill path, readahead included), read from the memfd into a
 * bounce buffer, and copied into the faulting page with UFFDIO_COPY
 * through the other process's userfaultfd (whose source must be in this
 * process).  Not from cache_map: the copy's source read is a kernel-mode
 * fault there, which this kernel refuses in a registered range (EFAULT).  Pages a
 * sequential stream has in the cache are copied on with it in one call,
 * as far as the readahead window reaches: a restore reading its memory in
 * order takes one fault per window, not one per page.  A fault that is
 * no stream copies its page alone: every page copied is the other
 * process's memory for good.
 *
 * The process is an address space of the mm (as.c): a struct uf_as whose
 * VMAs are one per region, with the object attached and these vm_ops.
 * fault.c finds the VMA and calls serve_fault(); a store error gives the
 * faulting access SIGBUS through the other process's userfaultfd (the
 * poison marker), never zeros.  When the process is gone its address
 * space is freed (uf_as_reap); when the mm is destroyed first, every page
 * it has not received is poisoned.
 *
 * Balloon.  The VMM's MADV_DONTNEED of guest memory raises
 * UFFD_EVENT_REMOVE: from then on that range is the process's own
 * anonymous memory, which reads zeros, never the object's bytes again.
 * Each region keeps a bit per page for that, set by serve_event() under
 * the table lock held exclusive and tested under it held shared around
 * every copy, so no copy of the object's bytes lands after the removal
 * was applied.
 *
 * Locking: as->vma_lock (shared) -> obj->invalidate_lock (shared, which
 * keeps the pages copied from present: reclaim and punch take it
 * exclusive) -> the engine's copy_lock (uffd.c).  The fill runs with the
 * invalidate lock alone: a store read never holds up the table.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Sequential streams per region whose next page is remembered. */
#define SERVE_STREAMS	4
/* Attempts to copy a page that reclaim keeps evicting between the fill
 * and the copy, before the access gets SIGBUS. */
#define SERVE_TRIES	16

struct serve_region {
	int refs;			/* VMAs sharing it (splits, forks): atomic */
	uint64_t first, npages;		/* its object pages */
	unsigned long *removed;		/* a bit per page (atomic ops) */
	uint64_t next[SERVE_STREAMS];	/* where recent runs ended (atomic) */
	unsigned int clock;		/* the next slot of @next (atomic) */
};

static bool region_removed(struct serve_region *r, uint64_t pg)
{
	uint64_t i = pg - r->first;

	if (i >= r->npages)
		return false;
	return __atomic_load_n(&r->removed[i / BITS_PER_LONG], __ATOMIC_RELAXED) &
	       (1UL << (i % BITS_PER_LONG));
}

static void region_remove(struct serve_region *r, uint64_t pg)
{
	uint64_t i = pg - r->first;

	if (i < r->npages)
		__atomic_fetch_or(&r->removed[i / BITS_PER_LONG], 1UL << (i % BITS_PER_LONG),
				  __ATOMIC_RELAXED);
}

/* Does a stream of this region go on at @pg? */
static bool region_stream(struct serve_region *r, uint64_t pg)
{
	unsigned int i;

	for (i = 0; i < SERVE_STREAMS; i++)
		if (__atomic_load_n(&r->next[i], __ATOMIC_RELAXED) == pg)
			return true;
	return false;
}

static void region_stream_note(struct serve_region *r, uint64_t from, uint64_t to)
{
	unsigned int i;

	for (i = 0; i < SERVE_STREAMS; i++) {
		uint64_t was = from;

		if (__atomic_compare_exchange_n(&r->next[i], &was, to, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
	i = __atomic_fetch_add(&r->clock, 1, __ATOMIC_RELAXED) % SERVE_STREAMS;
	__atomic_store_n(&r->next[i], to, __ATOMIC_RELAXED);
}

static void serve_open(struct uf_vma *vma)
{
	struct serve_region *r = vma->private_data;

	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

static void region_put(struct serve_region *r)
{
	if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(r->removed);
		free(r);
	}
}

static void serve_close(struct uf_vma *vma)
{
	region_put(vma->private_data);
}

/*
 * Put the page at @addr (object page @pg) into the other process: the
 * zero page where the range was removed, else the cache's page and, up to
 * @max pages in all, the present pages after it.  The VMA's table lock
 * is held across the test and the copy (see the top of the file).
 * Return 0 (done, or the retry meets what is there now), -ENOENT (the
 * cache page went meanwhile: fill again), or -errno.
 * Locking: takes as->vma_lock shared, then obj->invalidate_lock shared.
 */
static int serve_install(struct uf_vma *vma, struct serve_region *r, unsigned long addr,
			 uint64_t pg, bool write, size_t max)
{
	static const char zeros[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));
	struct uf_object *obj = vma->obj;
	struct uf_uffd *u = &vma->as->uffd;
	struct uf_bounce *bounce;
	size_t n, copied;
	char *buf;
	int ret;

	for (;;) {
		pthread_rwlock_rdlock(&vma->as->vma_lock);
		if (__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || addr < vma->start ||
		    addr >= vma->end) {
			pthread_rwlock_unlock(&vma->as->vma_lock);
			return 0;
		}
		if (region_removed(r, pg)) {
			/* a write would copy the zero page at once: a page */
			ret = write ? uf_uffd_copy_mapped(u, addr, zeros, PAGE_SIZE,
							  UF_UFFD_DONTWAKE, NULL)
				    : uf_uffd_zeropage_mapped(u, addr, PAGE_SIZE, UF_UFFD_DONTWAKE);
			pthread_rwlock_unlock(&vma->as->vma_lock);
			if (ret == -EAGAIN) {
				uf_uffd_settle(u);
				continue;
			}
			break;
		}
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		if (!uf_pagemap_test(&obj->pages, UF_PG_PRESENT, pg)) {
			pthread_rwlock_unlock(&obj->invalidate_lock);
			pthread_rwlock_unlock(&vma->as->vma_lock);
			return -ENOENT;
		}
		if (max > (vma->end - addr) >> PAGE_SHIFT)
			max = (vma->end - addr) >> PAGE_SHIFT;
		for (n = 1; n < max; n++) {
			uint64_t q = pg + n;

			if (!uf_pagemap_test(&obj->pages, UF_PG_PRESENT, q) || region_removed(r, q) ||
			    __uf_vma_pgoff(vma, addr + (n << PAGE_SHIFT)) != q)
				break;
		}
		copied = 0;
		bounce = uf_bounce_get(n << PAGE_SHIFT, (void **)&buf);
		if (!bounce) {
			ret = -ENOMEM;
		} else if (pread(obj->memfd, buf, n << PAGE_SHIFT, (off_t)(pg << PAGE_SHIFT)) !=
			   (ssize_t)(n << PAGE_SHIFT)) {
			ret = -EIO;
		} else {
			ret = uf_uffd_copy_mapped(u, addr, buf, n << PAGE_SHIFT, UF_UFFD_DONTWAKE,
						  &copied);
		}
		uf_bounce_put(bounce);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		pthread_rwlock_unlock(&vma->as->vma_lock);
		if (ret == -EAGAIN && !copied) {
			uf_uffd_settle(u);	/* an event first */
			continue;
		}
		/* a stream goes on after its run, however short (a background
		 * window may still be coming in) */
		if (max > 1)
			region_stream_note(r, pg, pg + (copied ? copied >> PAGE_SHIFT : n));
		break;
	}
	/*
	 * EEXIST: the page is there (another thread's fault, or a run
	 * copied it); ENOENT, ESRCH: the process changed its layout, or is
	 * gone; EAGAIN after a part: the pages left fault on their own.
	 */
	if (ret == -EEXIST || ret == -ENOENT || ret == -ESRCH || ret == -EAGAIN)
		ret = 0;
	return ret;
}

/* ->fault: make the page present in the cache, then copy it over. */
static struct uf_page *serve_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct serve_region *r = vma->private_data;
	struct uf_object *obj = vma->obj;
	unsigned long addr = fdata->address & PAGE_MASK;
	uint64_t pg = fdata->pgoff;
	bool write = fdata->flags & UF_FAULT_FLAG_WRITE, major = false, seq;
	size_t filled = 0;
	int ret = 0, tries;

	seq = region_stream(r, pg);
	for (tries = 0; tries < SERVE_TRIES; tries++) {
		struct uf_ra_req ra = { .first = pg, .n = 1 };
		bool cached;

		/* a removed page needs no fill (an unlocked look: a removal
		 * racing it is seen under the lock, below) */
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		cached = region_removed(r, pg) || uf_pagemap_test(&obj->pages, UF_PG_PRESENT, pg);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		if (!cached) {
			/* as for a mapping of the cache: only a miss reaches
			 * readahead (pages a background window brought in are
			 * no fault there, and must not end its stream here) */
			uf_readahead_window(vma, pg, &ra);
			pthread_rwlock_rdlock(&obj->invalidate_lock);
			ret = uf_object_fill(obj, ra.first, ra.n, pg, &filled, &major, vma);
			pthread_rwlock_unlock(&obj->invalidate_lock);
			uf_readahead_submit(vma, &ra);
			if (ret)
				break;
			seq = seq || ra.n > 1 || ra.bg_n;
		}
		ret = serve_install(vma, r, addr, pg, write,
				    seq ? (ra.first + ra.n > pg + vma->mm->ra_max ?
					   ra.first + ra.n - pg : vma->mm->ra_max) : 1);
		if (ret != -ENOENT)
			break;
	}
	if (filled > (major ? 1u : 0u)) {
		uint64_t ra = filled - (major ? 1 : 0);

		uf_add(&vma->stats.readahead_pages, ra);
		uf_add(&vma->mm->stats.readahead_pages, ra);
	}
	/* never UF_FAULT_FLAG_EOF: anonymous memory has no EOF to meet, the
	 * retry would fault for ever; regions lie inside the object */
	if (ret == -ENOMEM)
		fdata->type = UF_FAULT_OOM;
	else if (ret)
		fdata->type = UF_FAULT_SIGBUS;
	else
		fdata->type = major ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
	return NULL;
}

/*
 * ->open, ->close and ->fault of a region's VMA.  Called by fault.c from
 * a handler thread with no lock held (->fault), and by as.c with none
 * held (->open at a split or fork of the table, ->close at its release).
 */
static const struct uf_vm_operations serve_vm_ops = {
	.open	= serve_open,
	.close	= serve_close,
	.fault	= serve_fault,
};

/*
 * ->event of the other process's userfaultfd: a removal (the balloon's
 * MADV_DONTNEED) is noted page by page, then the table follows the event
 * as a fork child's does.
 * Locking: takes as->vma_lock exclusive.
 */
static void serve_event(void *owner, const struct uffd_msg *msg)
{
	struct uf_as *as = owner;

	if (msg->event == UFFD_EVENT_REMOVE) {
		unsigned long s = msg->arg.remove.start & PAGE_MASK, e = msg->arg.remove.end;
		size_t i;

		pthread_rwlock_wrlock(&as->vma_lock);
		for (i = 0; i < as->nvmas; i++) {
			struct uf_vma *v = as->vmas[i];
			unsigned long a;

			if (v->vm_ops != &serve_vm_ops || v->end <= s || v->start >= e)
				continue;
			for (a = v->start > s ? v->start : s; a < v->end && a < e; a += PAGE_SIZE)
				region_remove(v->private_data, __uf_vma_pgoff(v, a));
		}
		pthread_rwlock_unlock(&as->vma_lock);
	}
	uf_as_event(owner, msg);
}

static const struct uf_uffd_ops serve_uffd_ops = {
	.fault	= uf_fault_as,
	.event	= serve_event,
};

/* Is @fd a userfaultfd?  Its link in /proc names its anonymous inode. */
static bool is_userfaultfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[userfaultfd]") == 0;
}

static int region_cmp(const void *a, const void *b)
{
	const struct uf_serve_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The regions, checked against @size and each other, sorted into @s. */
static int regions_check(const struct uf_serve_region *regions, unsigned int n, uint64_t size,
			 struct uf_serve_region *s)
{
	uint64_t limit = DIV_ROUND_UP(size, PAGE_SIZE) * PAGE_SIZE;
	unsigned int i;

	if (!n || n > UF_SERVE_MAX_REGIONS)
		return -EINVAL;
	memcpy(s, regions, n * sizeof(*s));
	for (i = 0; i < n; i++) {
		if (!s[i].len || !PAGE_ALIGNED(s[i].start) || !PAGE_ALIGNED(s[i].len) ||
		    !PAGE_ALIGNED(s[i].offset) || s[i].start + s[i].len < s[i].start ||
		    s[i].start + s[i].len > (1ULL << 63) || s[i].offset > limit ||
		    s[i].len > limit - s[i].offset)
			return -EINVAL;
	}
	qsort(s, n, sizeof(*s), region_cmp);
	for (i = 1; i < n; i++)
		if (s[i].start < s[i - 1].start + s[i - 1].len)
			return -EINVAL;
	return 0;
}

UF_EXPORT int uf_object_serve_uffd(struct uf_object *obj, int uffd,
				   const struct uf_serve_region *regions, unsigned int n)
{
	struct uf_serve_region s[UF_SERVE_MAX_REGIONS];
	struct uf_vma tmpl[UF_SERVE_MAX_REGIONS], *tp[UF_SERVE_MAX_REGIONS];
	struct serve_region *r[UF_SERVE_MAX_REGIONS] = { NULL };
	unsigned int i, j;
	int fl, ret;

	if (!obj || !regions || uffd < 0 || uf_object_orphaned(obj) || obj->attach)
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	ret = regions_check(regions, n, uf_object_size(obj), s);
	if (ret)
		return ret;
	if (!is_userfaultfd(uffd))
		return -EBADF;
	/* the handlers read it as the mm's own: an empty read must not block
	 * (the flag is the open file's: the other process's copy too, which
	 * its owner does not read) */
	fl = fcntl(uffd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(uffd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -EBADF;

	ret = -ENOMEM;
	memset(tmpl, 0, n * sizeof(*tmpl));
	for (i = 0; i < n; i++) {
		r[i] = calloc(1, sizeof(*r[i]));
		if (!r[i])
			goto out;
		r[i]->refs = 1;		/* this function's, till the end */
		r[i]->first = s[i].offset >> PAGE_SHIFT;
		r[i]->npages = s[i].len >> PAGE_SHIFT;
		/* (untouched pages of a large bitmap cost no memory) */
		r[i]->removed = calloc(DIV_ROUND_UP(r[i]->npages, BITS_PER_LONG),
				       sizeof(unsigned long));
		if (!r[i]->removed)
			goto out;
		for (j = 0; j < SERVE_STREAMS; j++)
			r[i]->next[j] = UINT64_MAX;
		/* the VMA the address space copies (as.c): its ->open is
		 * called for the copy */
		tmpl[i].start = s[i].start;
		tmpl[i].end = s[i].start + s[i].len;
		tmpl[i].pgoff = s[i].offset >> PAGE_SHIFT;
		tmpl[i].prot = PROT_READ | PROT_WRITE;
		tmpl[i].flags = VMA_PRIVATE;
		tmpl[i].vm_ops = &serve_vm_ops;
		tmpl[i].private_data = r[i];
		tmpl[i].obj = obj;
		tp[i] = &tmpl[i];
	}
	ret = uf_as_adopt(obj->mm, uffd, tp, n, &serve_uffd_ops, NULL);
out:
	for (i = 0; i < n && r[i]; i++)
		region_put(r[i]);
	return ret;
}
