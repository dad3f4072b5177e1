// SPDX-License-Identifier: MIT
/*
 * The fault path, top to bottom.
 *
 *   a thread touches a missing page
 *     -> the kernel queues a userfaultfd event and puts the thread to sleep
 *   uf_handler_thread() reads the event
 *     -> handle_fault(): find the VMA and the object page (pgoff)
 *     -> the VMA's ->fault() (or the ->nopage adapter) finds the page:
 *          returns a page         -> install_page() copies it in
 *          installed it itself    -> uf_vm_insert_page()/uf_vm_insert_pfn()
 *          says SIGBUS / OOM      -> deliver_sigbus()
 *     -> wake the thread, which retries the access and finds the page
 *
 * For object mappings ->fault is uf_filemap_fault() (filemap.c): it fills
 * the object's page cache (a memfd), and the retried access is mapped by
 * the kernel itself.
 *
 * Lock order: mm->vma_lock -> obj->invalidate_lock -> obj->page_lock.
 * handle_fault() holds none of them while ->fault() runs: the VMA is kept
 * alive by a reference (see vma.c).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The fault this handler thread is serving: uf_vm_insert_page() notes
 * whether the faulting page itself was installed. */
static __thread struct {
	struct uf_vma *vma;
	unsigned long page;
	bool installed;
} cur;
static __thread bool in_handler;

bool uf_in_handler(void)
{
	return in_handler;
}

void uf_uffd_wake(struct uf_mm *mm, unsigned long addr, size_t len)
{
	struct uffdio_range r = { .start = addr, .len = len };

	ioctl(mm->uffd, UFFDIO_WAKE, &r);
}

/*
 * UFFDIO_COPY @len bytes to @dst with @mode (UFFDIO_COPY_MODE_*).  *copied
 * (if given) grows by the bytes that landed, also before an error (EEXIST:
 * a page is already present there).
 */
int uf_uffd_copy(struct uf_mm *mm, unsigned long dst, const void *src, size_t len,
		 uint64_t mode, size_t *copied)
{
	struct uffdio_copy c = {
		.dst = dst, .src = (unsigned long)src, .len = len, .mode = mode,
	};

	while (ioctl(mm->uffd, UFFDIO_COPY, &c) < 0) {
		int ret = -errno;

		if (c.copy > 0) {
			/* partial: go on from where it stopped */
			c.dst += c.copy;
			c.src += c.copy;
			c.len -= c.copy;
			if (copied)
				*copied += c.copy;
			c.copy = 0;
			continue;
		}
		if (ret == -EAGAIN)	/* mappings changing: retry */
			continue;
		return ret;
	}
	if (copied)
		*copied += c.copy;
	return 0;
}

static void count_fault(struct uf_vma *vma, int type)
{
	switch (type) {
	case UF_FAULT_MINOR:
		uf_add(&vma->stats.minor_faults, 1);
		uf_add(&vma->mm->stats.minor_faults, 1);
		break;
	case UF_FAULT_MAJOR:
		uf_add(&vma->stats.major_faults, 1);
		uf_add(&vma->mm->stats.major_faults, 1);
		break;
	case UF_FAULT_OOM:
		uf_add(&vma->stats.oom, 1);
		uf_add(&vma->mm->stats.oom, 1);
		break;
	default:
		uf_add(&vma->stats.sigbus, 1);
		uf_add(&vma->mm->stats.sigbus, 1);
		break;
	}
}

static void count_latency(struct uf_vma *vma, const struct timespec *t0)
{
	struct timespec t1;
	uint64_t us;
	int b = 0;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = (uint64_t)(t1.tv_sec - t0->tv_sec) * 1000000 +
	     (uint64_t)((t1.tv_nsec - t0->tv_nsec) / 1000);
	while (us >= 2 && b < UF_LAT_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	uf_add(&vma->stats.lat_us[b], 1);
	uf_add(&vma->mm->stats.lat_us[b], 1);
}

/*
 * The access cannot be served: that access, and only it, gets SIGBUS with
 * si_addr the faulting address.  Operation mappings get a poison marker
 * (UFFDIO_POISON: the kernel raises SIGBUS itself on every later touch, and
 * a system call touching it fails with EFAULT).  Object mappings, and
 * kernels without poison, get a queued SIGBUS for the faulting thread,
 * which interrupts its wait; the next touch faults again.
 */
static void deliver_sigbus(struct uf_vma *vma, unsigned long addr, pid_t tid)
{
	struct uf_mm *mm = vma->mm;
	siginfo_t si;

	if ((vma->flags & VMA_OPS) && (mm->features & UFFD_FEATURE_POISON)) {
		struct uffdio_poison {
			struct uffdio_range range;
			__u64 mode;
			__s64 updated;
		} p = { .range = { addr & PAGE_MASK, PAGE_SIZE } };

		if (ioctl(mm->uffd, _IOWR(UFFDIO, 0x08, struct uffdio_poison), &p) == 0)
			return;		/* wakes the thread, which takes SIGBUS */
	}
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = BUS_ADRERR;
	si.si_addr = (void *)addr;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGBUS, &si);
}

/* Install a page returned by ->fault. */
static int install_page(struct uf_vma *vma, unsigned long page_addr, struct uf_page *page)
{
	int ret = uf_vm_insert_page(vma, page_addr, page);

	return ret == -EEXIST ? 0 : ret;
}

/*
 * The deprecated ->nopage, called through ->fault's contract.  nopage has
 * no pgoff: it is told the address.  A NULL return without a type means
 * SIGBUS, as NOPAGE_SIGBUS did.
 */
static struct uf_page *nopage_adapter(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	int type = UF_FAULT_SIGBUS;
	struct uf_page *page;

	page = vma->vm_ops->nopage(vma, fdata->address & PAGE_MASK, &type);
	fdata->type = type;
	if (page && type != UF_FAULT_MINOR && type != UF_FAULT_MAJOR)
		fdata->type = UF_FAULT_MINOR;
	return page;
}

static void handle_fault(struct uf_mm *mm, const struct uffd_msg *msg)
{
	unsigned long addr = msg->arg.pagefault.address;
	unsigned long page_addr = addr & PAGE_MASK;
	pid_t tid = (pid_t)msg->arg.pagefault.feat.ptid;
	struct uf_fault_data fdata;
	struct uf_page *page;
	struct uf_vma *vma;
	struct timespec t0;
	bool nonlinear;
	uint64_t pgoff;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	vma = uf_vma_lookup_get(mm, addr, &pgoff, &nonlinear);
	if (!vma) {
		/* unmapped meanwhile: the retry meets the placeholder */
		uf_uffd_wake(mm, page_addr, PAGE_SIZE);
		return;
	}

	if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		/* a write to a clean page (synchronous dirty tracking) */
		uf_handle_wp_fault(vma, addr, pgoff);
		uf_vma_put(vma);
		return;
	}

	fdata.vma = vma;
	fdata.address = addr;
	fdata.pgoff = pgoff;
	fdata.flags = 0;
	if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE)
		fdata.flags |= UF_FAULT_FLAG_WRITE;
	if (nonlinear)
		fdata.flags |= UF_FAULT_FLAG_NONLINEAR;
	fdata.type = UF_FAULT_MINOR;

	cur.vma = vma;
	cur.page = page_addr;
	cur.installed = false;
	uf_set_handler_vma(vma);
	if (vma->vm_ops->fault)
		page = vma->vm_ops->fault(vma, &fdata);
	else
		page = nopage_adapter(vma, &fdata);
	uf_set_handler_vma(NULL);

	if (page) {
		int ret = install_page(vma, page_addr, page);

		uf_page_put(page);
		if (ret == -ENOMEM)
			fdata.type = UF_FAULT_OOM;
		else if (ret)
			fdata.type = UF_FAULT_SIGBUS;
	} else if (fdata.type == UF_FAULT_MINOR || fdata.type == UF_FAULT_MAJOR) {
		/*
		 * ->fault says it installed the page.  An operation mapping
		 * whose ->fault installed nothing would fault forever: that
		 * is a broken ->fault, and the access gets SIGBUS, not a hang.
		 */
		if ((vma->flags & VMA_OPS) && !cur.installed)
			fdata.type = UF_FAULT_SIGBUS;
	} else if (fdata.type != UF_FAULT_OOM) {
		fdata.type = UF_FAULT_SIGBUS;
	}
	cur.vma = NULL;

	count_fault(vma, fdata.type);
	if (fdata.type == UF_FAULT_MINOR || fdata.type == UF_FAULT_MAJOR)
		uf_uffd_wake(mm, page_addr, PAGE_SIZE);
	else
		deliver_sigbus(vma, addr, tid);
	count_latency(vma, &t0);
	uf_vma_put(vma);

	if (mm->budget_pages)
		uf_reclaim(mm);
}

void *uf_handler_thread(void *arg)
{
	struct uf_mm *mm = arg;
	struct pollfd pfd[2] = {
		{ .fd = mm->uffd, .events = POLLIN },
		{ .fd = mm->stopfd, .events = POLLIN },
	};
	struct uffd_msg msgs[16];
	sigset_t all;

	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	in_handler = true;

	for (;;) {
		ssize_t n, i;

		if (poll(pfd, 2, -1) < 0)
			continue;	/* EINTR */
		if (pfd[1].revents)
			break;
		n = read(mm->uffd, msgs, sizeof(msgs));
		if (n <= 0)
			continue;	/* EAGAIN: another handler took them */
		for (i = 0; i < n / (ssize_t)sizeof(msgs[0]); i++) {
			if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
				handle_fault(mm, &msgs[i]);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Pages, and installing them from ->fault                             */
/* ------------------------------------------------------------------ */

struct uf_page {
	int refs;
	void *addr;
	struct uf_mm *mm;
};

UF_EXPORT struct uf_page *uf_page_alloc(struct uf_mm *mm)
{
	struct uf_page *page;

	if (!mm)
		return NULL;
	page = malloc(sizeof(*page));
	if (!page)
		return NULL;
	page->addr = aligned_alloc(PAGE_SIZE, PAGE_SIZE);
	if (!page->addr) {
		free(page);
		return NULL;
	}
	memset(page->addr, 0, PAGE_SIZE);
	page->refs = 1;
	page->mm = mm;
	return page;
}

UF_EXPORT void *uf_page_address(struct uf_page *page)
{
	return page ? page->addr : NULL;
}

UF_EXPORT void uf_page_get(struct uf_page *page)
{
	if (page)
		__atomic_add_fetch(&page->refs, 1, __ATOMIC_RELAXED);
}

UF_EXPORT void uf_page_put(struct uf_page *page)
{
	if (page && __atomic_sub_fetch(&page->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(page->addr);
		free(page);
	}
}

UF_EXPORT int uf_vm_insert_pfn(struct uf_vma *vma, unsigned long address, const void *kaddr)
{
	unsigned long page_addr = address & PAGE_MASK;
	int ret;

	if (!vma || !kaddr || !PAGE_ALIGNED(kaddr) ||
	    address < vma->start || address >= vma->end)
		return -EINVAL;
	if (vma->obj) {
		uint64_t idx = (page_addr - vma->start) >> PAGE_SHIFT;
		uint64_t pgoff;

		pthread_rwlock_rdlock(&vma->mm->vma_lock);
		pgoff = vma->nl_pgoff ? vma->nl_pgoff[idx] & ~NL_WINDOW : vma->pgoff + idx;
		pthread_rwlock_unlock(&vma->mm->vma_lock);
		ret = uf_object_insert(vma->obj, pgoff, kaddr);
		if (ret == 0 || ret == -EEXIST)
			uf_uffd_wake(vma->mm, page_addr, PAGE_SIZE);
	} else {
		ret = uf_uffd_copy(vma->mm, page_addr, kaddr, PAGE_SIZE, 0, NULL);
		if (ret == -EEXIST)
			uf_uffd_wake(vma->mm, page_addr, PAGE_SIZE);
	}
	if ((ret == 0 || ret == -EEXIST) && cur.vma == vma && cur.page == page_addr)
		cur.installed = true;
	return ret;
}

UF_EXPORT int uf_vm_insert_page(struct uf_vma *vma, unsigned long address, struct uf_page *page)
{
	if (!page)
		return -EINVAL;
	return uf_vm_insert_pfn(vma, address, page->addr);
}
