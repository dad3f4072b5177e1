// SPDX-License-Identifier: MIT
/*
 * The program's own address space (mm->self): its struct uf_as_ops (how
 * its VMAs are copied, its lost writes judged, its faults looked up and
 * answered), and following what the program does to its ufault memory
 * with the system's own calls.  The program's munmap(), mremap() and
 * madvise(MADV_DONTNEED) arrive as events (uf_vma_event): the table
 * (table.c) is cut, moved, or told that written bits went with the page
 * tables, in which case every cached page the range showed is taken as
 * dirty.  What raises no event is procmaps.c's.
 *
 * Locks (the order is in lockorder.h): mm->vma_lock exclusive to change
 * the table, obj->invalidate_lock shared to mark pages dirty, mm->zap_lock
 * for the ranges ufault zaps itself.
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

/* ------------------------------------------------------------------ */
/* Following the program's own munmap(), mremap(), madvise()           */
/* ------------------------------------------------------------------ */

/*
 * Note @vma as being mapped or torn down (@on), or no longer.  Its kernel
 * mapping may merge with a neighbour's meanwhile, which uf_vma_refresh()
 * must not take for growth.
 * Locking: mm->vma_lock held exclusive.
 */
void __uf_vma_busy(struct uf_mm *mm, struct uf_vma *vma, bool on)
{
	struct uf_vma **pp;

	if (on) {
		vma->busy_next = mm->busy;
		mm->busy = vma;
		return;
	}
	for (pp = &mm->busy; *pp; pp = &(*pp)->busy_next) {
		if (*pp == vma) {
			*pp = vma->busy_next;
			return;
		}
	}
}

/*
 * Can the page tables of @vma hold writes that the object's dirty bits
 * (obj->pages, UF_PG_DIRTY) do not know?
 * Any shared mapping of a writable object can (the system's mprotect() may
 * have made it writable unseen), unless synchronous write-protect tracks
 * its writes one by one.
 */
static bool may_hold_writes(const struct uf_vma *vma)
{
	if (!vma->obj || !(vma->flags & VMA_SHARED) || vma->obj->readonly)
		return false;
	return !(vma->mm->wp_sync && (vma->flags & VMA_WP));
}

/* Every cached page [s, e) of @vma shows is dirty: its written bits are
 * lost or unknown.  Locking: mm->vma_lock held. */
void __uf_self_mark_dirty(struct uf_vma *vma, unsigned long s, unsigned long e)
{
	pthread_rwlock_rdlock(&vma->obj->invalidate_lock);
	__uf_vma_mark_dirty(vma, s, e);
	pthread_rwlock_unlock(&vma->obj->invalidate_lock);
}

/* ->lost_writes of the program's own address space: the page tables of
 * [s, e) of @vma are going or gone with what they knew of writes.
 * Locking: mm->vma_lock held. */
static void own_lost_writes(struct uf_vma *vma, unsigned long s, unsigned long e)
{
	if (may_hold_writes(vma))
		__uf_self_mark_dirty(vma, s, e);
}

/*
 * ->copy of the program's own address space: a VMA with the object, ops
 * and private data of @src for [start, end) of it (a split).  NULL
 * without memory.  Locking: mm->vma_lock held exclusive.
 */
static struct uf_vma *own_copy(struct uf_as *as, const struct uf_vma *src, unsigned long start,
			       unsigned long end)
{
	size_t idx = (start - src->start) >> PAGE_SHIFT, n = (end - start) >> PAGE_SHIFT;
	struct uf_vma *nv = uf_vma_alloc(as->mm, 0, src->prot);

	if (!nv)
		return NULL;
	if (src->nl_pgoff) {
		nv->nl_pgoff = malloc(n * sizeof(*nv->nl_pgoff));
		if (!nv->nl_pgoff) {
			uf_vma_free(nv);
			return NULL;
		}
		memcpy(nv->nl_pgoff, src->nl_pgoff + idx, n * sizeof(*nv->nl_pgoff));
	}
	nv->start = start;
	nv->end = end;
	nv->pgoff = src->pgoff + idx;
	nv->flags = src->flags;
	nv->vm_ops = src->vm_ops;
	nv->private_data = src->private_data;
	nv->obj = src->obj;
	nv->ino = src->ino;
	return nv;
}


/*
 * ->no_vma: no VMA at @page_addr in the table: a registered range it does
 * not show yet (a mapping grown in place: refreshed now, and the retry
 * finds it), or unmapped meanwhile (the retry meets the placeholder).
 */
static void own_no_vma(struct uf_as *as, unsigned long page_addr)
{
	uf_vma_refresh_fault(as->mm, page_addr);
	uf_uffd_wake(as->uffd, page_addr, PAGE_SIZE);
}

/* ->destroy: uf_mm_destroy() unmaps the program's own mappings. */
static void own_destroy(struct uf_as *as)
{
	uf_unmap_all(as->mm);
}

/* The program's own address space (mm->self). */
const struct uf_as_ops uf_own_as_ops = {
	.remote		= false,
	.copy		= own_copy,
	.lost_writes	= own_lost_writes,
	.lookup_get	= uf_table_lookup_get,	/* table.c */
	.no_vma		= own_no_vma,
	.wp_fault	= uf_handle_wp_fault,	/* writeback.c */
	.sigbus		= uf_fault_sigbus,	/* fault.c */
	.destroy	= own_destroy,
};

/* Is [s, e) a range ufault mapped over itself?  Consume the note.
 * Locking: mm->vma_lock held exclusive. */
bool __uf_vma_expected(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	unsigned int i;

	for (i = 0; i < mm->nexpect; i++) {
		if (mm->expect[i].start == s && mm->expect[i].end == e) {
			mm->expect[i] = mm->expect[--mm->nexpect];
			return true;
		}
	}
	return false;
}

/*
 * uf_vma_zap - drop the page table entries of @r[0..n) for ufault's own
 * reasons (a CLOCK reference cleared, a poison marker lifted).  Each range
 * is noted before the zap, so that its remove event is not taken for the
 * program's MADV_DONTNEED or MADV_REMOVE, which marks the cached pages
 * dirty.  The zap itself loses no write: on shmem a write-protect marker
 * survives MADV_DONTNEED.  A note whose zap failed (no event) is dropped.
 * Locking: any ufault lock may be held; takes mm->zap_lock (innermost).
 */
int uf_vma_zap(struct uf_mm *mm, const struct uf_range *r, size_t n)
{
	size_t i, j;
	int ret;

	if (!n)
		return 0;
	pthread_mutex_lock(&mm->zap_lock);
	if (mm->nzaps + n > mm->zaps_cap) {
		size_t cap = mm->zaps_cap ? mm->zaps_cap : 64;
		struct uf_range *z;

		while (cap < mm->nzaps + n)
			cap *= 2;
		z = realloc(mm->zaps, cap * sizeof(*z));
		if (!z) {
			pthread_mutex_unlock(&mm->zap_lock);
			return -ENOMEM;	/* nothing zapped: no reference cleared */
		}
		mm->zaps = z;
		mm->zaps_cap = cap;
	}
	memcpy(mm->zaps + mm->nzaps, r, n * sizeof(*r));
	mm->nzaps += n;
	pthread_mutex_unlock(&mm->zap_lock);

	ret = uf_uffd_zap(&mm->uffd, r, n);
	if (ret) {
		/* which range failed is unknown: a note of one that raised its
		 * event is consumed already, the others are dropped now */
		pthread_mutex_lock(&mm->zap_lock);
		for (i = 0; i < n; i++)
			for (j = 0; j < mm->nzaps; j++)
				if (mm->zaps[j].start == r[i].start && mm->zaps[j].end == r[i].end) {
					mm->zaps[j] = mm->zaps[--mm->nzaps];
					break;
				}
		pthread_mutex_unlock(&mm->zap_lock);
	}
	return ret;
}

/* Was the remove event of [s, e) raised by uf_vma_zap()?  Consume the note.
 * Locking: takes mm->zap_lock. */
static bool zap_noted(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	bool found = false;
	size_t i;

	pthread_mutex_lock(&mm->zap_lock);
	for (i = 0; i < mm->nzaps; i++)
		if (mm->zaps[i].start == s && mm->zaps[i].end == e) {
			mm->zaps[i] = mm->zaps[--mm->nzaps];
			found = true;
			break;
		}
	pthread_mutex_unlock(&mm->zap_lock);
	return found;
}

/*
 * ->event of the engine: the program unmapped (munmap, mmap MAP_FIXED,
 * mremap shrinking), moved (mremap) or zapped (madvise MADV_DONTNEED or
 * MADV_REMOVE) part of a registered range.  The kernel has let the
 * program go on once the event was read; uf_uffd_quiesce() waits for this.
 * Locking: takes mm->vma_lock exclusive (and what the lists' callbacks,
 * ->open, ->close, the last uf_object_put(), take, after dropping it).
 */
void uf_vma_event(void *owner, const struct uffd_msg *msg)
{
	struct uf_mm *mm = owner;
	struct uf_vma_lists l = { NULL, NULL };
	struct kview *kv = NULL;
	char kvbuf[UF_KVIEW_SIZE] __attribute__((aligned(16)));

	/* (the kernel's view, to tell an unmap from one that came late) */
	if (msg->event == UFFD_EVENT_UNMAP && !uf_kview_open(mm, (struct kview *)kvbuf))
		kv = (struct kview *)kvbuf;
	pthread_rwlock_wrlock(&mm->vma_lock);
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
		if (!__uf_vma_expected(mm, msg->arg.remove.start, msg->arg.remove.end))
			__uf_vma_unmap_event(mm, msg->arg.remove.start, msg->arg.remove.end, kv, &l);
		break;
	case UFFD_EVENT_REMOVE: {
		/*
		 * Sent before MADV_DONTNEED zaps the range (the written bits
		 * go) or MADV_REMOVE punches the cache under a shared mapping
		 * (the pages then read zero, as from a punched file): either
		 * way every cached page a shared mapping of a writable object
		 * shows there is dirty, so that the store gets what the cache
		 * holds -- the zeros of a punch included.  The page state still
		 * says "present" for a punched page: its next fault finds out
		 * (filemap.c), and pread() reads the hole's zeros meanwhile.
		 */
		unsigned long s = msg->arg.remove.start, e = msg->arg.remove.end;
		size_t i;

		if (zap_noted(mm, s, e))
			break;		/* ufault's own: nothing was written */
		for (i = __vma_index(mm, s); i < mm->self.vt.n && mm->self.vt.vmas[i]->start < e; i++) {
			struct uf_vma *v = mm->self.vt.vmas[i];
			unsigned long a = v->start > s ? v->start : s, b = v->end < e ? v->end : e;

			if (v->obj && (v->flags & VMA_SHARED) && !v->obj->readonly)
				__uf_self_mark_dirty(v, a, b);
		}
		break;
	}
	case UFFD_EVENT_REMAP:
		__uf_as_move(&mm->self, msg->arg.remap.from, msg->arg.remap.to, msg->arg.remap.len, &l);
		break;
	default:
		break;
	}
	pthread_rwlock_unlock(&mm->vma_lock);
	if (kv)
		uf_kview_close(kv);
	uf_vma_lists_finish(&l);
}

struct map_fixed {
	unsigned long addr;
	size_t len;
	int prot, flags, fd;
	uint64_t off;
	void *ret;
};

static int map_fixed_fn(void *arg)
{
	struct map_fixed *m = arg;

	m->ret = mmap((void *)m->addr, m->len, m->prot, m->flags | MAP_FIXED | MAP_NORESERVE,
		      m->fd, (off_t)m->off);
	return m->ret == MAP_FAILED ? -errno : 0;
}

/*
 * uf_vma_map_fixed - map the object's cache at @off over [addr, addr + len)
 * of @vma (a nonlinear window), which raises an unmap event: noted as
 * ufault's own, and made through uf_uffd_run() since the caller holds
 * vma_lock.  Return the address, or MAP_FAILED with errno set.
 * Locking: mm->vma_lock held exclusive.
 */
void *uf_vma_map_fixed(struct uf_vma *vma, unsigned long addr, size_t len, uint64_t off)
{
	struct uf_mm *mm = vma->mm;
	struct map_fixed m = {
		.addr = addr, .len = len, .prot = vma->prot, .fd = vma->obj->memfd, .off = off,
		.flags = (vma->flags & VMA_PRIV_MAP) ? MAP_PRIVATE : MAP_SHARED,
	};
	bool noted = false;
	int ret;

	if (mm->nexpect < sizeof(mm->expect) / sizeof(mm->expect[0])) {
		mm->expect[mm->nexpect++] = (struct uf_range){ addr, addr + len };
		noted = true;
	}
	ret = uf_uffd_run(&mm->uffd, map_fixed_fn, &m);
	if (ret) {
		if (noted)
			__uf_vma_expected(mm, addr, addr + len);
		errno = -ret;
		return MAP_FAILED;
	}
	return m.ret;
}
