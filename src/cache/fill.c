// SPDX-License-Identifier: MIT
/*
 * Filling the objects' cache from the store: uf_object_fill() (runs of
 * holes, one store read per span), uf_object_fill_runs() (many runs with
 * one ->readv), uf_object_insert(), and cache_insert(), the copy of the
 * store's bytes into the memfd.  The fault and pread/pwrite are
 * filemap.c's.
 *
 * The cache of an object is a memfd.  A page is filled by a uffd copy into
 * obj->cache_map, a PROT_NONE mapping of the whole memfd that nothing
 * ever touches (truncate.c):
 * the copy inserts the page into the memfd atomically and refuses a page
 * that is already present (EEXIST), so a fill never overwrites a page that
 * a program has already written.  Every mapping of the object then sees the
 * page, mapped by the kernel itself.
 *
 * Locks (the order is in lockorder.h): fills (and so the store's reads)
 * run without mm->vma_lock; they only try it around a copy straight into
 * the faulting mapping.
 * Fillers hold obj->invalidate_lock shared and check pgoff against i_size
 * under it; truncate, hole punch and reclaim hold it exclusive.  A page is
 * write-protected in every tracked mapping before it enters the cache,
 * under obj->rmap_lock shared and obj->page_lock (cache_insert()).
 */
#define _GNU_SOURCE
#include "cache/fill.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A page became present.  Locking: invalidate_lock held (any mode), and
 * obj->page_lock if @page_locked. */
void mark_present(struct uf_object *obj, uint64_t pgoff, bool page_locked)
{
	/* (the caller reserved the page's leaf: this cannot fail) */
	if (uf_pagebits_set(&obj->pages, UF_PG_PRESENT, pgoff) == 0) {
		uf_add(&obj->npresent, 1);
		if (obj->mm && obj->mm->budget_pages)
			__uf_reclaim_note_fill(obj, pgoff, page_locked);
	}
}

uint64_t uf_object_cache_pages(struct uf_object *obj)
{
	return uf_load(&obj->npresent);
}

/*
 * Read [off, off + len) from the store into @buf, zero past its end.  A
 * store may return less than asked (a socket does): ask again for the
 * rest; only a read of 0 bytes says the store ends there.
 */
static int store_read(struct uf_object *obj, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = obj->ops->read(obj->store, (char *)buf + done, len - done, off + done);

		if (n < 0)
			return (int)n;
		if ((size_t)n > len - done)
			return -EIO;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	if (done < len)
		memset((char *)buf + done, 0, len - done);
	return 0;
}

/* this thread's fault, set by uf_filemap_fault() (see fill.h) */
__thread struct fill_wake fill_wake;

/*
 * Where object page @pg goes by a uffd copy: straight into @vma when it is
 * a shared linear mapping of it (the copy fills the cache and maps the page
 * there at once, saving the faulting thread a second fault), else into
 * obj->cache_map.  *run: how many pages from @pg go to the same place.
 * Locking: mm->vma_lock held shared when @vma is given (the address must
 * stay @vma's until the copy is done).
 */
static unsigned long copy_dest(struct uf_object *obj, struct uf_vma *vma, uint64_t pg,
			       size_t n, size_t *run, unsigned int *mode)
{
	*run = n;
	*mode = UF_UFFD_DONTWAKE;
	if (vma && (vma->flags & VMA_SHARED) && !(vma->flags & VMA_PRIV_MAP) &&
	    !__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) &&
	    !vma->nl_pgoff) {
		uint64_t vend = vma->pgoff + ((vma->end - vma->start) >> PAGE_SHIFT);

		/* a watched record: a mapping shows only pages touched, so
		 * only the faulting page goes there (see ws_replay.c) */
		bool watched = pg >= vma->pgoff && pg < vend && uf_fill_watched(obj);

		if (watched && !(fill_wake.faulting && fill_wake.pgoff == pg)) {
			if (fill_wake.faulting && fill_wake.pgoff > pg &&
			    *run > fill_wake.pgoff - pg)
				*run = fill_wake.pgoff - pg;
			return (unsigned long)obj->cache_map + (pg << PAGE_SHIFT);
		}
		if (pg >= vma->pgoff && pg < vend) {
			uint64_t room = watched ? 1 : vend - pg;	/* (the fault's page) */

			if (*run > room)
				*run = room;
			if (vma->flags & VMA_REG_WP)	/* keep it write-protected */
				*mode |= UF_UFFD_WP;
			return vma->start + ((pg - vma->pgoff) << PAGE_SHIFT);
		}
		if (pg < vma->pgoff && *run > vma->pgoff - pg)
			*run = vma->pgoff - pg;
	}
	return (unsigned long)obj->cache_map + (pg << PAGE_SHIFT);
}


__thread struct uf_fill_sink *uf_fill_sink;

/*
 * Page @pg is in the memfd, but the copy of @src, the store's bytes, met
 * it there.  Present already (a fill's span holds present pages), or
 * unknown to the page state: of a writable object, a write protect just
 * made may have hidden a write there (kept, dirty); a read-only object
 * has no writer, so it is a page nobody filled: a read of a hole through
 * a mapping of the memfd no userfaultfd watches (shmem maps its zero page
 * there, into the cache).  Those bytes are not taken: the store's go over
 * them, for every mapping to see.
 * Locking: obj->invalidate_lock held shared, obj->rmap_lock shared, and
 * obj->page_lock when @tracked.
 */
static void cache_unknown(struct uf_object *obj, uint64_t pg, const char *src, bool tracked)
{
	if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pg))
		return;
	if (obj->readonly) {
		if (pwrite(obj->memfd, src, PAGE_SIZE, (off_t)(pg << PAGE_SHIFT)) == PAGE_SIZE)
			mark_present(obj, pg, tracked);
		return;
	}
	mark_present(obj, pg, tracked);
	if (tracked)
		uf_pagebits_set(&obj->pages, UF_PG_DIRTY, pg);
}

/* Pages copied at most per protect-and-copy step. */
#define INSERT_RUN	512

/* Set by uf_filemap_fault() when the table cannot catch up in time: its
 * fill then inserts what it cannot protect as dirty (cache_insert()). */
__thread bool fill_insert_dirty;

/* Drop the locks of a step of cache_insert(): obj->page_lock when
 * @tracked, obj->rmap_lock, and mm->vma_lock when @locked. */
static void insert_unlock(struct uf_object *obj, bool tracked, bool locked)
{
	if (tracked)
		pthread_mutex_unlock(&obj->page_lock);
	pthread_rwlock_unlock(&obj->rmap_lock);
	if (locked)
		pthread_rwlock_unlock(&obj->mm->vma_lock);
}

/*
 * The copy of one step of cache_insert(): @run pages of @src to object
 * page @pg, at @dst (@cdst: its place in cache_map), marked present (and
 * dirty when @unprotected).  *copied: the bytes copied.  Return 0 or the
 * copy's -errno.
 * Locking: as cache_insert()'s step: obj->rmap_lock shared, obj->page_lock
 * when @tracked, mm->vma_lock shared when @dst is in @vma.
 */
static int insert_copy(struct uf_object *obj, uint64_t pg, const char *src, size_t run,
		       struct uf_vma *vma, unsigned long dst, unsigned long cdst,
		       unsigned int mode, bool tracked, bool unprotected, size_t *copied)
{
	size_t k;
	int ret;

	if (vma && vma == fill_wake.vma && fill_wake.pgoff - pg < run &&
	    dst != cdst && !(mode & UF_UFFD_WP) && !(vma->prot & PROT_WRITE))
		mode &= ~UF_UFFD_DONTWAKE;
	/* pending before a thread can map them (a watched record) */
	uf_fill_filled(obj, pg, run, fill_wake.faulting);
	if (dst == cdst)
		ret = uf_uffd_copy(&obj->mm->uffd, dst, src, run << PAGE_SHIFT, mode, copied);
	else	/* -EAGAIN while the table may be behind the kernel */
		ret = uf_uffd_copy_mapped(&obj->mm->uffd, dst, src, run << PAGE_SHIFT, mode,
					  copied);
	if (!(mode & UF_UFFD_DONTWAKE) && *copied >> PAGE_SHIFT > fill_wake.pgoff - pg)
		fill_wake.woken = true;
	/* present before rmap_lock goes: see uf_vma_collect_dirty() */
	for (k = 0; k < *copied >> PAGE_SHIFT; k++) {
		mark_present(obj, pg + k, tracked);
		if (unprotected)
			uf_pagebits_set(&obj->pages, UF_PG_DIRTY, pg + k);
	}
	return ret;
}

/*
 * Copy @npages pages from @buf into the cache at @pgoff, skipping pages
 * that are present already.  Return the number newly inserted, or -errno.
 *
 * A page must be write-protected in every tracked mapping of the object
 * before it is in the cache (__uf_object_protect_holes): so each step
 * holds obj->rmap_lock shared (no mapping appears or moves meanwhile) and,
 * while the object has tracked mappings, obj->page_lock from the check
 * that its pages are holes through the copy to their present bits (a page
 * another fill put in meanwhile may be written already, and protecting
 * it again would lose that write).  When the protect cannot be made now
 * (the program changed its mappings, the table does not show it yet), a
 * fill for a fault (@vma) inserts nothing and returns -EAGAIN, for the
 * fault to be served again once the table is current; any other caller,
 * or a fault that could not wait for the table, inserts the pages dirty
 * (no write lost; one written back at worst).
 *
 * Locking: obj->invalidate_lock held shared.  mm->vma_lock is only tried
 * (shared) around a copy straight into @vma, never waited for: it is
 * outside the invalidate lock, and a fill must not wait for a map or
 * unmap (nor they for a store read); when it is busy the page goes
 * through cache_map.  Takes obj->rmap_lock shared, obj->page_lock.
 */
static long cache_insert(struct uf_object *obj, uint64_t pgoff, const char *buf, size_t npages,
			 struct uf_vma *vma)
{
	/* (a fork child's mapping is another process's: through cache_map) */
	bool direct = vma != NULL && !uf_vma_remote(vma);
	size_t i = 0;
	long added = 0;

	while (i < npages) {
		size_t copied = 0, run, k, at = i;
		unsigned long dst, cdst;
		unsigned int mode;
		bool tracked, unprotected = false;
		int ret = 0;

		bool locked = direct && pthread_rwlock_tryrdlock(&obj->mm->vma_lock) == 0;

		dst = copy_dest(obj, locked ? vma : NULL, pgoff + i, npages - i, &run, &mode);
		cdst = (unsigned long)obj->cache_map + ((pgoff + i) << PAGE_SHIFT);
		if (run > INSERT_RUN)
			run = INSERT_RUN;
		pthread_rwlock_rdlock(&obj->rmap_lock);
		tracked = __uf_object_tracked(obj);
		if (tracked) {
			pthread_mutex_lock(&obj->page_lock);
			for (k = 0; k < run && !uf_pagebits_test(&obj->pages, UF_PG_PRESENT,
								 pgoff + i + k); k++)
				;
			run = k;
			if (run)
				ret = __uf_object_protect_holes(obj, pgoff + i, run,
								dst != cdst ? vma : NULL);
			if (ret == -EAGAIN && vma && !fill_insert_dirty) {
				insert_unlock(obj, tracked, locked);
				__uf_huge_filled(obj, pgoff, i);
				return -EAGAIN;
			}
			unprotected = ret != 0;
		}
		if (!run) {		/* filled meanwhile */
			insert_unlock(obj, tracked, locked);
			i++;
			continue;
		}
		ret = insert_copy(obj, pgoff + i, buf + (i << PAGE_SHIFT), run, vma, dst, cdst,
				  mode, tracked, unprotected, &copied);
		added += copied >> PAGE_SHIFT;
		i += copied >> PAGE_SHIFT;
		if (ret == -EEXIST && dst == cdst)
			cache_unknown(obj, pgoff + i, buf + (i << PAGE_SHIFT), tracked);
		insert_unlock(obj, tracked, locked);
		if (copied && uf_fill_sink && uf_fill_sink->obj == obj)
			uf_fill_sink->fn(uf_fill_sink, pgoff + at, buf + (at << PAGE_SHIFT),
					 copied >> PAGE_SHIFT);
		if (ret && dst != cdst) {
			/*
			 * The mapping refused: going away, moved or unmapped by
			 * the program with the table not yet told (EAGAIN), or
			 * a marker holds the PTE (EEXIST then says nothing of
			 * the cache).  Retry through cache_map, whose answer is
			 * the cache's.
			 */
			direct = false;
			continue;
		}
		direct = vma != NULL && !uf_vma_remote(vma);
		if (ret == -EEXIST) {
			/* another fill's pages (a huge page two threads fill
			 * at once): past all it has marked present, not a
			 * failing copy per page of them */
			for (i++; i < npages && !uf_protocol_broken() &&
				  uf_pagebits_test(&obj->pages, UF_PG_PRESENT, pgoff + i); i++)
				;
		} else if (ret) {
			__uf_huge_filled(obj, pgoff, i);
			return ret;
		}
	}
	__uf_huge_filled(obj, pgoff, npages);
	return added;
}

/*
 * Holes of a window that lie at most FILL_GAP present pages apart are read
 * from the store in one read (the present pages' bytes are read and
 * dropped): a remote store pays a round trip per read, far more than a few
 * pages' transfer, and a window of random faults' neighbours is mostly
 * holes with a present page here and there (measured: two reads per
 * fault on a Redis object, ufault-bench --store cold-rand).  A span whose
 * read fails is read again run by run: the error may be a present page's,
 * which the fill does not need.
 */
#define FILL_GAP	8

/*
 * Charge the holes of [*first, *last) against the cache budget
 * (uf_cache_charge()), shrinking the fill to what was granted: to @must
 * alone when it is a hole, else to the first pages up to the grant.
 * Return the pages charged, or -ENOBUFS when the pages that must be
 * filled do not fit.
 * Locking: obj->invalidate_lock held shared.
 */
static long fill_charge(struct uf_object *obj, uint64_t *first, uint64_t *last, uint64_t must)
{
	bool broken = uf_protocol_broken();
	size_t holes = 0, need = 0;
	uint64_t p;
	long granted;

	if (!obj->mm->budget_pages)
		return 0;
	for (p = *first; p < *last; p++)
		if (broken || !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, p))
			holes++;
	if (must == UF_FILL_ALL)
		need = holes;
	else if (must < UF_FILL_ANY && must >= *first && must < *last &&
		 !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, must))
		need = 1;
	granted = uf_cache_charge(obj->mm, holes, need);
	if (granted < 0 || (size_t)granted == holes)
		return granted;
	if (need) {
		*first = must;
		*last = must + 1;
		uf_cache_uncharge(obj->mm, (size_t)granted - 1);
		return 1;
	}
	for (p = *first, holes = 0; p < *last && holes < (size_t)granted; p++)
		if (broken || !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, p))
			holes++;
	*last = p;
	return granted;
}

/*
 * The span of a fill from the hole @p: this hole and the holes after it
 * before @last, up to a gap of @gap present pages (@broken: every page
 * counts as a hole).  Return its end; *holes: the holes in it.
 * Locking: obj->invalidate_lock held shared.
 */
static uint64_t fill_span(struct uf_object *obj, uint64_t p, uint64_t last, uint64_t gap,
			  bool broken, uint64_t *holes)
{
	uint64_t end, q;

	/* the span: this hole and the holes after it, up to a gap of
	 * FILL_GAP present pages (broken on purpose: the whole window
	 * is read from the store and the copy skips what is present) */
	for (end = q = p; q < last; q++) {
		if (broken || !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q)) {
			end = q + 1;
			(*holes)++;
		} else if (q - end >= gap) {
			break;
		}
	}
	return end;
}

/*
 * Read the span of @run pages from @p into @buf (the object is @size
 * bytes: the rest of its last page reads zero), counting the pages read
 * for the mm and @vma.  Return 0 or the store's -errno.
 * Locking: obj->invalidate_lock held shared.
 */
static int fill_span_read(struct uf_object *obj, char *buf, uint64_t p, uint64_t run,
			  uint64_t size, struct uf_vma *vma, bool broken)
{
	uint64_t off = p << PAGE_SHIFT;
	size_t len = run << PAGE_SHIFT;
	int ret;

	if (off + len > size)
		len = size - off;	/* the rest of the page reads zero */
	ret = store_read(obj, buf, len, off);
	if (broken)
		usleep(200);	/* widen the window the lock closes */
	if (!ret) {
		if (len < run << PAGE_SHIFT)
			memset(buf + len, 0, (run << PAGE_SHIFT) - len);
		uf_add(&obj->mm->stats.pages_read, run);
		if (vma)
			uf_add(&vma->stats.pages_read, run);
	}
	return ret;
}

/*
 * @added pages of a fill are counted present: give back their part of the
 * fill's grant *@charged at once, not when the whole fill ends, so that
 * cached + charged counts each page once and a fill beside this one is
 * granted the room that is really left.
 */
static void fill_uncharge_added(struct uf_object *obj, long *charged, long added)
{
	long n = added < *charged ? added : *charged;

	if (n > 0) {
		uf_cache_uncharge(obj->mm, (size_t)n);
		*charged -= n;
	}
}

/*
 * Insert the holes of the span [p, end) read into @buf, never over a
 * present page; @must, @filled, @major, @vma and @broken as
 * uf_object_fill()'s; *@charged: what is left of the fill's grant.
 * Return 0 or cache_insert()'s -errno.
 * Locking: obj->invalidate_lock held shared.
 */
int fill_span_insert(struct uf_object *obj, uint64_t p, uint64_t end, const char *buf,
		     uint64_t must, size_t *filled, bool *major, struct uf_vma *vma,
		     bool broken, long *charged)
{
	uint64_t q, h;
	long added;
	int ret = 0;

	/* insert the span's holes, never over a present page */
	for (q = p; !ret && q < end; q = h) {
		if (!broken && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q)) {
			h = q + 1;
			continue;
		}
		for (h = q; h < end && (broken ||
		     !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, h)); h++)
			;
		added = cache_insert(obj, q, buf + ((q - p) << PAGE_SHIFT), h - q, vma);
		if (added < 0)
			ret = (int)added;
		else if (filled)
			*filled += (size_t)added;
		fill_uncharge_added(obj, charged, added);
		if (added > 0 && major && must >= q && must < h)
			*major = true;
	}
	return ret;
}

/*
 * The early sink's turn (struct uf_fill_sink) for the span [@p, @p + @run)
 * of a read-only object's holes, read into @buf (*@bounce's): the sink
 * gets the store's bytes before the cache does.  Where it defers and took
 * the whole span, and the span is the whole fill (@whole), the copy into
 * the cache goes to the insert thread with the buffer and the fill's
 * charge *@charged (insert.c): true, the span is done.  Else false, and
 * *@it is the span pending (or NULL) until the caller's insert ends it.
 * Locking: obj->invalidate_lock held shared.
 */
static bool fill_early(struct uf_object *obj, uint64_t p, uint64_t run, bool whole, char *buf,
		       struct uf_bounce **bounce, long *charged, struct uf_insert **it)
{
	struct uf_fill_sink *sink = uf_fill_sink;

	*it = sink->defer && whole ? uf_insert_begin(obj, p, run) : NULL;
	sink->taken = false;
	sink->fn(sink, p, buf, run);
	if (*it && sink->taken && uf_insert_queue(*it, bounce, charged)) {
		*it = NULL;
		return true;
	}
	return false;
}

/*
 * uf_object_fill - make pages of [first, first + n) present in the cache,
 * reading holes from the store in spans (above) and copying in only the
 * holes: a page present is never overwritten.  Pages past i_size are not
 * filled.
 * @must: the page that has to end up present, or UF_FILL_ALL (every
 *	page), or UF_FILL_ANY (none: a store error only shortens the fill).
 * @filled: set to the pages this call inserted.
 * @major: set when @must was inserted by this call.
 * @vma: the mapping faulted on, for its statistics, or NULL.
 *
 * Return: 0, -ERANGE when @must is past i_size, -ENOBUFS when the cache
 * budget has no room for the pages that must be filled, or the store's error for
 * a page that must be filled.
 * Locking: obj->invalidate_lock held shared.
 */
int uf_object_fill(struct uf_object *obj, uint64_t first, size_t n, uint64_t must,
		   size_t *filled, bool *major, struct uf_vma *vma)
{
	uint64_t size = __atomic_load_n(&obj->size, __ATOMIC_ACQUIRE);
	uint64_t eof = size_pages(size), p, last;
	bool broken = uf_protocol_broken();
	uint64_t exact_end = first;	/* before it, a span is one run of holes */
	struct uf_insert *it = NULL;
	bool deferred = false;		/* @must is the insert thread's */
	struct uf_bounce *bounce;
	long charged;
	int err = 0;
	char *buf;

	if (must < UF_FILL_ANY && must >= eof)
		return -ERANGE;
	last = first + n < eof ? first + n : eof;
	if (first >= last)
		return 0;
	uf_insert_wait(obj, first, last);	/* a span the insert thread has */
	if (uf_pagebits_reserve(&obj->pages, first, last - first))
		return -ENOMEM;
	charged = fill_charge(obj, &first, &last, must);
	if (charged < 0)
		return (int)charged;
	bounce = uf_bounce_get((last - first) << PAGE_SHIFT, (void **)&buf);
	if (!bounce) {
		uf_cache_uncharge(obj->mm, (size_t)charged);
		return -ENOMEM;
	}

	p = first;
	while (p < last) {
		uint64_t run, end, holes = 0;
		uint64_t gap = p < exact_end ? 0 : FILL_GAP;
		int ret;

		if (!broken && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, p)) {
			p++;
			continue;
		}
		end = fill_span(obj, p, last, gap, broken, &holes);
		run = end - p;
		ret = fill_span_read(obj, buf, p, run, size, vma, broken);
		if (ret && holes < run) {
			/* the error may be a cached page's, which needs no read:
			 * read this span's runs of holes one by one */
			exact_end = end;
			continue;
		}
		if (!ret && holes == run && !broken && obj->readonly && uf_fill_sink &&
		    uf_fill_sink->obj == obj && uf_fill_sink->early &&
		    fill_early(obj, p, run, p == first && end == last, buf, &bounce, &charged,
			       &it)) {
			/* (see cache.h) the insert thread's now */
			if (filled)
				*filled += run;
			deferred = must >= p && must < end;
			if (major && deferred)
				*major = true;
			p = end;
			continue;
		}
		if (!ret)
			ret = fill_span_insert(obj, p, end, buf, must, filled, major, vma,
					       broken, &charged);
		if (it) {
			uf_insert_end(it);
			it = NULL;
		}
		if (ret && (must == UF_FILL_ALL || (must >= p && must < p + run))) {
			if (run > 1 && must != UF_FILL_ALL) {
				/* retry the one page that matters */
				first = p = must;
				last = must + 1;
				continue;
			}
			err = ret;
			break;
		}
		p += run;
	}
	uf_bounce_put(bounce);
	uf_cache_uncharge(obj->mm, (size_t)charged);	/* what was not added */
	if (!err && must < UF_FILL_ANY && !(major && *major) && !deferred &&
	    !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, must))
		err = -EIO;
	return err;
}

/* The batched read of @obj's store: its ->readv, or the file store's own
 * (preadv over close extents), or NULL.  Locking: none. */
static int (*store_readv(struct uf_object *obj))(void *, const struct uf_store_iov *, size_t)
{
	int (*readv)(void *, const struct uf_store_iov *, size_t) =
		__atomic_load_n(&obj->readv, __ATOMIC_ACQUIRE);

	if (!readv && obj->ops == &uf_file_store_ops)
		readv = uf_file_store_readv;
	return readv;
}

bool uf_object_batched_reads(struct uf_object *obj)
{
	return store_readv(obj) != NULL;
}

/* A run of holes of a batch: @pg, @n pages; @ord: the first of the
 * caller's runs it holds a page of (its place in recorded order). */
struct fill_seg {
	uint64_t pg, n;
	size_t ord;
};

static int seg_by_page(const void *a, const void *b)
{
	const struct fill_seg *x = a, *y = b;

	return x->pg < y->pg ? -1 : x->pg > y->pg;
}

static int seg_by_ord(const void *a, const void *b)
{
	const struct fill_seg *x = a, *y = b;

	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/*
 * The holes of @n runs (at most UF_READV_PAGES pages, under @eof) into
 * @seg, in the runs' order.  Return how many, or -ENOMEM.
 * Locking: obj->invalidate_lock held shared.
 */
static long fill_holes(struct uf_object *obj, const struct uf_ws_run *runs, size_t n,
		       uint64_t eof, struct fill_seg *seg, uint64_t *total)
{
	size_t nseg = 0, i;
	uint64_t p;

	*total = 0;
	for (i = 0; i < n && *total < UF_READV_PAGES; i++) {
		uint64_t end = runs[i].start + runs[i].len < eof ? runs[i].start + runs[i].len : eof;

		if (runs[i].start >= end)
			continue;
		if (uf_pagebits_reserve(&obj->pages, runs[i].start, end - runs[i].start))
			return -ENOMEM;
		for (p = runs[i].start; p < end && *total < UF_READV_PAGES; p++) {
			if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, p))
				continue;
			if (nseg && seg[nseg - 1].pg + seg[nseg - 1].n == p)
				seg[nseg - 1].n++;
			else
				seg[nseg++] = (struct fill_seg){ p, 1, i };
			(*total)++;
		}
	}
	return (long)nseg;
}

/*
 * Join the runs of holes @seg that touch in the object into contiguous
 * groups (one read extent and one copy each), in recorded order: a group
 * takes the place of its first run.  Return how many groups.
 */
static size_t fill_group(struct fill_seg *seg, size_t nseg)
{
	size_t i, k = 0;

	qsort(seg, nseg, sizeof(*seg), seg_by_page);
	for (i = 0; i < nseg; i++) {
		if (k && seg[k - 1].pg + seg[k - 1].n == seg[i].pg) {
			seg[k - 1].n += seg[i].n;
			if (seg[i].ord < seg[k - 1].ord)
				seg[k - 1].ord = seg[i].ord;
		} else {
			seg[k++] = seg[i];
		}
	}
	return k;
}

/*
 * The extents of the groups @seg (fill_group(), in page order) into @iov,
 * each read straight into its place in @buf; each group's pg becomes its
 * extent's index.  Bytes past the object's @size read zero.
 */
static void fill_extents(struct fill_seg *seg, size_t niov, char *buf, uint64_t size,
			 struct uf_store_iov *iov)
{
	uint64_t at = 0;
	size_t i;

	for (i = 0; i < niov; i++) {
		iov[i].buf = buf + (at << PAGE_SHIFT);
		iov[i].off = seg[i].pg << PAGE_SHIFT;
		iov[i].len = (size_t)seg[i].n << PAGE_SHIFT;
		at += seg[i].n;
		seg[i].pg = (uint64_t)i;	/* (now: its extent) */
		if (iov[i].off + iov[i].len > size) {	/* the object's last page */
			size_t part = (size_t)(size - iov[i].off);

			memset((char *)iov[i].buf + part, 0, iov[i].len - part);
			iov[i].len = part;
		}
	}
}

/* Read extents @iov with @readv, counting @total pages read. */
static int fill_readv(struct uf_object *obj,
		      int (*readv)(void *, const struct uf_store_iov *, size_t),
		      const struct uf_store_iov *iov, size_t niov, uint64_t total,
		      struct uf_vma *vma)
{
	int ret = readv(obj->store, iov, niov);

	if (!ret) {
		uf_add(&obj->mm->stats.pages_read, total);
		if (vma)
			uf_add(&vma->stats.pages_read, total);
	}
	return ret;
}

/*
 * uf_object_fill_runs - fill the holes of @n runs of pages (at most
 * UF_READV_PAGES pages in all) with one batched read of the store (its
 * ->readv, uf_object_set_readv(); a file store's preadv over close
 * extents), then copy them in as uf_object_fill() does: never over a
 * present page, nothing past i_size, one copy per group of holes that
 * touch in the object, the groups in the runs' order.  Under a cache
 * budget only the holes it grants are read (the first ones).
 * @filled: increased by the pages this call inserted.
 * @vma: a mapping to copy straight into where it shows the pages, or NULL.
 *
 * Return: 0, -ENOMEM, -EOPNOTSUPP (the store reads no batches), or the
 * store's error (nothing was inserted then).
 * Locking: obj->invalidate_lock held shared.
 */
int uf_object_fill_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n,
			size_t *filled, struct uf_vma *vma)
{
	int (*readv)(void *, const struct uf_store_iov *, size_t) = store_readv(obj);
	uint64_t size = __atomic_load_n(&obj->size, __ATOMIC_ACQUIRE);
	struct fill_seg seg[UF_READV_PAGES];
	struct uf_store_iov iov[UF_READV_PAGES];
	uint64_t total;
	struct uf_bounce *bounce;
	size_t niov, i;
	long charged, nseg;
	char *buf;
	int ret;

	if (!readv)
		return -EOPNOTSUPP;
	nseg = fill_holes(obj, runs, n, size_pages(size), seg, &total);
	if (nseg <= 0)
		return (int)nseg;
	charged = uf_cache_charge(obj->mm, total, 0);
	if (charged <= 0)
		return charged < 0 ? (int)charged : 0;
	if ((uint64_t)charged < total) {
		/* the first holes, up to the grant */
		uint64_t keep = (uint64_t)charged;

		for (i = 0; i < (size_t)nseg && keep; i++) {
			if (seg[i].n > keep)
				seg[i].n = keep;
			keep -= seg[i].n;
		}
		nseg = (long)i;
		total = (uint64_t)charged;
	}
	niov = fill_group(seg, (size_t)nseg);
	bounce = uf_bounce_get(total << PAGE_SHIFT, (void **)&buf);
	if (!bounce) {
		uf_cache_uncharge(obj->mm, (size_t)charged);
		return -ENOMEM;
	}
	fill_extents(seg, niov, buf, size, iov);
	ret = fill_readv(obj, readv, iov, niov, total, vma);
	qsort(seg, niov, sizeof(*seg), seg_by_ord);
	for (i = 0; !ret && i < niov; i++) {
		const struct uf_store_iov *v = &iov[seg[i].pg];
		size_t pages = (v->len + PAGE_SIZE - 1) >> PAGE_SHIFT;
		long added = cache_insert(obj, v->off >> PAGE_SHIFT, v->buf, pages, vma);

		if (added > 0 && filled)
			*filled += (size_t)added;
		fill_uncharge_added(obj, &charged, added);
		/* (an error leaves holes, which their own faults fill) */
	}
	uf_bounce_put(bounce);
	uf_cache_uncharge(obj->mm, (size_t)charged);	/* what was not added */
	return ret;
}

/*
 * uf_object_read_runs - read the holes of @n runs of a read-only object
 * (at most UF_READV_PAGES pages in all) with one batched read of the
 * store, as uf_object_fill_runs() does, into a batch of the caller's:
 * nothing enters the cache (nor is charged to its budget) until
 * uf_object_insert_read().  The bytes of a read-only object's store are
 * its bytes for good: another process can be given them first.
 * @buf: where the bytes go: room for every page of the runs.
 * *@bp: the batch, its groups of holes that touch in the object in the
 * runs' order (NULL: no holes), pointing into @buf.
 *
 * Return: 0, -ENOMEM, -EOPNOTSUPP (the store reads no batches, or the
 * object is writable), or the store's error (no batch then).
 * Locking: obj->invalidate_lock held shared.
 */
int uf_object_read_runs(struct uf_object *obj, const struct uf_ws_run *runs, size_t n,
			char *buf, struct uf_fill_batch **bp)
{
	int (*readv)(void *, const struct uf_store_iov *, size_t) = store_readv(obj);
	uint64_t size = __atomic_load_n(&obj->size, __ATOMIC_ACQUIRE);
	struct fill_seg seg[UF_READV_PAGES];
	struct uf_store_iov iov[UF_READV_PAGES];
	struct uf_fill_batch *b;
	uint64_t total;
	size_t niov, i;
	long nseg;
	int ret;

	*bp = NULL;
	if (!readv || !obj->readonly)
		return -EOPNOTSUPP;
	nseg = fill_holes(obj, runs, n, size_pages(size), seg, &total);
	if (nseg <= 0)
		return (int)nseg;
	niov = fill_group(seg, (size_t)nseg);
	b = malloc(sizeof(*b) + niov * sizeof(b->iov[0]));
	if (!b)
		return -ENOMEM;
	fill_extents(seg, niov, buf, size, iov);
	ret = fill_readv(obj, readv, iov, niov, total, NULL);
	if (ret) {
		free(b);
		return ret;
	}
	qsort(seg, niov, sizeof(*seg), seg_by_ord);
	for (i = 0; i < niov; i++)
		b->iov[i] = iov[seg[i].pg];
	b->niov = niov;
	b->pages = total;
	b->next = NULL;
	*bp = b;
	return 0;
}

/*
 * uf_object_insert_read - insert the pages of batch @b that are holes
 * now into the cache, as a fill does: charged to the budget (the first
 * ones, as far as it grants), never over a present page, nothing past
 * i_size.  @filled: increased by the pages inserted.
 * Locking: obj->invalidate_lock held shared.
 */
void uf_object_insert_read(struct uf_object *obj, const struct uf_fill_batch *b, size_t *filled)
{
	uint64_t eof = size_pages(__atomic_load_n(&obj->size, __ATOMIC_ACQUIRE));
	size_t holes = 0, i;
	uint64_t q, h, end;
	long charged;

	for (i = 0; i < b->niov; i++) {
		q = b->iov[i].off >> PAGE_SHIFT;
		end = q + ((b->iov[i].len + PAGE_SIZE - 1) >> PAGE_SHIFT);
		if (end > eof)
			end = eof;
		if (q < end && uf_pagebits_reserve(&obj->pages, q, end - q))
			return;
		for (; q < end; q++)
			holes += !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q);
	}
	charged = uf_cache_charge(obj->mm, holes, 0);
	for (i = 0; charged > 0 && i < b->niov; i++) {
		uint64_t first = b->iov[i].off >> PAGE_SHIFT;

		end = first + ((b->iov[i].len + PAGE_SIZE - 1) >> PAGE_SHIFT);
		if (end > eof)
			end = eof;
		for (q = first; charged > 0 && q < end; q = h) {
			long added;

			if (uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q)) {
				h = q + 1;
				continue;
			}
			for (h = q; h < end && h - q < (uint64_t)charged &&
				    !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, h); h++)
				;
			added = cache_insert(obj, q, (const char *)b->iov[i].buf +
					     ((q - first) << PAGE_SHIFT), (size_t)(h - q), NULL);
			if (added > 0 && filled)
				*filled += (size_t)added;
			fill_uncharge_added(obj, &charged, added);
			if (added < 0)
				break;	/* (holes left, which their own faults fill) */
		}
	}
	if (charged > 0)
		uf_cache_uncharge(obj->mm, (size_t)charged);	/* what was not added */
}

/*
 * Insert one page of bytes given by a ->fault method at @pgoff.  Bytes past
 * i_size in the last page are zeroed.  Return 0, -EEXIST, -EFAULT (past
 * EOF), or -errno.
 */
int uf_object_insert(struct uf_object *obj, uint64_t pgoff, const void *src)
{
	struct uf_bounce *bounce = NULL;
	uint64_t size;
	char *buf;
	long ret;

	pthread_rwlock_rdlock(&obj->invalidate_lock);
	size = obj->size;
	if (pgoff >= size_pages(size)) {
		ret = -EFAULT;
		goto out;
	}
	bounce = uf_bounce_get(PAGE_SIZE, (void **)&buf);
	if (!bounce || uf_pagebits_reserve(&obj->pages, pgoff, 1)) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(buf, src, PAGE_SIZE);
	if ((pgoff + 1) << PAGE_SHIFT > size)
		memset(buf + (size & (PAGE_SIZE - 1)), 0, PAGE_SIZE - (size & (PAGE_SIZE - 1)));
	ret = cache_insert(obj, pgoff, buf, 1, NULL);
	if (ret == 0)
		ret = -EEXIST;
	else if (ret > 0)
		ret = 0;
	if (!ret)
		uf_fill_note(obj, pgoff, 1, false);	/* a ->fault's own page */
out:
	uf_bounce_put(bounce);
	pthread_rwlock_unlock(&obj->invalidate_lock);
	return (int)ret;
}
