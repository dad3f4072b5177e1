/* SPDX-License-Identifier: MIT */
/*
 * ufault - the kernel's unified page-fault handler, ->fault(), in user space.
 *
 * A program maps memory with uf_mmap() (pages of a backing object, through
 * a page cache) or uf_mmap_ops() (driver style, every first touch calls the
 * VMA's fault()).  When a thread touches a page that is not there, a real
 * CPU page fault is delivered through userfaultfd to a handler thread, which
 * calls fault(vma, fdata) with the file offset fdata->pgoff.
 *
 * Conventions: every function that can fail returns 0 (or a count) on
 * success and a negative errno on failure.  Nothing aborts, nothing prints.
 * Bad input returns an error and changes nothing.
 *
 * After fork(): where the kernel grants the fork event (see uf_mm_create()),
 * a child keeps its ufault mappings, served by the parent's handler
 * threads; without it, or with UF_MM_NO_FORK, ufault memory is
 * MADV_DONTFORK: the child inherits none (a touch is SIGSEGV).  Either way
 * the child's copy of ufault never acts on the parent's userfaultfd,
 * threads or stores.  Every call on an mm, object or VMA made before the
 * fork returns -ECHILD there (NULL where a pointer is returned), except
 * uf_mm_destroy() and uf_object_put(), which free the child's memory and
 * do nothing else.
 *
 * The program's own munmap(), mremap() and madvise(MADV_DONTNEED) on ufault
 * memory are followed; use uf_mprotect() rather than mprotect() (see
 * ufault(7)).
 *
 * fault() and the store methods are called with no ufault lock held,
 * except that a store's ->read runs under its object's invalidate lock
 * (see struct uf_store_ops); the library's lock order is in src/lib/lockorder.h.
 */
#ifndef UFAULT_H
#define UFAULT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UF_PAGE_SIZE 4096UL

struct uf_mm;
struct uf_vma;
struct uf_object;
struct uf_page;

/* ------------------------------------------------------------------ */
/* Address space                                                       */
/* ------------------------------------------------------------------ */

/* uf_mm_config.flags */
#define UF_MM_USER_MODE_ONLY	0x01	/* use UFFD_USER_MODE_ONLY even where
					   /dev/userfaultfd could be opened */
#define UF_MM_NO_WP_ASYNC	0x02	/* do not use asynchronous write-protect
					   for dirty tracking (testing) */
#define UF_MM_NO_HUGE		0x04	/* do not collapse fully cached 2 MiB
					   extents into huge pages */
#define UF_MM_NO_FORK		0x08	/* fork children do not inherit ufault
					   memory (MADV_DONTFORK), even where
					   the kernel allows the fork event */

/* uf_mm_config.reclaim_policy */
#define UF_RECLAIM_CLOCK	0	/* second chance (default) */
#define UF_RECLAIM_FIFO		1	/* first in, first out (for comparison) */

/**
 * struct uf_mm_config - parameters of uf_mm_create(); zero means default.
 * @handler_threads: threads that read faults and call fault() (default 1,
 *	at most 64).  Each takes one event at a time.  When every handler
 *	has been busy for 5 ms, ufault starts a spare (up to 64 in all), so
 *	that a fault() that touches another ufault mapping is served.
 * @flags: UF_MM_* above.  Huge extents are on unless UF_MM_NO_HUGE:
 *	each 2 MiB-aligned extent of an object's cache that becomes fully
 *	cached is collapsed into one huge page in the background, once the
 *	mm's fills pause for 20 ms (where
 *	the kernel has MADV_COLLAPSE, Linux 6.1+; ufault-info says whether
 *	it works here), and a mapping of it that is not written through
 *	(no PROT_WRITE, or MAP_PRIVATE) then maps it with one page-table
 *	entry.  Hole punch, truncate, reclaim and writeback stay exact:
 *	a partial punch splits the extent, reclaim evicts an extent whole,
 *	dirty pages are still tracked and written per 4 KiB page.
 * @cache_budget: bytes of page cache across all objects of this mm (0 =
 *	no limit).  The cache never exceeds it by more than one readahead
 *	window; pages are evicted (dirty ones written back first, clean ones
 *	never written) to make room.  A fault that finds no room because the
 *	store refuses the dirty pages' write-back gets SIGBUS.  See
 *	uf_mm_stats() and ufault(7), Budget.
 * @reclaim_policy: UF_RECLAIM_CLOCK or UF_RECLAIM_FIFO.
 * @readahead_max: largest readahead window in bytes (default 2 MiB;
 *	rounded down to pages; a value under one page is -EINVAL).  Under a
 *	cache budget the window is at most 1/8 of the budget.
 */
struct uf_mm_config {
	unsigned int handler_threads;
	unsigned int flags;
	uint64_t cache_budget;
	unsigned int reclaim_policy;
	size_t readahead_max;
};

/**
 * uf_mm_create - create an address-space manager.
 * @cfg: configuration, or NULL for defaults.
 * @mmp: on success, the new mm.
 *
 * Opens a userfaultfd (/dev/userfaultfd when it can be opened, so faults
 * taken inside system calls are served too; otherwise the userfaultfd(2)
 * system call, falling back to UFFD_USER_MODE_ONLY) and starts the handler
 * threads.  Several mms may exist in one process.
 *
 * fork(): where the kernel grants UFFD_FEATURE_EVENT_FORK (it needs
 * CAP_SYS_PTRACE; ufault-info says), a child keeps its ufault mappings,
 * served by this mm's handler threads into the same cache, as after the
 * kernel's own fork: shared object mappings are one cache with the
 * parent's (the child's writes reach the store at the parent's next
 * uf_msync()/uf_object_sync(); every cached page a child's shared
 * mapping shows is then written back, as the child's writes cannot be
 * told apart), private ones are copy-on-write, operation mappings call
 * fault() with a VMA of the child's.  The child's uf_* calls fail with
 * -ECHILD.  fork() waits until a thread of ufault has read the kernel's
 * fork message.  uf_mm_destroy() while a child lives gives the child
 * SIGBUS on every page it has not received yet.  Without the fork event,
 * or with UF_MM_NO_FORK, ufault memory is MADV_DONTFORK: a child's touch
 * there is SIGSEGV.
 *
 * Return: 0, or -EINVAL (bad @cfg, NULL @mmp), -EPERM (userfaultfd not
 * allowed to this process), -ENOSYS (kernel without userfaultfd), -ENOMEM,
 * -EAGAIN (cannot start a thread), or another error from the kernel.
 */
int uf_mm_create(const struct uf_mm_config *cfg, struct uf_mm **mmp);

/**
 * uf_mm_destroy - tear down an mm: unmap every mapping it still has,
 * write back dirty pages of its objects, stop its threads, close its fds.
 * @mm: the mm, or NULL (nothing happens).
 *
 * A thread blocked in a fault on one of its mappings is woken and, like any
 * access to unmapped memory, gets SIGSEGV.  Objects still referenced by the
 * caller may be put before or after; after destroy they can only be
 * synced (uf_object_sync) and put, which writes what is still dirty,
 * releases the store and frees them.  A uf_object_* call running in
 * another thread while destroy runs completes or fails with -EINVAL;
 * calls made after it fail with -EINVAL (sync and put excepted).  The
 * userfaultfd stays open until the last such object is put.  Must not be
 * called from fault().  In a fork child it only frees the child's copy.
 */
void uf_mm_destroy(struct uf_mm *mm);

/* ------------------------------------------------------------------ */
/* The fault API                                                       */
/* ------------------------------------------------------------------ */

#define UF_FAULT_FLAG_WRITE	0x01	/* the access was a write */
#define UF_FAULT_FLAG_NONLINEAR	0x02	/* inside a uf_remap_file_pages() window */

/* fdata->type, set by fault() */
#define UF_FAULT_MINOR	0	/* page was found without I/O */
#define UF_FAULT_MAJOR	1	/* page needed I/O from the store */
#define UF_FAULT_SIGBUS	2	/* cannot be served: the access gets SIGBUS */
#define UF_FAULT_OOM	3	/* out of memory: the access gets SIGBUS */

/**
 * struct uf_fault_data - what fault() is told, and what it answers.
 * @vma: the mapping faulted on.
 * @address: the faulting address (exact where the kernel tells it).
 * @pgoff: the page of the object (or of the operation mapping) to supply.
 * @flags: UF_FAULT_FLAG_*.
 * @type: set by fault(): UF_FAULT_MINOR/MAJOR, or SIGBUS/OOM.
 */
struct uf_fault_data {
	struct uf_vma *vma;
	unsigned long address;
	uint64_t pgoff;
	unsigned int flags;
	int type;
};

#if defined(__GNUC__) && !defined(UF_NO_DEPRECATED_WARNINGS)
#define UF_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define UF_DEPRECATED(msg)
#endif

/**
 * struct uf_vm_operations - the methods of a mapping.
 *
 * ->open - a mapping using these ops was created (after it is in place).
 * ->close - the mapping is going away (before it is unmapped).
 *	Both are called from the thread that maps or unmaps, no lock held.
 *
 * ->fault - supply the page for fdata->pgoff.
 *	Called from a handler thread, no ufault lock held.  Return the page
 *	(one reference passes to the caller, which installs a copy of its
 *	bytes and puts it), or install the page with uf_vm_insert_page() /
 *	uf_vm_insert_pfn() and return NULL, or return NULL with fdata->type
 *	= UF_FAULT_SIGBUS or UF_FAULT_OOM: that access gets SIGBUS with
 *	si_addr the faulting address.  On an operation mapping the page is
 *	then poisoned where the kernel has UFFDIO_POISON (6.6+): every later
 *	touch gets SIGBUS (BUS_ADRERR) from the kernel without calling
 *	fault() again, and a system call touching it fails with EFAULT.
 *	(Object pages are poisoned only until the faulting thread retried;
 *	without poison the signal is queued, si_code SI_QUEUE, and each
 *	later touch calls fault() again.)  fault() may touch other ufault
 *	mappings (a spare handler serves that), but not its own page.  Returning NULL with MINOR/MAJOR without installing
 *	the page on an operation mapping also gives SIGBUS.
 *	Set fdata->type to UF_FAULT_MINOR or UF_FAULT_MAJOR on success
 *	(it starts as UF_FAULT_MINOR).
 *
 * ->nopage - deprecated: the pre-2.6.23 method.  Return the page for
 *	@address or NULL for SIGBUS, setting *type to MINOR/MAJOR.  It cannot
 *	serve nonlinear mappings.  Used only when ->fault is NULL.
 */
struct uf_vm_operations {
	void (*open)(struct uf_vma *vma);
	void (*close)(struct uf_vma *vma);
	struct uf_page *(*fault)(struct uf_vma *vma, struct uf_fault_data *fdata);
	struct uf_page *(*nopage)(struct uf_vma *vma, unsigned long address,
				  int *type)
		UF_DEPRECATED("nopage() is deprecated: use fault()");
};

/* ------------------------------------------------------------------ */
/* Mappings                                                            */
/* ------------------------------------------------------------------ */

#define UF_MAP_SHARED	0x01
#define UF_MAP_PRIVATE	0x02

#define UF_MS_SYNC	0x04	/* wait for the store (the only mode; 0 means the same) */

/**
 * uf_mmap - map an object.
 * @mm: the address space.
 * @len: bytes to map, positive; rounded up to a multiple of UF_PAGE_SIZE,
 *	as mmap(2) does, so an object's size maps all of it: the rest of its
 *	last page reads zero.  The mapping may extend past the object's end:
 *	pages wholly past it get SIGBUS, as in the kernel, until the object
 *	grows.
 * @prot: PROT_READ, or PROT_READ|PROT_WRITE (PROT_EXEC may be added).
 * @flags: exactly one of UF_MAP_SHARED, UF_MAP_PRIVATE.
 * @obj: the object (the mapping takes a reference).
 * @offset: byte offset in the object, a multiple of UF_PAGE_SIZE.
 * @addrp: on success, the start of the mapping.
 *
 * Shared mappings are coherent with each other and with uf_object_pread()
 * and uf_object_pwrite(); writes reach the store on uf_msync(),
 * uf_object_sync(), uf_munmap() followed by a sync, or the last
 * uf_object_put().  Private mappings are copy-on-write; their writes never
 * reach the object.
 *
 * Return: 0, or -EINVAL (NULL argument, @len zero, @offset unaligned,
 * bad @prot or @flags, @obj created on another mm or whose mm was
 * destroyed), -EOVERFLOW (@offset + @len too large), -EACCES (PROT_WRITE
 * with UF_MAP_SHARED on an object opened read-only), -ENOMEM (also @len
 * too large to round up), or a kernel error.
 */
int uf_mmap(struct uf_mm *mm, size_t len, int prot, int flags,
	    struct uf_object *obj, uint64_t offset, void **addrp);

/**
 * uf_mmap_ops - map anonymous memory whose pages come from @ops->fault.
 * @mm: the address space.
 * @len: bytes, positive; rounded up to a multiple of UF_PAGE_SIZE.
 * @prot: PROT_READ, or PROT_READ|PROT_WRITE (PROT_EXEC may be added).
 * @ops: the methods; ->fault or (deprecated) ->nopage must be set.  The
 *	table must outlive the mapping.
 * @private_data: returned by uf_vma_private().
 * @addrp: on success, the start of the mapping.
 *
 * The first touch of each page calls ->fault with fdata->pgoff the page's
 * index in the mapping.
 *
 * Return: 0, or -EINVAL (NULL @mm/@ops/@addrp, @len zero, bad @prot,
 * neither ->fault nor ->nopage), -ENOMEM (also @len too large to round
 * up), or a kernel error.
 */
int uf_mmap_ops(struct uf_mm *mm, size_t len, int prot,
		const struct uf_vm_operations *ops, void *private_data,
		void **addrp);

/**
 * uf_munmap - remove a whole mapping.
 * @mm: the address space.
 * @addr: the start of a mapping made by uf_mmap() or uf_mmap_ops().
 * @len: its length (rounded up to a page).
 *
 * Dirty pages of a shared object mapping stay in the object's cache and are
 * written by the next sync of the object.  Threads blocked in a fault on the
 * mapping are woken and get SIGSEGV, as does a write racing with the unmap.  Must not be called from fault() on
 * the same mapping.
 *
 * Return: 0, or -EINVAL (NULL @mm, @addr not the start of a ufault mapping,
 * @len not its length), -EDEADLK (called from a handler thread on a mapping
 * whose fault is being handled).
 */
int uf_munmap(struct uf_mm *mm, void *addr, size_t len);

/**
 * uf_mprotect - change the protection of ufault mappings.
 * @mm: the address space.
 * @addr: page-aligned start; [@addr, @addr + @len) must lie in ufault
 *	mappings (whole or in part: a mapping is split as needed).
 * @len: bytes (rounded up to a page); 0 changes nothing.
 * @prot: PROT_NONE or PROT_READ, PROT_WRITE, PROT_EXEC combined.
 *
 * Use this, not the system's mprotect(), on ufault memory: it keeps dirty
 * tracking right.  Write permission added to a shared object mapping is
 * tracked before the first write can land, so every write reaches the
 * store on the next sync; taken away, what was written is collected.
 * The system's mprotect() adding write permission to a shared mapping of
 * a writable object is not followed as it happens: the next sync or
 * uf_munmap() finds it and writes back every cached page the mapping
 * shows (see ufault(7)).
 *
 * Return: 0, or -EINVAL (NULL @mm, @addr unaligned, unknown @prot bits),
 * -ENOMEM (part of the range is no ufault mapping, or no memory to split
 * one; nothing changed), -EACCES (@prot has PROT_WRITE and the range holds
 * a shared mapping of a read-only object; nothing changed), -ECHILD
 * (called in a child process after fork()), or a kernel error.
 */
int uf_mprotect(struct uf_mm *mm, void *addr, size_t len, int prot);

/**
 * uf_msync - write the dirty pages of shared object mappings in
 * [@addr, @addr + @len) to their stores, and wait.
 * @addr: page-aligned, as msync(2) requires.
 * @len: bytes, rounded up to a page; 0 writes nothing.
 * @flags: 0 or UF_MS_SYNC.
 *
 * Only shared writable mappings are written back: a mapping of a read-only
 * object (or store) is never one, so it has nothing to write and gives 0,
 * as msync(2) of a read-only mapping does (uf_object_sync() of an object
 * whose store cannot be written is -EROFS).
 *
 * Return: 0, or the store's error (the pages stay dirty and are tried
 * again by the next sync), -EINVAL (unaligned @addr, bad @flags), -ENOMEM
 * (part of the range is not a ufault mapping, as msync(2)).
 */
int uf_msync(struct uf_mm *mm, void *addr, size_t len, int flags);

/**
 * uf_remap_file_pages - make part of a shared object mapping a window onto
 * object pages @pgoff .. (a nonlinear mapping).
 * @start: page-aligned start of the window, inside one shared object VMA.
 * @size: page-aligned length; the window must lie inside that VMA.
 * @prot: must be 0, as in Linux.
 * @pgoff: first object page the window shows.
 * @flags: must be 0.
 *
 * Faults in the window reach fault() with the window's pgoff and
 * UF_FAULT_FLAG_NONLINEAR.  Windows may overlap earlier ones and may point
 * past the object's end (access there gets SIGBUS).
 *
 * Return: 0, or -EINVAL (bad alignment, zero size, @prot or @flags not 0,
 * range not inside one shared object VMA, a VMA whose ops have only
 * ->nopage), or a kernel error.  On error the range shows what it showed
 * before.
 */
int uf_remap_file_pages(struct uf_mm *mm, void *start, size_t size,
			int prot, uint64_t pgoff, int flags);

/**
 * uf_find_vma - the mapping containing @addr, or NULL.
 * The pointer stays valid until that mapping is unmapped.
 */
struct uf_vma *uf_find_vma(struct uf_mm *mm, const void *addr);

/** uf_vma_private - the @private_data given to uf_mmap_ops() (NULL for
 *  object mappings). */
void *uf_vma_private(const struct uf_vma *vma);

/** uf_vma_start - first address of @vma. */
void *uf_vma_start(const struct uf_vma *vma);

/** uf_vma_len - length of @vma in bytes. */
size_t uf_vma_len(const struct uf_vma *vma);

/** uf_vma_object - the object @vma maps, or NULL for an operation mapping. */
struct uf_object *uf_vma_object(const struct uf_vma *vma);

/**
 * uf_vma_set_ops - give an object mapping its own methods, as a driver's or
 * file system's ->mmap sets vma->vm_ops.  Its ->fault (or deprecated
 * ->nopage) usually ends in uf_filemap_fault() (uf_filemap_nopage()).
 * Call it before the mapping is touched.
 *
 * Return: 0, or -EINVAL (NULL argument, an operation mapping, @ops with
 * neither ->fault nor ->nopage, or only ->nopage on a mapping that already
 * has nonlinear windows).
 */
int uf_vma_set_ops(struct uf_vma *vma, const struct uf_vm_operations *ops);

/**
 * uf_vma_set_private - set what uf_vma_private() returns for @vma, so an
 * object mapping's own ->fault can find its state.
 * Return: 0, or -EINVAL for a NULL @vma.
 */
int uf_vma_set_private(struct uf_vma *vma, void *private_data);

/* ------------------------------------------------------------------ */
/* Pages                                                               */
/* ------------------------------------------------------------------ */

/**
 * uf_page_alloc - allocate a zeroed page with one reference.
 * Return: the page, or NULL when out of memory (or @mm is NULL).
 */
struct uf_page *uf_page_alloc(struct uf_mm *mm);

/** uf_page_address - the page's UF_PAGE_SIZE bytes (page aligned). */
void *uf_page_address(struct uf_page *page);

/** uf_page_get - take a reference. */
void uf_page_get(struct uf_page *page);

/** uf_page_put - drop a reference; the last one frees the page. NULL is ignored. */
void uf_page_put(struct uf_page *page);

/**
 * uf_vm_insert_page - install a copy of @page's bytes at @address in @vma
 * (for object mappings: into the object's cache at the page's offset).
 * Meant for fault(); wakes the threads waiting on that page.
 *
 * Return: 0, -EEXIST (a page is already there; it is kept), -EINVAL (NULL
 * argument, @address outside @vma), -EFAULT, -ENOMEM.
 */
int uf_vm_insert_page(struct uf_vma *vma, unsigned long address, struct uf_page *page);

/**
 * uf_vm_insert_pfn - install UF_PAGE_SIZE bytes of caller-owned memory at
 * @kaddr (page aligned) as the page at @address.  The replacement for
 * nopfn().  The bytes are copied when the page is installed: later changes
 * to @kaddr are not seen through the mapping.
 *
 * Return: as uf_vm_insert_page(), and -EINVAL for an unaligned @kaddr.
 */
int uf_vm_insert_pfn(struct uf_vma *vma, unsigned long address, const void *kaddr);

/* ------------------------------------------------------------------ */
/* Objects and stores                                                  */
/* ------------------------------------------------------------------ */

/**
 * struct uf_store_iov - one extent of a batched store read.
 * @buf: where its bytes go.
 * @len: its length in bytes (a multiple of UF_PAGE_SIZE, except where the
 *	object ends).
 * @off: its offset in the object (a multiple of UF_PAGE_SIZE).
 */
struct uf_store_iov {
	void *buf;
	size_t len;
	uint64_t off;
};

/**
 * struct uf_store_ops - how an object's bytes reach the backing store
 * (the kernel's address_space_operations).  All offsets are in bytes and
 * page aligned, except where the object's size is not.  Called from
 * handler threads and from the thread calling a uf_object_* or sync
 * function, possibly concurrently for different ranges.  Return 0 (or a
 * count) or a negative errno, which ufault passes on.
 *
 * ->read - read up to @len bytes at @off into @buf; return bytes read.
 *	A short count is fine: ufault asks again for the rest.  Only 0
 *	means the store ends there (the rest reads as zero).  It may call
 *	uf_object_pread() on another object (an overlay) and touch other
 *	ufault mappings, and a slow read holds up no other thread's map or
 *	unmap.  It runs holding the object's invalidate lock shared, so it
 *	must not call uf_mmap(), uf_munmap(), uf_mprotect(),
 *	uf_remap_file_pages(), uf_msync(), uf_object_truncate(),
 *	uf_object_punch_hole() or a sync of the same mm: those wait for the
 *	mapping table, which a truncate of the object being read holds
 *	while it waits for the read to end.
 *	A read may cover a few pages the cache holds already (holes up to
 *	8 cached pages apart are read in one call); their bytes are
 *	dropped, never copied over the cached page.  Required.
 * ->write - write @len bytes at @off; return 0 when all were written.
 *	NULL for a read-only store (objects are then read-only).
 * ->truncate - make the store @size bytes long.  May be NULL.
 * ->punch_hole - make [@off, @off + @len) read as zero.  May be NULL
 *	(ufault then writes zeros).
 * ->sync - make written data durable.  May be NULL.
 * ->release - the object is gone: free @store.  May be NULL.
 * ->size - sizeof(struct uf_store_ops) for a store that sets a member
 *	below it (->readv); ufault then reads the members it covers, and a
 *	later ufault with more members takes those past @size as NULL.
 *	0: the six members above only (as a table written before ->size
 *	was); the members below must then be NULL.
 * ->readv - read each of the @n extents of @iov (at most 512 pages in
 *	all) into its @buf in full, bytes past the store's end as zero;
 *	return 0, or a negative errno for the whole call (the runs are
 *	then read with ->read).  Under the same rules as ->read; the
 *	extents do not overlap and hold no page the cache holds.  A
 *	working-set prefetch (uf_object_prefetch()) reads many runs of the
 *	set with one call instead of one ->read per run: a remote store
 *	pays one round trip for them.  Nothing else calls it.  May be NULL.
 */
struct uf_store_ops {
	ssize_t (*read)(void *store, void *buf, size_t len, uint64_t off);
	int (*write)(void *store, const void *buf, size_t len, uint64_t off);
	int (*truncate)(void *store, uint64_t size);
	int (*punch_hole)(void *store, uint64_t off, uint64_t len);
	int (*sync)(void *store);
	void (*release)(void *store);
	/* since UFAULT_0.7: */
	size_t size;
	int (*readv)(void *store, const struct uf_store_iov *iov, size_t n);
};

/**
 * uf_object_create - an object of @size bytes whose pages come from @ops.
 * @mm: the mm whose cache budget the object counts against.
 * @ops: the store methods (must outlive the object); ->read required.
 * @store: passed to every method.
 * @size: the object's current size in bytes.
 * @objp: on success, the object with one reference.
 *
 * The cache reserves address space for the whole object (no memory): an
 * object larger than the free address space (user space is 128 TiB on
 * x86-64) fails with -ENOMEM.  Page state costs memory only for what is
 * cached (a few KiB per 128 MiB of object with cached pages).
 *
 * A program built against a ufault.h before ->size (UFAULT_0.1 to 0.6)
 * is bound to a uf_object_create that reads the six first members only.
 *
 * Return: 0, or -EINVAL (NULL @mm/@ops/@objp, no ->read, ->readv with
 * ->size 0, a nonzero ->size short of ->readv), -E2BIG (a ->size past
 * this version's struct with a nonzero byte there), -EFBIG (@size above
 * 2^63 - 4096), -ENOMEM, or a kernel error (creating the cache memfd).
 */
int uf_object_create(struct uf_mm *mm, const struct uf_store_ops *ops,
		     void *store, uint64_t size, struct uf_object **objp);

/**
 * uf_object_set_readv - give the store of @obj a method that reads many
 * extents in one call, after the object is made.
 * @obj: an object of uf_object_create().
 * @readv: the method, as ->readv of struct uf_store_ops; or NULL to take
 *	it away.
 *
 * Kept for stores written before ->readv was a member of struct
 * uf_store_ops: a store sets ->readv (and ->size) there instead.  This
 * replaces the method the object has, whichever way it got it.
 *
 * Return: 0, or -EINVAL (NULL @obj, or an object of uf_object_open() or
 * uf_object_create_mem(), whose stores read with their own method).
 */
int uf_object_set_readv(struct uf_object *obj,
			int (*readv)(void *store, const struct uf_store_iov *iov, size_t n));

/**
 * uf_object_open - an object backed by the file at @path.
 * @oflags: O_RDONLY or O_RDWR, optionally with O_CREAT (mode 0644).
 *
 * An O_RDWR object holds an open-file-description write lock on the
 * whole file (F_OFD_SETLK) until its last put, so two ufault users never
 * write one file at once.  A sync, truncate or punch that finds the file
 * changed behind ufault's back (size, mtime or ctime moved since ufault
 * last wrote it) fails with -ESTALE and writes nothing; the pages stay
 * dirty.  See "File consistency" in ufault(7).
 *
 * Return: 0, or -EINVAL (NULL argument, other @oflags, not a regular
 * file), -ENOENT, -EACCES, -EISDIR, -EBUSY (O_RDWR and the file is locked
 * by another open file description), or another error from
 * open(2)/fstat(2)/fcntl(2).
 */
int uf_object_open(struct uf_mm *mm, const char *path, int oflags,
		   struct uf_object **objp);

/**
 * uf_object_create_mem - an object of @size zero bytes whose store is
 * memory (a sparse memfd): written-back pages live there.
 * Return: as uf_object_create().
 */
int uf_object_create_mem(struct uf_mm *mm, uint64_t size, struct uf_object **objp);

/**
 * uf_object_get - take another reference to @obj.
 */
void uf_object_get(struct uf_object *obj);

/**
 * uf_object_put - drop a reference.  The last one (mappings hold their
 * own) writes the dirty pages to the store, releases the store and frees
 * the object.  A store error at that point cannot be reported: call
 * uf_object_sync() first when it matters.  NULL is ignored.  In a fork
 * child the last put only frees the child's copy (no sync, no ->release).
 */
void uf_object_put(struct uf_object *obj);

/** uf_object_size - the object's size in bytes (i_size). */
uint64_t uf_object_size(const struct uf_object *obj);

/**
 * uf_object_truncate - set the object's size, safely against concurrent
 * faults, fills, readahead and writeback.
 *
 * Shrinking: afterwards no mapping maps a page at or past the new end,
 * accesses there get SIGBUS, the bytes past the end of the last partial
 * page read zero, and the store is truncated too.  Growing: the new bytes
 * read zero, including any written through a mapping past the old end.
 *
 * Shrinking costs what is cached past the new end, not the object's size.
 *
 * Return: 0, or -EINVAL (NULL @obj, or its mm was destroyed), -EROFS
 * (read-only object), -EBUSY (shrinking below the end of a region of a
 * process served from @obj, uf_object_serve_uffd(): it reads the
 * snapshot's bytes or SIGBUS, never zeros, for as long as it is served),
 * -EFBIG (@size above 2^63 - 4096), -ENOMEM (growing:
 * no address space to cache an object of @size, or no memory), -ESTALE
 * (a file changed behind ufault's back, see uf_object_open()), the
 * store's error, or the kernel's error resizing the cache memfd.  On any
 * error the size is unchanged.
 */
int uf_object_truncate(struct uf_object *obj, uint64_t size);

/**
 * uf_object_punch_hole - make [@offset, @offset + @len) read zero in every
 * mapping and in the store.  The range is clamped at the object's end.
 * Return: 0, or -EINVAL (NULL @obj, @len 0, or its mm was destroyed),
 * -EROFS, -EBUSY (a page of the range is in a region of a process served
 * from @obj, uf_object_serve_uffd()), -ESTALE (a file changed behind ufault's back, see
 * uf_object_open()), or the store's error; then nothing has changed.
 */
int uf_object_punch_hole(struct uf_object *obj, uint64_t offset, uint64_t len);

/**
 * uf_object_pread - read object bytes, coherent with every mapping.
 * As pread(2): when @buf faults part-way (a ufault mapping past its own
 * object's end, say), or an error comes after some bytes were read, the
 * bytes done are returned.  Under a cache budget the read goes one
 * readahead window at a time, so it may be larger than the budget.
 * Return: bytes read (short at the object's end, 0 past it), or, when
 * none were, -EINVAL (NULL argument, or the object's mm was destroyed),
 * -EFAULT (@buf faulted), -ENOBUFS (the cache budget is full of dirty
 * pages the store refuses), or the store's error.
 */
ssize_t uf_object_pread(struct uf_object *obj, void *buf, size_t len, uint64_t offset);

/**
 * uf_object_pwrite - write object bytes, coherent with every mapping.
 * Like pwrite(2), a write ending past the object's end first extends it
 * (as uf_object_truncate() does: the gap reads zero, bytes written through
 * a mapping past the old end never reappear); a write passing the size
 * limit, 2^63 - 4096, is cut there.
 * As pwrite(2), a fault in @buf part-way gives the bytes written before
 * it (the object keeps the size the extension gave it).
 * Return: bytes written, or, when none were, -EINVAL (NULL argument, or
 * the object's mm was destroyed), -EROFS, -EFBIG (@offset at or past the
 * size limit), -EFAULT (@buf faulted), -ENOBUFS (as uf_object_pread()), an
 * error of the extension as for uf_object_truncate(), or the store's error.
 */
ssize_t uf_object_pwrite(struct uf_object *obj, const void *buf, size_t len, uint64_t offset);

/**
 * uf_object_sync - write every dirty page of @obj (written through shared
 * mappings or uf_object_pwrite()) to the store, then ->sync it.
 * An object opened read-only over a store that can be written has nothing
 * dirty: 0, as fsync(2) of an O_RDONLY file.  A store that cannot be
 * written (no ->write: uf_http_open(), uf_pack_create()) refuses: -EROFS,
 * so that a caller counting on durability learns nothing will be written.
 * Return: 0, or -EROFS (the store has no ->write), -EINVAL (NULL @obj),
 * or the first store error (-ESTALE for a file written behind ufault's
 * back, see uf_object_open()); pages that failed stay dirty.
 */
int uf_object_sync(struct uf_object *obj);

/**
 * uf_filemap_fault - the fault method of object mappings: find the page
 * in the object's cache, or read it (with a readahead window) from the
 * store.  Sets fdata->type to MINOR, MAJOR, SIGBUS (past the end, or a
 * store error) or OOM (no memory for the read buffer).  Installs the page
 * itself and returns NULL.
 */
struct uf_page *uf_filemap_fault(struct uf_vma *vma, struct uf_fault_data *fdata);

/**
 * uf_filemap_nopage - deprecated: the old entry point, for code being
 * ported.  Serves @address of a linear object mapping.
 * Return: NULL (the page is installed), with *type MINOR/MAJOR, or SIGBUS.
 */
struct uf_page *uf_filemap_nopage(struct uf_vma *vma, unsigned long address, int *type)
	UF_DEPRECATED("uf_filemap_nopage() is deprecated: use uf_filemap_fault()");

/**
 * uf_filemap_populate - deprecated: prefault @len bytes at @addr of an
 * object mapping from object page @pgoff, the old way of building a
 * nonlinear mapping.  Now uf_remap_file_pages() plus a read of each page.
 * @prot: must be 0.  @nonblock: ignored.
 * Return: 0, or as uf_remap_file_pages(), or the store's error reading
 * the pages (the window is then in place, the pages fault in later).
 */
int uf_filemap_populate(struct uf_vma *vma, unsigned long addr, unsigned long len,
			int prot, uint64_t pgoff, int nonblock)
	UF_DEPRECATED("uf_filemap_populate() is deprecated: use uf_remap_file_pages()");

/* ------------------------------------------------------------------ */
/* Working sets: record and replay                                     */
/* ------------------------------------------------------------------ */

/**
 * uf_object_record - record, from now on, the pages of @obj in order of
 * first access, to write them to @path when the record ends.
 * @obj: the object, best cold (just opened): a page already in its cache
 *	when the record starts is seen only once it has left the cache and
 *	is touched again.
 * @path: the record file, written by uf_object_record_stop() or the
 *	object's last put; a temporary file beside it is made now.
 *
 * A page counts when it is first touched through any mapping of @obj (any
 * of the mm's address spaces) or first read by uf_object_pread().  Where
 * the kernel lets ufault read the program's page tables (PAGEMAP_SCAN,
 * Linux 6.7+, and no cache budget), every mapping of @obj is the mm's
 * own and linear, and the mm serves no other address space (fork
 * children, attached clients), readahead stays on: a page read ahead
 * counts when a mapping first shows it, which ufault looks for at each
 * fault and at the end, so pages touched between two faults are recorded
 * in page order.  For that the object's mappings are registered
 * write-protect, which turns the kernel's fault-around off for them until
 * they are unmapped.  Elsewhere, and after a fork or a client's mapping
 * (a page read ahead before, first touched there, is then missed), the
 * object's faults read no readahead while a record runs: each page is a
 * fault of its own.  Pages first
 * reached only by uf_object_pwrite() are not recorded.
 *
 * Return: 0, or -EINVAL (NULL or empty argument, the object's mm was
 * destroyed), -EBUSY (a record or a prefetch of @obj is running),
 * -ECHILD (in a fork child), -ENOMEM, or the error of making the
 * temporary file beside @path (-ENOENT, -EACCES, ...).
 * Context: any thread but a handler's; holds the mm's mapping table
 * briefly, as uf_mmap() does.
 */
int uf_object_record(struct uf_object *obj, const char *path);

/**
 * uf_object_record_stop - end the record of @obj and write its file:
 * the temporary file made by uf_object_record(), synced, then renamed over
 * the path, so that the path holds an old record or the whole new one.
 *
 * The format (versioned, little-endian: see uf_object_record(3)) holds a
 * header naming the object's version -- for an object of
 * uf_object_open() or uf_object_create_mem() the file's size and
 * modification time when the record started, for any other store its size
 * alone -- and the pages as runs, a few bytes each (4096 pages in runs of
 * 16 and singles over a 256 MiB object: under 20 KiB).
 *
 * Return: the number of pages recorded (at most INT_MAX is told), or
 * -EINVAL (NULL @obj, no record running), -ENOMEM (the record could not
 * hold a page: no file is written), -ESRCH (a record of
 * uf_object_serve_record() that no process was served for: no file is
 * written), or the error writing or renaming the file (its temporary file
 * is removed).  Either way the record has ended.
 */
int uf_object_record_stop(struct uf_object *obj);

/**
 * uf_object_prefetch - bring the pages recorded in @path into the cache
 * of @obj, in the recorded order, in the background.
 *
 * Returns once the file is read and checked; fillers (the mm's worker
 * thread and threads of the prefetch's own: 2 fillers in all for a file
 * or memory object, 3 for a store with ->readv (uf_object_set_readv()),
 * 8 for any other store) then fill the runs in order, one store read per
 * run, or with ->readv many runs a read (pages already cached are left
 * as they are, pages past the object's end are not filled).  Where a
 * shared mapping of a writable object shows them, pages are copied
 * straight into it, sparing the program's first touch a fault.  Faults are served by the
 * handler threads meanwhile, never behind it: a fault on a page of the
 * set reads the rest of its recorded run at once.  Under a cache budget
 * it stops before the cache passes 15/16 of the budget: it never makes
 * reclaim evict what it just read.  A page punched meanwhile reads zero
 * (as the store does there).  The object's last put stops it (and waits
 * for the pieces being filled); uf_mm_stats() counts its pages in
 * readahead_pages.
 *
 * Return: 0, or -ENOENT (no file at @path), -EINVAL (NULL argument, the
 * object's mm was destroyed, or @path is not a working-set file: wrong
 * magic, another format version, truncated, damaged, or holding a page
 * twice), -ESTALE (recorded from another version of the object: size, or
 * the file's modification time), -EBUSY (a record or another prefetch of
 * @obj is running), -ECHILD, -ENOMEM, or the error opening or reading
 * @path.
 */
int uf_object_prefetch(struct uf_object *obj, const char *path);

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

#define UF_LAT_BUCKETS 24

/**
 * struct uf_stats - counters, per mm and per VMA.
 * @minor_faults, @major_faults: fault() outcomes as fault() typed them.
 * @sigbus, @oom: faults answered with SIGBUS / OOM.
 * @pages_read: pages read from stores.  @pages_written: pages written.
 * @readahead_pages: pages filled beyond the one faulted on.
 * @cache_pages: pages in the caches now (per mm: all its objects; per VMA:
 *	its object).
 * @evicted_pages: pages reclaimed from caches.
 * @lat_us: fault round trips (event read to wake) by duration:
 *	bucket i counts those of [2^i, 2^(i+1)) microseconds (bucket 0:
 *	under 2 us).
 * @huge_extents: 2 MiB extents of the caches held in huge pages now
 *	(collapsed, and not split since by a punch, truncate or eviction).
 * @huge_collapses: collapses done (per VMA: 0).
 * @sigbus_store, @sigbus_room, @sigbus_outside, @sigbus_other: why faults
 *	on objects and in served processes were answered with SIGBUS: the
 *	store failed to read the page; the cache budget had no room for it
 *	(after waiting for room: dirty pages the store refuses to take);
 *	the address is in no region or mapping the server knows of (a
 *	served process); any other (a copy into a served process failed).
 *	A fault past the end of an object is none of these (the kernel's
 *	SIGBUS, as for a file).
 *
 * Fields are only ever appended (a program built against an older
 * ufault.h gets the fields it knows: the functions are versioned).
 */
struct uf_stats {
	uint64_t minor_faults, major_faults, sigbus, oom;
	uint64_t pages_read, pages_written, readahead_pages, cache_pages;
	uint64_t evicted_pages;
	uint64_t lat_us[UF_LAT_BUCKETS];
	/* UFAULT_0.3 */
	uint64_t huge_extents, huge_collapses;
	/* UFAULT_0.8 */
	uint64_t sigbus_store, sigbus_room, sigbus_outside, sigbus_other;
};

/** uf_mm_stats - totals of @mm.  Return: 0, or -EINVAL for NULL. */
int uf_mm_stats(struct uf_mm *mm, struct uf_stats *st);

/** uf_vma_stats - counters of one mapping.  Return: 0, or -EINVAL for NULL. */
int uf_vma_stats(struct uf_vma *vma, struct uf_stats *st);

/* ------------------------------------------------------------------ */
/* Serving other processes                                             */
/* ------------------------------------------------------------------ */

/**
 * struct uf_serve_region - a range of another process's memory whose
 * pages are an object's bytes.
 * @start: its address in that process (a multiple of UF_PAGE_SIZE).
 * @len: its length in bytes (a positive multiple of UF_PAGE_SIZE).
 * @offset: the object's byte offset its first page shows (a multiple of
 *	UF_PAGE_SIZE).
 */
struct uf_serve_region {
	uint64_t start, len, offset;
};

#define UF_SERVE_MAX_REGIONS	64

/**
 * uf_object_serve_uffd - serve another process's anonymous memory from
 * @obj's cache, through that process's userfaultfd.
 * @obj: the object whose bytes the memory starts with.
 * @uffd: a userfaultfd of the other process (received with SCM_RIGHTS),
 *	on which it registered the regions' ranges MISSING: Firecracker's
 *	UFFD memory backend.  It is set O_NONBLOCK.
 * @regions: @n regions (1 to UF_SERVE_MAX_REGIONS), not overlapping,
 *	each inside @obj (its size rounded up to a page).
 * @n: how many.
 *
 * A missing page of region i at address A is made present in @obj's
 * cache (with readahead) and copied into the other process (UFFDIO_COPY):
 * the bytes of @obj at regions[i].offset + (A - regions[i].start).  Once
 * there the page is that process's own memory.  After UFFD_EVENT_REMOVE
 * on a range (madvise(MADV_DONTNEED) there: a balloon) its pages read
 * zeros when touched, never @obj's bytes again.  A page that cannot be
 * read from the store, and a fault outside every region, give that
 * access SIGBUS (the poison marker, Linux 6.6+), never zeros.  Nothing
 * the other process does makes ufault write anywhere but into its
 * registered ranges, nor read anything but @obj's pages.
 *
 * A record of uf_object_serve_record() waiting for a process records this
 * one; a working set armed by uf_object_serve_prefetch() is copied into
 * it ahead of its faults, by a thread of its own.
 *
 * The memory is served by @obj's mm until the process is gone (within a
 * tenth of a second of its exit the fd is closed and the memory freed),
 * or until uf_mm_destroy(), which first gives every page the process has
 * not received the poison marker.  The object may be put meanwhile: the
 * regions hold references.
 *
 * Return: 0 (@uffd is ufault's now), or with @uffd still the caller's:
 * -EINVAL (NULL argument, bad @n, a region not page-aligned, empty,
 * overlapping another, past the object's end, or the mm destroyed),
 * -EBADF (@uffd is not a userfaultfd), -ECHILD (in a fork child),
 * -ENOMEM.
 */
int uf_object_serve_uffd(struct uf_object *obj, int uffd,
			 const struct uf_serve_region *regions, unsigned int n);

/**
 * struct uf_serve_range - a range of another process's memory.
 * @start: its address in that process (a multiple of UF_PAGE_SIZE).
 * @len: its length in bytes (a multiple of UF_PAGE_SIZE).
 */
struct uf_serve_range {
	uint64_t start, len;
};

/**
 * struct uf_serve_opts - what uf_object_serve_uffd_opts() adds to
 * uf_object_serve_uffd(): what lets a server take over a process that
 * another server (since gone) was serving.
 * @removed: @nremoved ranges that read zeros from the start, as after
 *	UFFD_EVENT_REMOVE there: the removals the earlier server was told
 *	of (through its @on_remove).  Parts outside every region are
 *	ignored.
 * @nremoved: how many (0: none; @removed may then be NULL).
 * @on_remove: NULL, or called at each UFFD_EVENT_REMOVE of the process
 *	(its MADV_DONTNEED) with the range the kernel gave, page-aligned,
 *	which may reach past the regions: from a handler thread of the
 *	object's mm with no ufault lock held, after the range reads zeros.
 *	It must not call into ufault for this mm.
 * @arg: @on_remove's first argument.
 * @tenant: 0, or who the process belongs to (ufault-serve passes its uid
 *	plus 1).  While processes of two tenants or more are served at
 *	once, a tenant whose faults took more than 1.25x an equal share of
 *	the server's serving time over the last 25 to 50 ms, and more than
 *	5 ms of it (each fault or window run ahead counted up to 2 ms),
 *	has its faults served at nice 19, and is not run ahead of: the
 *	others get the CPU first.  Only where the serving threads
 *	may raise their priority back (CAP_SYS_NICE, or RLIMIT_NICE 20);
 *	not for hugetlbfs memory.
 */
struct uf_serve_opts {
	const struct uf_serve_range *removed;
	size_t nremoved;
	void (*on_remove)(void *arg, uint64_t start, uint64_t len);
	void *arg;
	unsigned int tenant;
};

/**
 * uf_object_serve_uffd_opts - uf_object_serve_uffd(), with ranges already
 * removed and a report of each removal.
 * @obj: as for uf_object_serve_uffd().
 * @uffd: as for uf_object_serve_uffd().
 * @regions: as for uf_object_serve_uffd().
 * @n: as for uf_object_serve_uffd().
 * @opts: NULL (then it is uf_object_serve_uffd()), or see struct
 *	uf_serve_opts.
 *
 * Both functions wake every region once before serving it: a thread of
 * the process waiting in a fault that an earlier reader of @uffd took and
 * will never answer (a server killed meanwhile) asks again.
 *
 * Return: as uf_object_serve_uffd(); -EINVAL also for a range of
 * @opts->removed that is not page-aligned.
 */
int uf_object_serve_uffd_opts(struct uf_object *obj, int uffd,
			      const struct uf_serve_region *regions, unsigned int n,
			      const struct uf_serve_opts *opts);

/**
 * uf_object_serve_uffd_huge - uf_object_serve_uffd_opts() of memory the
 * other process mapped with pages of @page_size bytes.
 * @obj: as for uf_object_serve_uffd().
 * @uffd: as for uf_object_serve_uffd().
 * @regions: as for uf_object_serve_uffd(); with @page_size 2 MiB, each
 *	region's start, length and offset are multiples of 2 MiB.
 * @n: as for uf_object_serve_uffd().
 * @opts: as for uf_object_serve_uffd_opts() (2 MiB-aligned removals).
 * @page_size: UF_PAGE_SIZE (anonymous memory, also backed by transparent
 *	huge pages: then this is uf_object_serve_uffd_opts()), or 2097152:
 *	memory from hugetlbfs (MAP_HUGETLB, or a file of a hugetlbfs mount),
 *	Firecracker's "huge_pages": "2M".
 *
 * In hugetlbfs memory each fault is served with a copy of its whole
 * 2 MiB page (UFFDIO_COPY takes nothing less there), read ahead in 2 MiB
 * pages for a stream; a balloon's removal reads zeros.  Where the other
 * process can get no huge page (its pool is empty: the copy fails
 * ENOMEM) the access takes SIGBUS (the poison marker on the huge page,
 * counted in uf_stats.oom), as for a store error, never zeros.  Working
 * sets (uf_object_serve_record(), uf_object_serve_prefetch()) are not
 * applied to it.
 *
 * Return: as uf_object_serve_uffd_opts(); -EINVAL also for a region or
 * removal not aligned to @page_size; -EOPNOTSUPP for another @page_size.
 */
int uf_object_serve_uffd_huge(struct uf_object *obj, int uffd,
			      const struct uf_serve_region *regions, unsigned int n,
			      const struct uf_serve_opts *opts, size_t page_size);

/**
 * uf_object_serve_record - record the working set of the next process
 * uf_object_serve_uffd() serves from @obj.
 * @obj: the object served.
 * @path: where uf_object_record_stop() writes the record.
 *
 * As uf_object_record(), but of one process alone: the next one
 * uf_object_serve_uffd() serves from @obj after this call (ufault-serve
 * --record: its first Firecracker client).  Each page of @obj that
 * process faults is recorded, in order of first access; nothing else is
 * (other processes served meanwhile, the mm's own mappings,
 * uf_object_pread()).  While it records, its faults read no readahead
 * and copy only the page faulted on, so that each page it touches is a
 * fault of its own.  The record ends and is written by
 * uf_object_record_stop() (ufault-serve calls it when that process
 * disconnects) or by @obj's last put; if no process was served by then,
 * nothing is written (uf_object_record_stop() returns -ESRCH) and an
 * older record at @path stays.  The file is the one uf_object_record(3)
 * documents, for uf_object_serve_prefetch() or uf_object_prefetch().
 *
 * Return: 0, or -EINVAL (NULL or empty argument, the mm destroyed),
 * -EBUSY (a record or a prefetch of @obj runs, or a working set is armed
 * by uf_object_serve_prefetch()), -ECHILD, -ENOMEM, or the error making
 * the temporary file beside @path.
 */
int uf_object_serve_record(struct uf_object *obj, const char *path);

/**
 * uf_object_serve_prefetch - push the working set recorded in @path into
 * every process uf_object_serve_uffd() serves from @obj from now on.
 * @obj: the object served.
 * @path: a record of uf_object_record() or uf_object_serve_record(), or
 *	NULL to push nothing into the processes served from now on.
 *
 * Reads and checks the file now.  Then for each process served, once
 * uf_object_serve_uffd() has taken it, a thread of its own walks the
 * set in recorded order, a piece at a time (at most a readahead window
 * of one run): it fills the holes of the cache with one store read per
 * run of them, and copies the pages into the process (UFFDIO_COPY) ahead
 * of its faults.  A page the process already has (faulted, or written)
 * and a page its balloon removed are skipped.  Faults are served by the
 * handler threads meanwhile, never behind the push: a fault on a page of
 * the set not yet copied reads the rest of its recorded run at once.
 * Under a cache budget the push makes room as a fault does, so the cache
 * stays inside the budget (the pages it copied are the process's own
 * memory by then).  The push stops when the set is done, the process is
 * gone, or the mm is destroyed; uf_mm_stats() counts the pages it read in
 * readahead_pages.  Processes already served are not affected.
 *
 * Return: 0, or -ENOENT (no file at @path), -EINVAL (NULL @obj, the mm
 * destroyed, or @path not a working-set file: wrong magic, another
 * format version, truncated, damaged, or holding a page twice), -ESTALE
 * (recorded from another version of @obj), -EBUSY (a record of @obj
 * runs), -ECHILD, -ENOMEM, or the error opening or reading @path.  On
 * error nothing changes: a set armed before stays armed.
 */
int uf_object_serve_prefetch(struct uf_object *obj, const char *path);

/**
 * uf_object_attach - an object served by another process: the one that
 * listens on the Unix socket @socket (ufault-serve(1), or any program
 * that passes its connections to uf_object_serve_client()).
 * @mm: the mm of this process that the object belongs to.
 * @socket: the server's socket path.
 * @oflags: O_RDONLY or O_RDWR.
 * @objp: set to the object (one reference) on success.
 *
 * uf_mmap() it like any object.  Its mappings map the server's cache
 * itself (its memfd): a page that any client or the server has cached is
 * mapped by the kernel with no fault, and N clients hold one copy of each
 * page.  Misses are served by the server, to which this process hands a
 * userfaultfd of its own.  Shared writes are seen by every client and
 * the server at once; they reach the store at any client's uf_msync() or
 * uf_object_sync(), or the server's own sync: the server takes every
 * cached page a client's shared writable mapping shows as dirty (more
 * writeback, no write lost).  uf_mmap(), uf_munmap() and uf_mprotect()
 * tell the server before they return; uf_object_pread(), _pwrite(),
 * _truncate(), _punch_hole() and _sync() are calls to it;
 * uf_object_size() is the cache's size.  A truncate reaches every
 * client's mappings (SIGBUS past the end).  The mappings are not
 * inherited by fork() (MADV_DONTFORK), uf_find_vma() does not return them
 * and uf_remap_file_pages() does not apply; record and prefetch are the
 * server's (-EOPNOTSUPP here); unmap them with uf_munmap(), never
 * munmap() or mremap().
 *
 * The server's table of this process's mappings of the object holds at
 * most 4096 (each piece uf_mprotect() makes of one counts): past it,
 * uf_mmap() and uf_mprotect() fail with -ENOMEM.
 *
 * O_RDONLY: this process maps the object read-only or privately, and
 * uf_object_pwrite(), _truncate() and _punch_hole() fail with -EROFS
 * (_sync() returns 0: nothing here is dirty).  The server enforces it
 * whatever the client sends: it hands an O_RDONLY client a read-only file
 * of its cache, whose inode (mode 0400, the server's uid) nobody but the
 * server's uid and root can reopen writable through /proc/self/fd, and
 * refuses that client's write, truncate, punch and sync requests with
 * -EROFS.
 *
 * The object survives a restart of its server (ufault-serve(1)): when
 * the server hangs up, a thread of this process connects to @socket
 * again and waits in its queue (the supervisor keeps the listening
 * socket); if the next server answers with the cache this process maps
 * (uf_object_adopt_cache()), the mappings and the userfaultfd are handed
 * to it again and threads asleep in a fault are woken.  Meanwhile faults
 * on holes of the cache wait, and so do the calls to the server, which
 * are sent again (each may be done twice); map, unmap and mprotect do
 * not wait.  No server for good -- nobody listens on @socket, or it is
 * gone, or the supervisor gave up (--orphan-timeout: the waiting
 * connection is reset), or a server with another cache -- and every page
 * the cache does not hold takes SIGBUS on its next access, in the thread
 * that makes it (the poison marker, Linux 6.6+), never zeros, never a
 * hang; calls to it fail with -ENOTCONN.
 *
 * Return: 0, or -EINVAL (NULL argument, other @oflags, @mm destroyed),
 * -ENOENT (no such socket), -ECONNREFUSED (nobody listening), -EACCES
 * (the server does not allow this process's uid, or the socket's mode),
 * -EPERM (the server refuses this uid's clients a while: one of them
 * lied to it about its mappings, uf_object_serve_ban()),
 * -EROFS (O_RDWR, and the server's object is read-only), -EPROTO (not a
 * ufault server: it answered something else, or closed), -ETIMEDOUT (no
 * answer within 10 s), -ENAMETOOLONG, -ECHILD (in a fork child), -ENOMEM,
 * -EOPNOTSUPP (no userfaultfd for shared memory here), or the error of
 * socket(2) or connect(2).
 */
int uf_object_attach(struct uf_mm *mm, const char *socket, int oflags, struct uf_object **objp);

/**
 * uf_object_serve_client - serve @obj to the ufault client (a process in
 * uf_object_attach()) that connected to the server's socket @sock.
 * @obj: the object served.
 * @sock: an accepted Unix stream socket.  On success ufault has its own
 *	duplicate, set blocking; the caller may close its fd, or poll it
 *	with no events to learn when the client has gone (POLLHUP).
 * @error: 0, or a negative errno to refuse the client with: it is sent
 *	at once (-EACCES: the peer's uid is not allowed; the client's
 *	uf_object_attach() returns it) and returned.
 *
 * Call it when @sock is readable, before reading anything from it: it
 * peeks at the bytes there.  The client's requests count as those of
 * tenant uid + 1 (its SO_PEERCRED; struct uf_serve_opts' @tenant).  A client is served by a thread of @obj's
 * mm until it goes (each client costs nothing once gone: its address
 * space and fds are freed) or until uf_mm_destroy(), which first gives
 * every page a client has not received the poison marker.
 *
 * Return: 0 (served), -EAGAIN (the first bytes have not all come: call
 * again when readable), -EPROTO (not a ufault client: nothing was read,
 * the bytes are another protocol's, e.g. Firecracker's JSON), @error
 * when refusing, -EPERM (refused, and told so: a client of the peer's
 * uid lied about its mappings lately, uf_object_serve_ban()), -EINVAL (NULL @obj, bad @sock or @error, @obj attached
 * itself, or its mm destroyed), -ECHILD (in a fork child), -ENOMEM, or
 * the error of recv(2).
 */
int uf_object_serve_client(struct uf_object *obj, int sock, int error);

/**
 * uf_object_serve_ban - is @uid's next ufault client refused?  A client
 * served by uf_object_serve_client() that tells the server a file offset
 * for its mapping other than the one it maps (its faults then name a page
 * the server already holds, at the same address, again and again: 8 in a
 * row) gets SIGBUS at that access, and its connection is ended (every
 * page it has not received poisoned, its calls failing with -ENOTCONN).
 * Its uid's next clients are refused with -EPERM for 1 s, twice as long
 * at each lie after, up to 64 s; lies 10 minutes apart start again at
 * 1 s.  Root is no exception.  Kept for the last 16 uids that lied.
 * @obj: the object served.
 * @uid: the peer's uid.
 * @pidp: if not NULL, set to the pid of the client whose lie began the
 *	ban (when there is one).
 *
 * Return: the seconds the ban has left, rounded up; 0 if none; -EINVAL
 * (NULL @obj).
 */
int uf_object_serve_ban(struct uf_object *obj, uid_t uid, pid_t *pidp);

/**
 * uf_object_cache_fd - a file descriptor of @obj's page cache (a memfd),
 * for another process to adopt with uf_object_adopt_cache().
 * @obj: an object of this process (not attached).
 *
 * The fd (close-on-exec) refers to the cache itself: the pages ufault
 * filled, and every write made to them, as long as any fd or mapping of
 * it lives.  Keep it, do not read or write it, and never map it: a touch
 * of a page the cache does not hold would put zeros there.  ufault-serve
 * hands it to its supervisor, so that the next server keeps the cache its
 * ufault clients map.
 *
 * Return: the new fd, or -EINVAL (NULL @obj, an attached object, the mm
 * destroyed), -ECHILD (in a fork child), or the error of fcntl(2).
 */
int uf_object_cache_fd(struct uf_object *obj);

/**
 * uf_object_adopt_cache - make the memfd @fd, which uf_object_cache_fd()
 * gave for an earlier object of the same store (in a process since
 * gone), @obj's page cache in place of its own.
 * @obj: the object, just opened: not mapped, nothing cached, and no
 *	process served by its mm yet.
 * @fd: the memfd, open for reading and writing.  ufault makes its own
 *	duplicate: the caller keeps @fd.
 *
 * Every page @fd holds is taken as present, and, when @obj is writable,
 * as dirty (which of them the earlier process had written back is not
 * known): each reaches the store at the next sync, so no write made to
 * the cache is lost, at the cost of writing back what was clean.  Holes
 * are filled from the store as usual.  If @fd's size differs from the
 * store's (a truncate the earlier process had not finished), the store's
 * size is taken.  The pages count against the cache budget, and full 2 MiB
 * extents are collapsed as if filled.  The store must hold what it held
 * when the earlier process died: nothing checks that no other program
 * wrote it meanwhile.
 *
 * Return: 0 (also when @fd is already @obj's cache), -EINVAL (NULL @obj,
 * bad @fd, not a memfd, an attached object, the mm destroyed), -EBADF
 * (@fd not open for writing), -EBUSY (@obj is mapped or caches pages, or
 * its mm serves a process), -ESTALE (@obj is read-only and @fd's size is
 * not the store's), -EFBIG, -ECHILD, -ENOMEM.  On -EBUSY, -ESTALE and the
 * argument errors nothing changed; on -ENOMEM the object must be put.
 */
int uf_object_adopt_cache(struct uf_object *obj, int fd);

#ifdef __cplusplus
}
#endif
#endif /* UFAULT_H */
