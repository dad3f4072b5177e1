// SPDX-License-Identifier: MIT
/*
 * Objects' page cache: uf_filemap_fault(), uf_object_pread()/pwrite(),
 * and the cache handed on to the next process (uf_object_cache_fd(),
 * uf_object_adopt_cache()).
 * Filling the cache from the store is fill.c's, readahead readahead.c's,
 * object lifetime object.c's.
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

/* How long a fill waits for room in a full cache: ROOM_TRIES reclaims,
 * ROOM_WAIT_US apart (pages being filled leave room within a fill's time;
 * dirty pages the store refuses may never). */
#define ROOM_TRIES	20
#define ROOM_WAIT_US	10000
/* How long a fault waits for the VMA table to show the program's changes
 * before its fill inserts pages it cannot write-protect as dirty. */
#define FILL_BEHIND_TRIES	20
#define FILL_BEHIND_WAIT_US	200

/*
 * Before holes [first, first + n) enter the cache other than by a fill's
 * copy (pwrite(), a removed page's zeros), protect them in every tracked
 * mapping, as cache_insert() does; all of [first, first + n) with @all.
 * The pages are marked dirty once written, so a protect that cannot be
 * made now (-EAGAIN, see __uf_object_protect_holes) loses no write: at
 * worst the page is written back once more.  Return obj->rmap_gen as it
 * was, for the caller to see whether a mapping began tracking since.
 * Locking: obj->invalidate_lock held shared; takes obj->rmap_lock shared,
 * obj->page_lock.
 */
static uint64_t protect_holes(struct uf_object *obj, uint64_t first, uint64_t n, bool all)
{
	uint64_t gen, p, q, end = first + n;

	pthread_rwlock_rdlock(&obj->rmap_lock);
	gen = obj->rmap_gen;
	if (__uf_object_tracked(obj)) {
		pthread_mutex_lock(&obj->page_lock);
		for (p = first; p < end; p = q) {
			if (!all && uf_pagebits_test(&obj->pages, UF_PG_PRESENT, p)) {
				q = p + 1;
				continue;
			}
			for (q = p + 1; q < end && (all ||
			     !uf_pagebits_test(&obj->pages, UF_PG_PRESENT, q)); q++)
				;
			(void)__uf_object_protect_holes(obj, p, q - p, NULL);
		}
		pthread_mutex_unlock(&obj->page_lock);
	}
	pthread_rwlock_unlock(&obj->rmap_lock);
	return gen;
}


/* ------------------------------------------------------------------ */
/* ->fault for object mappings                                         */
/* ------------------------------------------------------------------ */

/*
 * A missing-page fault on @pgoff, which the page state says is present:
 * unless a fill put it there since the fault was raised, the program took
 * it out of the memfd behind ufault's back -- madvise(MADV_REMOVE) on a
 * shared mapping, which punches the cache as it would punch a file (the
 * kernel's remove event does not tell it from MADV_DONTNEED, which leaves
 * the cache alone).  The object sees a punch of that page, as a file
 * would: it reads zero from now on, and the zeros reach the store on the
 * next sync (dirty).  Without this the fill would skip the page, and the
 * access would fault again for ever.  A page really present (or swapped
 * out) is left alone: the copy refuses it.
 * Locking: obj->invalidate_lock held shared.
 */
static int fill_removed(struct uf_object *obj, uint64_t pgoff)
{
	static const char zeros[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));
	unsigned long dst = (unsigned long)obj->cache_map + (pgoff << PAGE_SHIFT);
	unsigned char vec = 0;
	size_t copied = 0;
	int ret;

	if (mincore((void *)dst, PAGE_SIZE, &vec) == 0 && (vec & 1))
		return 0;
	protect_holes(obj, pgoff, 1, true);
	ret = uf_uffd_copy(&obj->mm->uffd, dst, zeros, PAGE_SIZE, UF_UFFD_DONTWAKE, &copied);
	if (copied)
		uf_pagebits_set(&obj->pages, UF_PG_DIRTY, pgoff);
	return ret == -EEXIST ? 0 : ret;
}


/*
 * The fill of a fault on fdata->pgoff of @vma: window @ra (the fault's
 * page first), *@filled pages inserted, *@major when the page was.  It
 * waits for room (a full cache) and for the table to catch up (a mapping
 * that could not be protected), as below.  Return uf_object_fill()'s.
 * Locking: none held; takes obj->invalidate_lock shared.
 */
static int fault_fill(struct uf_vma *vma, struct uf_object *obj, struct uf_fault_data *fdata,
		      const struct uf_ra_req *ra, size_t *filled, bool *major)
{
	int ret, tries, behind = 0;

	/*
	 * Broken on purpose with UFAULT_BREAK_PROTOCOL (for ufault-stress):
	 * without the invalidate lock, a truncate can run between the store
	 * read and the insert, and the insert brings old bytes back.
	 */
	/* no mm->vma_lock: the store's read must not hold up map and unmap
	 * (the VMA is kept alive by the caller's reference) */
	for (tries = 0;; tries++) {
		/* direct reclaim: room for the window under the budget */
		long freed = uf_reclaim(vma->mm, ra->n);

		if (!uf_protocol_broken())
			pthread_rwlock_rdlock(&obj->invalidate_lock);
		/* one store read per run of holes, one wake (by the caller, or
		 * by the copy of a lone page straight into the faulting mapping) */
		if (ra->n == 1 && !ra->bg_n)
			fill_wake.vma = vma;
		fill_wake.pgoff = fdata->pgoff;
		fill_wake.faulting = true;
		fill_wake.woken = false;
		ret = uf_object_fill(obj, ra->first, ra->n, fdata->pgoff, filled, major, vma);
		fill_wake.vma = NULL;
		fill_wake.faulting = false;
		if (fill_wake.woken)
			fdata->flags |= UF_FAULT_FLAG_WOKEN;
		if (!ret && !*major && !uf_protocol_broken())
			ret = fill_removed(obj, fdata->pgoff);
		if (!uf_protocol_broken())
			pthread_rwlock_unlock(&obj->invalidate_lock);
		/*
		 * A mapping could not be write-protected before the copy: the
		 * program changed its mappings (or ufault zapped, reclaiming),
		 * and the table does not show it yet.  Apply the events and
		 * serve again, but never wait for vma_lock (a holder may wait
		 * for this very fault): when it stays busy, insert dirty.
		 */
		if (ret == -EAGAIN) {
			if (++behind > FILL_BEHIND_TRIES) {
				fill_insert_dirty = true;
			} else if (pthread_rwlock_trywrlock(&vma->mm->vma_lock) == 0) {
				pthread_rwlock_unlock(&vma->mm->vma_lock);
				uf_uffd_settle(&vma->mm->uffd);
			} else {
				usleep(FILL_BEHIND_WAIT_US);
			}
			tries--;
			continue;
		}
		/* no room even for this page: the cache is full of pages that
		 * cannot leave yet: wait a little for them (an object busy
		 * with a fill or a pread), then fail the access; at once when
		 * they are dirty and the store refuses them */
		if (ret != -ENOBUFS || tries == ROOM_TRIES || freed < 0)
			break;
		usleep(ROOM_WAIT_US);
	}
	fill_insert_dirty = false;
	return ret;
}

UF_EXPORT struct uf_page *uf_filemap_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct uf_object *obj;
	struct uf_ra_req ra;
	size_t filled = 0;
	bool major = false;
	int ret;

	if (!vma || !fdata || !(obj = vma->obj)) {
		if (fdata)
			fdata->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	if (!uf_fill_window(obj, vma, fdata->pgoff, &ra))	/* (recording, prefetching) */
		uf_readahead_window(vma, fdata->pgoff, &ra);
	uf_fill_checkpoint(obj);	/* (a record watching readahead) */
	ret = fault_fill(vma, obj, fdata, &ra, &filled, &major);
	uf_readahead_submit(vma, &ra);

	if (ret == -ENOMEM || ret == -ENOBUFS) {
		fdata->type = UF_FAULT_OOM;
	} else if (ret) {
		if (ret == -ERANGE)
			fdata->flags |= UF_FAULT_FLAG_EOF;
		else
			uf_count_sigbus_cause(vma->mm, vma, UF_SIGBUS_STORE);
		fdata->type = UF_FAULT_SIGBUS;
	} else {
		uf_fill_note(obj, fdata->pgoff, 1, true);
		fdata->type = major ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
		if (filled > (major ? 1u : 0u)) {
			uint64_t ra = filled - (major ? 1 : 0);

			uf_add(&vma->stats.readahead_pages, ra);
			uf_add(&vma->mm->stats.readahead_pages, ra);
		}
	}
	return NULL;
}

UF_EXPORT struct uf_page *uf_filemap_nopage(struct uf_vma *vma, unsigned long address, int *type)
{
	struct uf_fault_data fdata = { .vma = vma, .address = address, .type = UF_FAULT_MINOR };

	if (!vma || !type || address < vma->start || address >= vma->end) {
		if (type)
			*type = UF_FAULT_SIGBUS;
		return NULL;
	}
	fdata.pgoff = vma->pgoff + ((address - vma->start) >> PAGE_SHIFT);
	uf_filemap_fault(vma, &fdata);
	*type = fdata.type;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* pread / pwrite through the cache                                    */
/* ------------------------------------------------------------------ */

/* Fill every hole of [first, last] in chunks of ra_max pages.
 * Locking: obj->invalidate_lock held shared. */
static int fill_range(struct uf_object *obj, uint64_t first, uint64_t last)
{
	size_t chunk = obj->mm ? obj->mm->ra_max : 512;

	while (first <= last) {
		size_t n = last - first + 1 < chunk ? last - first + 1 : chunk;
		int ret = uf_object_fill(obj, first, n, UF_FILL_ALL, NULL, NULL, NULL);

		if (ret)
			return ret;
		first += n;
	}
	return 0;
}

/* pread(2)/pwrite(2) on the memfd, all of @len or to the end: a fault in
 * @buf part-way gives the bytes done, -EFAULT only when none were. */
static ssize_t memfd_io(int fd, void *buf, size_t len, uint64_t off, bool write)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
				  : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * Run @fn over [offset, offset + len) in chunks of at most one readahead
 * window, each under obj->invalidate_lock shared, reclaiming between them:
 * a call larger than the cache budget then fits in it, and a chunk that
 * finds no room waits for reclaim as a fault does.  @fn returns the bytes
 * it did (fewer: stop there) or -errno.  Return the bytes done, or the
 * error when none were.
 */
static ssize_t object_io(struct uf_object *obj, void *buf, size_t len, uint64_t offset,
			 ssize_t (*fn)(struct uf_object *obj, void *buf, size_t len,
				       uint64_t offset))
{
	struct uf_mm *mm = obj->mm;
	size_t chunk = mm->budget_pages ? mm->ra_max << PAGE_SHIFT : len, done = 0;
	int tries = 0;

	while (done < len) {
		uint64_t off = offset + done;
		size_t n = len - done;
		ssize_t ret;

		/* whole pages of the object per chunk */
		if (n > chunk)
			n = chunk - (size_t)(off & (PAGE_SIZE - 1));
		long freed = uf_reclaim(mm, mm->budget_pages ? DIV_ROUND_UP(n, PAGE_SIZE) + 1 : 0);

		pthread_rwlock_rdlock(&obj->invalidate_lock);
		ret = fn(obj, (char *)buf + done, n, off);
		pthread_rwlock_unlock(&obj->invalidate_lock);
		if (ret == -ENOBUFS && freed >= 0 && tries++ < ROOM_TRIES) {
			usleep(ROOM_WAIT_US);
			continue;
		}
		tries = 0;
		if (ret < 0)
			return done ? (ssize_t)done : ret;
		done += (size_t)ret;
		if ((size_t)ret < n)
			break;
	}
	if (mm->budget_pages)
		uf_reclaim(mm, 0);
	return (ssize_t)done;
}

/* One chunk of uf_object_pread().  Locking: obj->invalidate_lock shared. */
static ssize_t read_chunk(struct uf_object *obj, void *buf, size_t len, uint64_t offset)
{
	uint64_t size = obj->size;
	ssize_t done;
	int ret;

	if (offset >= size)
		return 0;
	if (len > size - offset)
		len = (size_t)(size - offset);
	uf_fill_checkpoint(obj);	/* (a record watching readahead) */
	ret = fill_range(obj, offset >> PAGE_SHIFT, (offset + len - 1) >> PAGE_SHIFT);
	if (ret)
		return ret;
	done = memfd_io(obj->memfd, buf, len, offset, false);
	if (done > 0)
		uf_fill_note(obj, offset >> PAGE_SHIFT,
			   ((offset + (uint64_t)done - 1) >> PAGE_SHIFT) - (offset >> PAGE_SHIFT) + 1,
			   true);
	return done;
}

UF_EXPORT ssize_t uf_object_pread(struct uf_object *obj, void *buf, size_t len, uint64_t offset)
{
	if (!obj || (!buf && len) || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (obj->attach)
		return obj->remote->pread(obj, buf, len, offset);
	return object_io(obj, buf, len, offset, read_chunk);
}

/*
 * One chunk of uf_object_pwrite(): write [offset, offset + len), as much of
 * it as lies inside i_size, into the cache and mark it dirty.  Return the
 * bytes written (fewer than @len: i_size is there, or @buf faulted).
 * Locking: obj->invalidate_lock held shared.
 */
static ssize_t write_chunk(struct uf_object *obj, void *buf, size_t len, uint64_t offset)
{
	uint64_t size = obj->size, first, last, p, gen;
	size_t holes = 0;
	long charged;
	ssize_t ret = 0;

	if (offset >= size)
		return 0;
	if (len > size - offset)
		len = (size_t)(size - offset);
	first = offset >> PAGE_SHIFT;
	last = (offset + len - 1) >> PAGE_SHIFT;
	if (uf_pagebits_reserve(&obj->pages, first, last - first + 1))
		return -ENOMEM;
	/* a partly written page must hold the store's bytes around the write */
	if (offset & (PAGE_SIZE - 1))
		ret = fill_range(obj, first, first);
	if (!ret && ((offset + len) & (PAGE_SIZE - 1)) && offset + len < size)
		ret = fill_range(obj, last, last);
	if (ret)
		return ret;
	/* the pages the write adds to the memfd count against the budget */
	for (p = first; p <= last; p++)
		if (!uf_pagebits_test(&obj->pages, UF_PG_PRESENT, p))
			holes++;
	charged = uf_cache_charge(obj->mm, holes, holes);
	if (charged < 0)
		return charged;
	/* protected before they are in the cache (see cache_insert());
	 * @buf may fault, so no lock is held across the write */
	gen = holes ? protect_holes(obj, first, last - first + 1, false) : 0;
	ret = memfd_io(obj->memfd, buf, len, offset, true);
	if (ret > 0) {
		bool tracked;

		last = (offset + (uint64_t)ret - 1) >> PAGE_SHIFT;
		pthread_rwlock_rdlock(&obj->rmap_lock);
		tracked = __uf_object_tracked(obj);
		if (tracked)
			pthread_mutex_lock(&obj->page_lock);
		/* a mapping began tracking since the protect: protect it
		 * now; the pages are dirty, so no write they had is lost */
		if (tracked && holes && obj->rmap_gen != gen)
			(void)__uf_object_protect_holes(obj, first, last - first + 1, NULL);
		for (p = first; p <= last; p++) {
			mark_present(obj, p, tracked);
			uf_pagebits_set(&obj->pages, UF_PG_DIRTY, p);
		}
		if (tracked)
			pthread_mutex_unlock(&obj->page_lock);
		pthread_rwlock_unlock(&obj->rmap_lock);
		__uf_huge_filled(obj, first, last - first + 1);
	}
	uf_cache_uncharge(obj->mm, (size_t)charged);
	return ret;
}

/*
 * Like pwrite(2): a write past the end extends the object first (the gap
 * reads zero), up to UF_MAX_SIZE.  The write itself runs under the shared
 * lock, chunk by chunk, as a fault from @buf (a ufault mapping) needs it
 * too; a truncate that comes between the extension and a chunk is ordered
 * before the chunk, which extends again.  A fault in @buf part-way gives
 * the bytes written before it.
 */
UF_EXPORT ssize_t uf_object_pwrite(struct uf_object *obj, const void *buf, size_t len,
				   uint64_t offset)
{
	struct uf_mm *mm;
	size_t done = 0;
	ssize_t ret = 0;

	if (!obj || (!buf && len) || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	mm = obj->mm;
	if (obj->readonly)
		return -EROFS;
	if (!len)
		return 0;
	if (offset >= UF_MAX_SIZE)
		return -EFBIG;
	if (len > UF_MAX_SIZE - offset)
		len = (size_t)(UF_MAX_SIZE - offset);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (obj->attach)
		return obj->remote->pwrite(obj, buf, len, offset);

	while (done < len) {
		uint64_t end = offset + len;

		if (__atomic_load_n(&obj->size, __ATOMIC_ACQUIRE) < end) {
			/* extend, in truncate's lock order */
			pthread_rwlock_rdlock(&mm->vma_lock);
			pthread_rwlock_wrlock(&obj->invalidate_lock);
			if (end > obj->size)
				ret = __uf_object_set_size(obj, end);
			pthread_rwlock_unlock(&obj->invalidate_lock);
			pthread_rwlock_unlock(&mm->vma_lock);
			if (ret)
				break;
		}
		ret = object_io(obj, (char *)buf + done, len - done, offset + done, write_chunk);
		if (ret < 0)
			break;
		done += (size_t)ret;
		/* short: cut by a truncate (extend again), or @buf faulted */
		if (done < len && offset + done < __atomic_load_n(&obj->size, __ATOMIC_ACQUIRE))
			break;
		ret = 0;
	}
	return done ? (ssize_t)done : ret;
}

/* ------------------------------------------------------------------ */
/* The cache handed on: a cache that outlives its process              */
/* ------------------------------------------------------------------ */

UF_EXPORT int uf_object_cache_fd(struct uf_object *obj)
{
	int fd;

	if (!obj || obj->attach || !obj->ops || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	fd = fcntl(obj->memfd, F_DUPFD_CLOEXEC, 3);
	return fd < 0 ? -errno : fd;
}

/*
 * The pages @fd holds, as present (and dirty when the object is
 * writable: which of them an earlier process had not yet written back is
 * not known), with the budget's and the collapse's bookkeeping a fill
 * does.  SEEK_DATA on shmem reports each page in the memfd (swapped out
 * ones too), at page granularity.
 * Locking: obj->invalidate_lock held exclusive.
 */
static int __adopt_pages(struct uf_object *obj, int fd, uint64_t size)
{
	uint64_t npages = size_pages(size), p, q;
	off_t off = 0, data, hole;
	int ret;

	while ((uint64_t)off < size) {
		data = lseek(fd, off, SEEK_DATA);
		if (data < 0)
			return errno == ENXIO ? 0 : -errno;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		p = (uint64_t)data >> PAGE_SHIFT;
		q = size_pages((uint64_t)hole);
		if (q > npages)
			q = npages;
		if (p >= q)
			break;
		ret = uf_pagebits_reserve(&obj->pages, p, q - p);
		if (ret)
			return ret;
		for (uint64_t k = p; k < q; k++) {
			mark_present(obj, k, false);
			if (!obj->readonly)
				uf_pagebits_set(&obj->pages, UF_PG_DIRTY, k);
		}
		__uf_huge_filled(obj, p, q - p);
		off = hole;
	}
	return 0;
}

/*
 * Make @nfd the cache, mapped for @cap bytes, in place of the object's:
 * the new mapping first, so that on failure nothing has changed (and
 * @nfd is closed).  Return 0 or -errno.
 * Locking: mm->vma_lock shared, obj->invalidate_lock exclusive.
 */
static int __adopt_map(struct uf_object *obj, int nfd, uint64_t cap)
{
	struct uf_mm *mm = obj->mm;
	char *old_map = obj->cache_map;
	uint64_t old_cap = obj->cache_cap;
	int old_fd = obj->memfd, ret;

	obj->memfd = nfd;
	obj->cache_map = MAP_FAILED;
	obj->cache_cap = 0;
	ret = uf_object_cache_map(obj, cap);
	if (!ret)
		ret = uf_pagebits_grow(&obj->pages, size_pages(cap));
	if (ret) {
		if (obj->cache_map != MAP_FAILED) {
			uf_uffd_unregister(&mm->uffd, (unsigned long)obj->cache_map, obj->cache_cap);
			munmap(obj->cache_map, obj->cache_cap);
		}
		obj->memfd = old_fd;
		obj->cache_map = old_map;
		obj->cache_cap = old_cap;
		close(nfd);
		return ret;
	}
	if (old_map != MAP_FAILED) {
		/* unregistered first, the unmap raises no event to wait for */
		uf_uffd_unregister(&mm->uffd, (unsigned long)old_map, old_cap);
		munmap(old_map, old_cap);
	}
	close(old_fd);
	return 0;
}

UF_EXPORT int uf_object_adopt_cache(struct uf_object *obj, int fd)
{
	struct stat st, mine;
	struct uf_mm *mm;
	uint64_t msize, size;
	int nfd, fl, ret;
	bool busy;

	if (!obj || fd < 0 || obj->attach || !obj->ops || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	mm = obj->mm;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* a memfd (the only files with seals), open for writing */
	fl = fcntl(fd, F_GETFL);
	if (!S_ISREG(st.st_mode) || fcntl(fd, F_GET_SEALS) < 0)
		return -EINVAL;
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR)
		return -EBADF;
	/* (an earlier release's cache: mode 0777) */
	if (uf_cache_fd_restrict(fd) < 0)
		return -errno;
	if (fstat(obj->memfd, &mine) == 0 && mine.st_dev == st.st_dev && mine.st_ino == st.st_ino)
		return 0;
	msize = (uint64_t)st.st_size;
	if (msize > UF_MAX_SIZE)
		return -EFBIG;

	pthread_rwlock_rdlock(&mm->vma_lock);
	pthread_rwlock_wrlock(&obj->invalidate_lock);
	size = obj->size;
	pthread_rwlock_rdlock(&obj->rmap_lock);
	busy = obj->vmas || uf_load(&obj->npresent) || __atomic_load_n(&mm->nchildren,
								       __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&obj->rmap_lock);
	ret = busy ? -EBUSY : msize != size && obj->readonly ? -ESTALE : 0;
	nfd = ret ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (!ret && nfd < 0)
		ret = -errno;
	if (!ret)
		ret = __adopt_map(obj, nfd, msize > size ? msize : size);
	if (ret)
		goto out;
	__atomic_store_n(&obj->size, msize, __ATOMIC_RELEASE);
	ret = __adopt_pages(obj, nfd, msize);
	/* a truncate the earlier process had not finished: the store, which
	 * it changes first, has the size (the cache's stays on failure) */
	if (!ret && msize != size)
		(void)__uf_object_set_size(obj, size);
out:
	pthread_rwlock_unlock(&obj->invalidate_lock);
	pthread_rwlock_unlock(&mm->vma_lock);
	return ret;
}
