// SPDX-License-Identifier: MIT
/*
 * Mappings: the VMA table of an mm, uf_mmap(), uf_mmap_ops(), uf_munmap(),
 * uf_mprotect(), uf_msync(), and following what the program does with the system's
 * own calls.
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
 *
 * The program's munmap(), mremap() and madvise(MADV_DONTNEED) arrive as
 * events (uf_vma_event): the table is cut, moved, or told that written
 * bits went with the page tables, in which case every cached page the
 * range showed is taken as dirty.  What raises no event - a mapping grown
 * in place by mremap(), write permission added by the system's mprotect()
 * - is read from /proc/self/maps (uf_vma_refresh) when a fault lands
 * outside every VMA and before each sync.
 */
#define _GNU_SOURCE
#include "internal.h"

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
static size_t __vma_index(struct uf_mm *mm, unsigned long addr)
{
	return __uf_table_index(&mm->self.vt, addr);	/* first VMA whose end is above addr */
}

/* Locking: mm->vma_lock held (either mode). */
struct uf_vma *__uf_vma_find(struct uf_mm *mm, unsigned long addr)
{
	return __uf_table_find(&mm->self.vt, addr);
}

/*
 * Where an object's VMA lies, and the object's list of VMAs, change under
 * obj->rmap_lock exclusive too (besides mm->vma_lock): a fill reads them
 * under rmap_lock alone (see internal.h).
 */
static void rmap_wrlock(struct uf_vma *v)
{
	if (v->obj)
		pthread_rwlock_wrlock(&v->obj->rmap_lock);
}

static void rmap_unlock(struct uf_vma *v)
{
	if (v->obj)
		pthread_rwlock_unlock(&v->obj->rmap_lock);
}

/*
 * Find the VMA at @addr and take a reference; compute the object page the
 * address shows.  Return NULL if no ufault mapping is there.
 * Locking: takes mm->vma_lock shared.
 */
struct uf_vma *uf_vma_lookup_get(struct uf_mm *mm, unsigned long addr, uint64_t *pgoff,
				 bool *nonlinear)
{
	bool fresh = false;
	struct uf_vma *vma;

again:
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
	/* a registered range no VMA covers: a mapping grown in place? */
	if (!vma && !fresh) {
		fresh = true;
		if (uf_vma_refresh_fault(mm, addr) > 0)
			goto again;
	}
	return vma;
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
	 * while a record watches readahead (workingset.c).
	 */
	bool wp = (vma->flags & VMA_WP) ||
		  (vma->mm->budget_pages && vma->mm->wp_sync && (vma->flags & VMA_SHARED)) ||
		  (vma->obj && !uf_vma_remote(vma) && uf_ws_watching(vma->obj));
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

/* ------------------------------------------------------------------ */
/* Following the program's own munmap(), mremap(), madvise()           */
/* ------------------------------------------------------------------ */

/*
 * Note @vma as being mapped or torn down (@on), or no longer.  Its kernel
 * mapping may merge with a neighbour's meanwhile, which uf_vma_refresh()
 * must not take for growth.
 * Locking: mm->vma_lock held exclusive.
 */
static void __vma_busy(struct uf_mm *mm, struct uf_vma *vma, bool on)
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
static void __vma_mark_dirty(struct uf_vma *vma, unsigned long s, unsigned long e)
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
		__vma_mark_dirty(vma, s, e);
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

/* ->lookup_get of the program's own address space (uf_vma_lookup_get). */
static struct uf_vma *own_lookup_get(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				     bool *nonlinear)
{
	return uf_vma_lookup_get(as->mm, addr, pgoff, nonlinear);
}

/* ->no_vma: unmapped meanwhile: the retry meets the placeholder. */
static void own_no_vma(struct uf_as *as, unsigned long page_addr)
{
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
	.lookup_get	= own_lookup_get,
	.no_vma		= own_no_vma,
	.wp_fault	= uf_handle_wp_fault,	/* writeback.c */
	.sigbus		= uf_fault_sigbus,	/* fault.c */
	.destroy	= own_destroy,
};

/* Is [s, e) a range ufault mapped over itself?  Consume the note.
 * Locking: mm->vma_lock held exclusive. */
static bool __vma_expected(struct uf_mm *mm, unsigned long s, unsigned long e)
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
struct kview;
static int kview_open(struct uf_mm *mm, struct kview *kv);
static void kview_close(struct kview *kv);
static void __vma_unmap_event(struct uf_mm *mm, unsigned long s, unsigned long e,
			      struct kview *kv, struct uf_vma_lists *l);

void uf_vma_event(void *owner, const struct uffd_msg *msg)
{
	struct uf_mm *mm = owner;
	struct uf_vma_lists l = { NULL, NULL };
	struct kview *kv = NULL;
	char kvbuf[64] __attribute__((aligned(16)));

	/* (the kernel's view, to tell an unmap from one that came late) */
	if (msg->event == UFFD_EVENT_UNMAP && !kview_open(mm, (struct kview *)kvbuf))
		kv = (struct kview *)kvbuf;
	pthread_rwlock_wrlock(&mm->vma_lock);
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
		if (!__vma_expected(mm, msg->arg.remove.start, msg->arg.remove.end))
			__vma_unmap_event(mm, msg->arg.remove.start, msg->arg.remove.end, kv, &l);
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
				__vma_mark_dirty(v, a, b);
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
		kview_close(kv);
	uf_vma_lists_finish(&l);
}

/* ------------------------------------------------------------------ */
/* What raises no event: growth in place, the system's mprotect()      */
/* ------------------------------------------------------------------ */

struct kmap {
	unsigned long start, end, off, ino;
	bool write, shared;
};

/* The kernel's mappings, from /proc/self/maps; NULL if unreadable. */
static struct kmap *read_maps(size_t *np)
{
	struct kmap *k = NULL;
	size_t n = 0, cap = 0, linecap = 0;
	char *line = NULL;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return NULL;
	while (getline(&line, &linecap, f) > 0) {
		unsigned long s, e, off, ino;
		unsigned int maj, min;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &s, &e, perms, &off, &maj, &min,
			   &ino) != 7)
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct kmap *p = realloc(k, c * sizeof(*p));

			if (!p) {
				free(k);
				k = NULL;
				break;
			}
			k = p;
			cap = c;
		}
		k[n++] = (struct kmap){ s, e, off, ino, perms[1] == 'w', perms[3] == 's' };
	}
	free(line);
	fclose(f);
	*np = n;
	return k;
}

static const struct kmap *kmap_find(const struct kmap *k, size_t n, unsigned long addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (k[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && k[lo].start <= addr ? &k[lo] : NULL;
}

/* Does kernel mapping @km show the last page of @v, as @v has it? */
static bool kmap_is(const struct kmap *km, const struct uf_vma *v)
{
	unsigned long last = v->end - PAGE_SIZE;

	if (!v->obj)
		return km->ino == 0;
	return km->ino == v->ino &&
	       km->off + (last - km->start) == __uf_vma_pgoff(v, last) << PAGE_SHIFT;
}

/*
 * mremap() grew @v in place to @end (the kernel keeps the registration):
 * the grown part is served from now on, and tracked.  A page cached
 * before is mapped by the kernel without a fault and may have been
 * written: protected first, then taken as dirty.
 * Locking: mm->vma_lock held exclusive.
 */
static void __vma_grow(struct uf_vma *v, const struct kmap *km, unsigned long end)
{
	size_t oldn = (v->end - v->start) >> PAGE_SHIFT, newn = (end - v->start) >> PAGE_SHIFT, j;
	unsigned long old_end = v->end;
	uint64_t *p = NULL;

	if (v->nl_pgoff) {
		p = malloc(newn * sizeof(*p));
		if (!p)
			return;
		memcpy(p, v->nl_pgoff, oldn * sizeof(*p));
		for (j = oldn; j < newn; j++)
			p[j] = (km->off + (v->start + (j << PAGE_SHIFT) - km->start)) >> PAGE_SHIFT;
	}
	rmap_wrlock(v);
	if (p) {
		free(v->nl_pgoff);
		v->nl_pgoff = p;
	}
	v->end = end;
	if (v->obj)
		v->obj->rmap_gen++;
	rmap_unlock(v);
	if (v->flags & VMA_REG_WP)
		uf_vma_protect_cached(v, old_end, end);
	if (v->obj && (v->flags & VMA_SHARED) && !v->obj->readonly)
		__vma_mark_dirty(v, old_end, end);
}

/*
 * The system's mprotect() made a shared mapping of @v writable: track it
 * from now on (write-protect registration), and take every cached page it
 * shows as dirty, since writes may have landed before.
 * Locking: mm->vma_lock held exclusive.
 */
static void __vma_now_writable(struct uf_vma *v)
{
	struct uf_mm *mm = v->mm;
	size_t len = v->end - v->start;

	v->prot |= PROT_WRITE;
	if (!(v->flags & VMA_WP) && (mm->wp_async || mm->wp_sync) &&
	    ((v->flags & VMA_REG_WP) || uf_uffd_register(&mm->uffd, v->start, len, true) == 0)) {
		/* tracked first, so a fill from now on protects its holes
		 * here; then what is cached already (read without the lock by
		 * the fault path) */
		rmap_wrlock(v);
		__atomic_store_n(&v->flags, v->flags | VMA_REG_WP | VMA_WP, __ATOMIC_RELAXED);
		v->obj->rmap_gen++;
		rmap_unlock(v);
		uf_vma_protect_cached(v, v->start, v->end);
	}
	__vma_mark_dirty(v, v->start, v->end);
}

/*
 * The kernel's view of the address space: one PROCMAP_QUERY ioctl per
 * question (6.11+), else /proc/self/maps read whole once.
 */
struct kview {
	int fd;			/* /proc/self/maps */
	bool query;		/* PROCMAP_QUERY works */
	struct kmap *all;	/* else the parsed file */
	size_t n;
};

static int kview_open(struct uf_mm *mm, struct kview *kv)
{
	int q = __atomic_load_n(&mm->procmap_query, __ATOMIC_RELAXED);

	kv->all = NULL;
	kv->n = 0;
	kv->fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (kv->fd < 0)
		return -errno;
	if (q >= 0) {
		struct procmap_query pq = {
			.size = sizeof(pq), .query_addr = 0,
			.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA,
		};

		q = ioctl(kv->fd, PROCMAP_QUERY, &pq) == 0 || errno == ENOENT;
		__atomic_store_n(&mm->procmap_query, q ? 1 : -1, __ATOMIC_RELAXED);
	}
	kv->query = q > 0;
	if (!kv->query) {
		close(kv->fd);
		kv->fd = -1;
		kv->all = read_maps(&kv->n);
		if (!kv->all)
			return -ENOMEM;
	}
	return 0;
}

static void kview_close(struct kview *kv)
{
	if (kv->fd >= 0)
		close(kv->fd);
	free(kv->all);
}

_Static_assert(sizeof(struct kview) <= 64, "uf_vma_event's buffer");

/* The kernel mapping over @addr, or false. */
static bool kview_at(struct kview *kv, unsigned long addr, struct kmap *km)
{
	struct procmap_query pq = { .size = sizeof(pq), .query_addr = addr };
	const struct kmap *k;

	if (!kv->query) {
		k = kmap_find(kv->all, kv->n, addr);
		if (k)
			*km = *k;
		return k != NULL;
	}
	if (ioctl(kv->fd, PROCMAP_QUERY, &pq) < 0)
		return false;
	*km = (struct kmap){
		.start = pq.vma_start, .end = pq.vma_end, .off = pq.vma_offset,
		.ino = pq.inode, .write = pq.vma_flags & PROCMAP_QUERY_VMA_WRITABLE,
		.shared = pq.vma_flags & PROCMAP_QUERY_VMA_SHARED,
	};
	return km->start <= addr && addr < km->end;
}

/*
 * Does the kernel still map [a, b) of @v as @v does?  Return where that
 * stops (@a: not at all).  A range being mapped anew by uf_mmap() is not
 * @v's, whatever the kernel shows there.  Page by page where @v has
 * nonlinear windows: the kernel's mapping may be linear there now (the
 * program shrank the mapping, then grew it in place again before the
 * shrink's event was applied).
 * Locking: mm->vma_lock held.
 */
static unsigned long __vma_live_until(struct uf_mm *mm, struct uf_vma *v, unsigned long a,
				      unsigned long b, struct kview *kv)
{
	unsigned long end, x;
	struct uf_vma *bz;
	struct kmap km;

	for (bz = mm->busy; bz; bz = bz->busy_next)
		if (bz->start < b && bz->end > a)
			return a;
	if (!kview_at(kv, a, &km))
		return a;
	if (v->obj ? km.ino != v->ino ||
		     km.off + (a - km.start) != __uf_vma_pgoff(v, a) << PAGE_SHIFT
		   : km.ino != 0 || km.shared)
		return a;
	end = km.end < b ? km.end : b;
	if (v->nl_pgoff)
		for (x = a + PAGE_SIZE; x < end; x += PAGE_SIZE)
			if (km.off + (x - km.start) != __uf_vma_pgoff(v, x) << PAGE_SHIFT)
				return x;
	return end;
}

/*
 * An unmap event for [s, e).  The kernel queues it after it has freed the
 * range, so it can come after the range was mapped again (by a move that
 * was queued first, or by uf_mmap()): what the kernel still maps as the
 * table has it is left alone.
 * Locking: mm->vma_lock held exclusive.
 */
static void __vma_unmap_event(struct uf_mm *mm, unsigned long s, unsigned long e,
			      struct kview *kv, struct uf_vma_lists *l)
{
	unsigned long a = s;

	while (a < e) {
		size_t i = __vma_index(mm, a);
		unsigned long b, live;
		struct uf_vma *v;

		if (i >= mm->self.vt.n || mm->self.vt.vmas[i]->start >= e)
			return;
		v = mm->self.vt.vmas[i];
		if (v->start > a)
			a = v->start;
		b = v->end < e ? v->end : e;
		live = kv ? __vma_live_until(mm, v, a, b, kv) : a;
		if (live > a) {
			a = live;
			continue;
		}
		__uf_as_unmap_range(&mm->self, a, b, l);
		a = b;
	}
}

/*
 * Bring @v (table index @i) up to the kernel: grown in place (over
 * @addr, if given), made writable by the system's mprotect().  Return 1
 * if it changed.
 * Locking: mm->vma_lock held exclusive.
 */
static int __vma_refresh_one(struct uf_mm *mm, size_t i, struct kview *kv, unsigned long addr)
{
	struct uf_vma *v = mm->self.vt.vmas[i], *b;
	unsigned long limit = i + 1 < mm->self.vt.n ? mm->self.vt.vmas[i + 1]->start : ULONG_MAX, a;
	struct kmap km, kp;
	int changed = 0;

	for (b = mm->busy; b; b = b->busy_next)
		if (b->start >= v->end && b->start < limit)
			limit = b->start;
	if (!kview_at(kv, v->end - PAGE_SIZE, &km) || !kmap_is(&km, v))
		return 0;	/* unmapped: its event is on its way */
	if (km.end > v->end && limit > v->end &&
	    (!addr || (addr >= v->end && addr < km.end && addr < limit))) {
		__vma_grow(v, &km, km.end < limit ? km.end : limit);
		changed = 1;
	}
	if (addr || !(v->flags & VMA_SHARED) || !v->obj || v->obj->readonly ||
	    (v->prot & PROT_WRITE))
		return changed;
	for (a = v->start; a < v->end && kview_at(kv, a, &kp); a = kp.end) {
		if (kp.write) {
			__vma_now_writable(v);
			return 1;
		}
	}
	return changed;
}

/*
 * uf_vma_refresh - bring the VMAs overlapping [start, end) up to what
 * raises no event: growth in place by mremap(), shared mappings made
 * writable by the system's mprotect().  Return the VMAs changed, or -errno.
 * Locking: takes mm->vma_lock exclusive; none held.
 */
int uf_vma_refresh(struct uf_mm *mm, unsigned long start, unsigned long end)
{
	struct kview kv;
	int changed = 0, ret;
	size_t i;

	ret = kview_open(mm, &kv);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&mm->vma_lock);
	/* from the VMA before @start too: it may have grown into the range */
	i = __vma_index(mm, start);
	for (i = i ? i - 1 : 0; i < mm->self.vt.n && mm->self.vt.vmas[i]->start < end; i++)
		changed += __vma_refresh_one(mm, i, &kv, 0);
	pthread_rwlock_unlock(&mm->vma_lock);
	kview_close(&kv);
	return changed;
}

/*
 * uf_vma_refresh_object - uf_vma_refresh() for the mappings of @obj only
 * (before a sync of the object).  Where they lie is read under
 * obj->rmap_lock, then each is refreshed by its place in the table (a
 * refresh takes rmap_lock exclusive to change one); the table lock held
 * exclusive throughout keeps them there.  Return as uf_vma_refresh().
 * Locking: takes mm->vma_lock exclusive, obj->rmap_lock; none held.
 */
int uf_vma_refresh_object(struct uf_object *obj)
{
	struct uf_mm *mm = obj->mm;
	unsigned long *starts = NULL;
	size_t n = 0, cap = 0, i;
	struct uf_vma *v;
	struct kview kv;
	int changed = 0, ret;

	pthread_rwlock_rdlock(&obj->rmap_lock);
	v = obj->vmas;
	pthread_rwlock_unlock(&obj->rmap_lock);
	if (!v)
		return 0;
	ret = kview_open(mm, &kv);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&mm->vma_lock);
	pthread_rwlock_rdlock(&obj->rmap_lock);
	uf_rmap_foreach(v, obj) {
		if (n == cap) {
			unsigned long *s = realloc(starts, (cap ? 2 * cap : 8) * sizeof(*s));

			if (!s) {
				ret = -ENOMEM;
				break;
			}
			starts = s;
			cap = cap ? 2 * cap : 8;
		}
		starts[n++] = v->start;
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
	for (i = 0; !ret && i < n; i++)
		changed += __vma_refresh_one(mm, __vma_index(mm, starts[i]), &kv, 0);
	pthread_rwlock_unlock(&mm->vma_lock);
	kview_close(&kv);
	free(starts);
	return ret ? ret : changed;
}

/*
 * uf_vma_refresh_fault - a fault at @addr, which no VMA covers: is it in a
 * mapping grown in place?  Return 1 if the table covers @addr now.
 * Locking: takes mm->vma_lock exclusive; none held.
 */
int uf_vma_refresh_fault(struct uf_mm *mm, unsigned long addr)
{
	struct kview kv;
	int changed = 0;
	size_t i;

	if (kview_open(mm, &kv))
		return 0;
	pthread_rwlock_wrlock(&mm->vma_lock);
	i = __vma_index(mm, addr);	/* the first VMA above addr */
	if (i > 0 && mm->self.vt.vmas[i - 1]->end <= addr)
		changed = __vma_refresh_one(mm, i - 1, &kv, addr);
	pthread_rwlock_unlock(&mm->vma_lock);
	kview_close(&kv);
	return changed;
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
			__vma_expected(mm, addr, addr + len);
		errno = -ret;
		return MAP_FAILED;
	}
	return m.ret;
}

/* A fork child's copy of a VMA: free its memory only (see mm.c). */
void uf_vma_free_child(struct uf_vma *vma)
{
	if (vma->obj)
		uf_object_put(vma->obj);	/* the child's path: frees only */
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

	const struct uf_vm_operations *ops;
	struct uf_vma_lists l = { NULL, NULL };
	unsigned int tries;

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
	__vma_busy(mm, vma, true);
	pthread_rwlock_unlock(&mm->vma_lock);
	ret = uf_vma_register(vma, vma->start, len);
	if (ret)
		goto fail;
	/*
	 * The kernel gave us a free range: whatever the table still shows
	 * there was unmapped or moved away by the program, and the kernel
	 * queues that event after it freed the range: wait until it is
	 * applied.  A kernel without unmap events leaves stale entries,
	 * dropped here (as after 2 s, should an event never come).
	 */
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
	__uf_as_unmap_range(&mm->self, vma->start, vma->end, &l);
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
		__vma_busy(mm, vma, false);
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
	__vma_busy(mm, vma, false);
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
	__vma_busy(mm, vma, false);
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
		__vma_busy(mm, vma, true);
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
			__vma_busy(mm, vma, true);
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
