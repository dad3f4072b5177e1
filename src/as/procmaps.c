// SPDX-License-Identifier: MIT
/*
 * What the kernel shows of the program's own mappings, from
 * /proc/self/maps (or PROCMAP_QUERY): what raises no userfaultfd event --
 * a mapping grown in place by mremap(), write permission added by the
 * system's mprotect() -- is read here (uf_vma_refresh) when a fault lands
 * outside every VMA and before each sync; and an unmap event that came
 * after the range was mapped again is told from one that did not.
 *
 * Locks (the order is in lockorder.h): mm->vma_lock exclusive to change
 * the table, obj->rmap_lock exclusive where a VMA on obj->vmas changes.
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
		__uf_self_mark_dirty(v, old_end, end);
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
	__uf_self_mark_dirty(v, v->start, v->end);
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

int uf_kview_open(struct uf_mm *mm, struct kview *kv)
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

void uf_kview_close(struct kview *kv)
{
	if (kv->fd >= 0)
		close(kv->fd);
	free(kv->all);
}

_Static_assert(sizeof(struct kview) <= UF_KVIEW_SIZE, "uf_vma_event's buffer");

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
void __uf_vma_unmap_event(struct uf_mm *mm, unsigned long s, unsigned long e,
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

	ret = uf_kview_open(mm, &kv);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&mm->vma_lock);
	/* from the VMA before @start too: it may have grown into the range */
	i = __vma_index(mm, start);
	for (i = i ? i - 1 : 0; i < mm->self.vt.n && mm->self.vt.vmas[i]->start < end; i++)
		changed += __vma_refresh_one(mm, i, &kv, 0);
	pthread_rwlock_unlock(&mm->vma_lock);
	uf_kview_close(&kv);
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
	ret = uf_kview_open(mm, &kv);
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
	uf_kview_close(&kv);
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

	if (uf_kview_open(mm, &kv))
		return 0;
	pthread_rwlock_wrlock(&mm->vma_lock);
	i = __vma_index(mm, addr);	/* the first VMA above addr */
	if (i > 0 && mm->self.vt.vmas[i - 1]->end <= addr)
		changed = __vma_refresh_one(mm, i - 1, &kv, addr);
	pthread_rwlock_unlock(&mm->vma_lock);
	uf_kview_close(&kv);
	return changed;
}
