// SPDX-License-Identifier: MIT
/*
 * The fault path, top to bottom.
 *
 *   a thread touches a missing page
 *     -> the kernel queues a userfaultfd event and puts the thread to sleep
 *   a handler thread of the engine (uffd.c) reads the event and hands it
 *   up through the struct uf_uffd_ops of the address space it is in (the
 *   program's own: mm.c; another process's: as.c)
 *     -> fault_serve(): find the VMA and the object page (pgoff), in
 *        the address space's table (as->ops->lookup_get: table.c)
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
 * Locks: the order is in lockorder.h.  uf_fault_handle() holds no ufault
 * lock while ->fault() runs: the VMA is kept alive by a reference (rmap.c).
 */
#define _GNU_SOURCE
#include "fault/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
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

/* The mapping whose fault this thread is serving (uf_munmap() refuses it). */
struct uf_vma *uf_fault_vma(void)
{
	return cur.vma;
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
 * A store error on an object page is answered with the kernel's poison
 * marker (the poison ioctl, Linux 6.6+) and a wake: the faulting thread's retry
 * takes SIGBUS (BUS_ADRERR, si_addr in the page) from the kernel, once,
 * in that access; a system call fails with EFAULT; a thread that blocks
 * or ignores SIGBUS is killed by it, as by any failed kernel fault.  No
 * signal is ever queued from here, so none can arrive late.
 *
 * The marker must then be lifted, so that a later access tries the store
 * again (the kernel retries a failed read too), but not before the
 * faulting thread has retried, or that retry faults again instead of
 * failing.  A thread cannot be asked whether it took the signal, so the
 * marker goes when the first of these says it has:
 *  - the thread has been scheduled since the wake (its run count in
 *    /proc/self/task/TID/schedstat moved): woken from its fault, the
 *    first thing it does is retry the access.  The handler watches for
 *    that for up to POISON_WATCH_NS after the wake (a loaded machine may
 *    take milliseconds to run the thread) and lifts the marker
 *    POISON_GRACE_NS after it, so a program that retries soon (a loop
 *    waiting for the store to come back) reads the store again; later,
 *    the handlers look every millisecond;
 *  - the thread faults on another address (it is past this access);
 *  - POISON_MAX_NS have passed (a thread that was not waiting in this
 *    fault when it was poisoned, or a kernel without schedstat).
 * Lifted early, the retry just faults and reads the store again; an
 * access by another thread in between gets SIGBUS without a store read.
 */
#define POISON_MAX_NS	(50 * 1000 * 1000)
#define POISON_WATCH_NS	(20 * 1000 * 1000)
#define POISON_GRACE_NS	(10 * 1000)
#define RUNS_UNKNOWN	UINT64_MAX

/* How many times thread @tid has been scheduled in, RUNS_UNKNOWN when
 * this kernel does not say, 0 when the thread is gone. */
static uint64_t thread_runs(pid_t tid)
{
	char path[64], buf[128];
	unsigned long long cpu, wait, runs;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && access("/proc/self/schedstat", F_OK) == 0 ? 0 : RUNS_UNKNOWN;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return RUNS_UNKNOWN;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu %llu", &cpu, &wait, &runs) != 3)
		return RUNS_UNKNOWN;
	return runs;
}

/* Is there a page (not a marker) at @addr?  Then the marker is gone. */
static bool page_present(struct uf_mm *mm, unsigned long addr)
{
	uint64_t e;

	if (mm->pagemap_fd < 0 ||
	    pread(mm->pagemap_fd, &e, sizeof(e), (off_t)(addr / PAGE_SIZE * sizeof(e))) != sizeof(e))
		return false;
	return e >> 63;
}

/* Locking: mm->vma_lock held shared, mm->poison_lock held. */
static void __poison_lift(struct uf_mm *mm, unsigned int i)
{
	struct uf_poison *p = &mm->poison[i];
	struct uf_vma *vma = mm->ops->find(mm, p->addr);

	/*
	 * A marker in a mapping unmapped meanwhile went with it.  The marker
	 * is the whole PTE: zapping it loses no data, unless it was replaced
	 * (by a truncate's zap, then a private copy) -- hence the check.
	 */
	if (vma && vma->id == p->vma_id && !page_present(mm, p->addr)) {
		struct uf_range r = { p->addr, p->addr + PAGE_SIZE };

		mm->ops->zap(mm, &r, 1);
		if (__atomic_load_n(&vma->flags, __ATOMIC_RELAXED) & VMA_REG_WP)
			uf_vma_writeprotect(vma, p->addr, PAGE_SIZE);
	}
	*p = mm->poison[__atomic_sub_fetch(&mm->npoison, 1, __ATOMIC_RELAXED)];
}

/*
 * Lift the markers whose thread has retried (see above): all with @all;
 * with @tid, also those of thread @tid on other pages than @addr (it is
 * faulting there now).
 * Locking: takes mm->vma_lock shared, then mm->poison_lock.
 */
static void poison_expire(struct uf_mm *mm, bool all, pid_t tid, unsigned long addr)
{
	uint64_t now = uf_now_ns();
	unsigned int i = 0;

	pthread_rwlock_rdlock(&mm->vma_lock);
	pthread_mutex_lock(&mm->poison_lock);
	while (i < mm->npoison) {
		struct uf_poison *p = &mm->poison[i];

		if (all || now - p->when_ns >= POISON_MAX_NS ||
		    (tid && p->tid == tid && p->addr != addr) ||
		    (p->runs != RUNS_UNKNOWN && thread_runs(p->tid) != p->runs))
			__poison_lift(mm, i);
		else
			i++;
	}
	pthread_mutex_unlock(&mm->poison_lock);
	pthread_rwlock_unlock(&mm->vma_lock);
}

/* Remember a poison marker on an object page, to lift it (above); with the
 * table full, every marker is lifted at once.  @runs: thread_runs(@tid)
 * before the wake.
 * Locking: takes mm->poison_lock (and what poison_expire() takes). */
static void poison_note(struct uf_mm *mm, struct uf_vma *vma, unsigned long page_addr,
			pid_t tid, uint64_t runs)
{
	const unsigned int max = sizeof(mm->poison) / sizeof(mm->poison[0]);

	for (;;) {
		pthread_mutex_lock(&mm->poison_lock);
		if (mm->npoison < max) {
			mm->poison[__atomic_fetch_add(&mm->npoison, 1, __ATOMIC_RELAXED)] =
				(struct uf_poison){ .addr = page_addr, .vma_id = vma->id,
						    .when_ns = uf_now_ns(), .tid = tid, .runs = runs };
			pthread_mutex_unlock(&mm->poison_lock);
			return;
		}
		pthread_mutex_unlock(&mm->poison_lock);
		poison_expire(mm, true, 0, 0);
	}
}

/*
 * Wait (up to POISON_WATCH_NS) for thread @tid to be scheduled after its
 * wake, then POISON_GRACE_NS for its retry to meet the marker, and lift
 * the markers whose thread has retried.  Error path only: a handler
 * spends microseconds here, at most POISON_WATCH_NS.
 */
static void poison_watch(struct uf_mm *mm, pid_t tid, uint64_t runs)
{
	uint64_t end = uf_now_ns() + POISON_WATCH_NS, ran;
	struct timespec tick = { 0, 20 * 1000 };

	if (runs == RUNS_UNKNOWN)
		return;
	while (thread_runs(tid) == runs) {
		if (uf_now_ns() >= end)
			return;		/* not waiting in this fault: the table's */
		nanosleep(&tick, NULL);	/* leave the CPU to the woken thread */
	}
	/* spin, not sleep: a sleep's timer slack alone is 50 us */
	ran = uf_now_ns();
	while (uf_now_ns() - ran < POISON_GRACE_NS)
		;
	poison_expire(mm, false, 0, 0);
}

/* How long a handler may sleep with no event (->idle_ms, mm.c): while
 * poison markers wait to be lifted, look every millisecond. */
int uf_fault_idle_ms(struct uf_mm *mm)
{
	return __atomic_load_n(&mm->npoison, __ATOMIC_RELAXED) ? 1 : -1;
}

/*
 * uf_fault_poison_page - poison @page_addr of @vma and wake its waiters.  A write-protect marker
 * holding the PTE (a WP-registered mapping) is lifted first;
 * __poison_lift() puts it back.  Only while @vma is still there as the
 * kernel maps it (the program may have moved or unmapped it, and put
 * another mapping there): else -ESTALE, and the faulting thread's retry
 * meets what is there now.
 * Locking: takes mm->vma_lock shared.
 */
int uf_fault_poison_page(struct uf_vma *vma, unsigned long page_addr)
{
	pthread_rwlock_t *lock = uf_vma_table_lock(vma);
	struct uf_uffd *u = uf_vma_uffd(vma);
	int ret;

	for (;;) {
		pthread_rwlock_rdlock(lock);
		if (__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE) || page_addr < vma->start ||
		    page_addr >= vma->end) {
			pthread_rwlock_unlock(lock);
			return -ESTALE;
		}
		ret = uf_uffd_poison_mapped(u, page_addr, PAGE_SIZE);
		if (ret == -EEXIST && (__atomic_load_n(&vma->flags, __ATOMIC_RELAXED) & VMA_REG_WP)) {
			ret = uf_uffd_writeprotect_mapped(u, page_addr, PAGE_SIZE, false, true);
			if (!ret)
				ret = uf_uffd_poison_mapped(u, page_addr, PAGE_SIZE);
		}
		pthread_rwlock_unlock(lock);
		if (ret != -EAGAIN)
			return ret;
		uf_uffd_settle(u);	/* the table catches up first */
	}
}

/*
 * The access cannot be served: the faulting thread, and only it, must take
 * SIGBUS with si_addr the faulting address, as from the kernel.
 *  - An object page past EOF (truncated while the fault was queued): a
 *    wake is enough; the retried access meets the memfd's size and the
 *    kernel raises SIGBUS (BUS_ADRERR) itself.
 *  - Otherwise what an error does is the address space's (as->ops->sigbus):
 *    uf_fault_sigbus() below in the program's own, as.c's in another's.
 */
static void deliver_sigbus(struct uf_vma *vma, unsigned long addr, pid_t tid, bool eof)
{
	if (eof) {
		uf_uffd_wake(uf_vma_uffd(vma), addr & PAGE_MASK, PAGE_SIZE);
		return;
	}
	vma->as->ops->sigbus(vma, addr, tid);
}

/*
 * uf_fault_sigbus - ->sigbus of the program's own address space:
 *  - An operation mapping: the page gets a poison marker and keeps it:
 *    every later touch takes SIGBUS (BUS_ADRERR) from the kernel, and a
 *    system call touching it fails with EFAULT.
 *  - An object page inside EOF (a store error): a poison marker, lifted
 *    once the thread has retried (see above).  If the page is present
 *    (filled meanwhile) or poisoned already, a wake lets the retry see it.
 *  - Without the poison ioctl (before 6.6), SIGBUS is queued to the faulting
 *    thread (si_code SI_QUEUE, si_addr exact), which interrupts its wait;
 *    a system call then spins and a thread that blocks or ignores SIGBUS
 *    waits: ufault(7) says so.
 */
void uf_fault_sigbus(struct uf_vma *vma, unsigned long addr, pid_t tid)
{
	unsigned long page_addr = addr & PAGE_MASK;
	struct uf_mm *mm = vma->mm;
	siginfo_t si;
	uint64_t runs;
	int ret;

	if (!vma->obj) {
		ret = uf_fault_poison_page(vma, page_addr);
	} else {
		runs = thread_runs(tid);	/* before the wake */
		ret = uf_fault_poison_page(vma, page_addr);
		if (ret == 0) {
			poison_note(mm, vma, page_addr, tid, runs);
			poison_watch(mm, tid, runs);
		}
	}
	if (ret == 0)
		return;
	if (ret != -ENOSYS) {
		/* EEXIST: present, or poisoned already; else the mapping is
		 * changing: either way the retry sees what is there now */
		uf_uffd_wake(&mm->uffd, page_addr, PAGE_SIZE);
		return;
	}
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = SI_QUEUE;
	si.si_addr = (void *)addr;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGBUS, &si) < 0)
		uf_uffd_wake(&mm->uffd, page_addr, PAGE_SIZE);	/* gone: let it retry */
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
static struct uf_page *nopage_adapter(struct uf_vma *vma, const struct uf_vm_operations *ops,
				      struct uf_fault_data *fdata)
{
	int type = UF_FAULT_SIGBUS;
	struct uf_page *page;

	page = ops->nopage(vma, fdata->address & PAGE_MASK, &type);
	fdata->type = type;
	if (page && type != UF_FAULT_MINOR && type != UF_FAULT_MAJOR)
		fdata->type = UF_FAULT_MINOR;
	return page;
}

/*
 * Serve one address at a time across handler threads.  Two threads that
 * fault on one page raise two events; were they served at once, one
 * handler's wake could let a thread through whose own fault the other
 * handler is answering with SIGBUS, which would then land after the
 * access.  Served in turn, the second finds the page present (minor), or
 * fails in turn.  @slot is this handler's index, @tid the faulting thread.
 * Locking: takes mm->inflight_lock; no other lock held.
 */
static void inflight_begin(struct uf_mm *mm, unsigned int slot, unsigned long page_addr,
			   pid_t tid)
{
	unsigned int i;

	pthread_mutex_lock(&mm->inflight_lock);
	for (i = 0; i < __atomic_load_n(&mm->uffd.nthreads, __ATOMIC_ACQUIRE); i++) {
		if (i != slot && mm->inflight[i] == page_addr) {
			mm->inflight_wait[slot] = page_addr;
			mm->inflight_wait_tid[slot] = tid;
			pthread_cond_wait(&mm->inflight_cond, &mm->inflight_lock);
			mm->inflight_wait[slot] = 0;
			i = (unsigned int)-1;	/* look again from the start */
		}
	}
	mm->inflight[slot] = page_addr;
	pthread_mutex_unlock(&mm->inflight_lock);
}

/*
 * Is another handler waiting to serve another thread's fault at
 * @page_addr?  Then a store error is passed on instead of answered with
 * poison, whose wake would give that thread SIGBUS without its own try at
 * the store (the kernel lets a second waiter read the page again).  The
 * waiting handler serves next and answers every waiter: a wake if its
 * read works, else poison -- it does not pass the error on again, so
 * threads that keep re-faulting (interrupted by signals) cannot keep the
 * error from ever being answered.  Events of thread @tid itself (its
 * re-faults) are no reason to wait.
 * Locking: takes mm->inflight_lock.
 */
static bool inflight_pass_error(struct uf_mm *mm, unsigned int slot, unsigned long page_addr,
				pid_t tid)
{
	unsigned int i, n = __atomic_load_n(&mm->uffd.nthreads, __ATOMIC_ACQUIRE);
	bool pass = false;

	pthread_mutex_lock(&mm->inflight_lock);
	if (__atomic_load_n(&mm->inflight_deferred, __ATOMIC_RELAXED) == page_addr) {
		__atomic_store_n(&mm->inflight_deferred, 0, __ATOMIC_RELAXED);
	} else {
		for (i = 0; i < n && !pass; i++)
			pass = i != slot && mm->inflight_wait[i] == page_addr &&
			       mm->inflight_wait_tid[i] != tid;
		if (pass)
			__atomic_store_n(&mm->inflight_deferred, page_addr, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&mm->inflight_lock);
	return pass;
}

static void inflight_end(struct uf_mm *mm, unsigned int slot)
{
	pthread_mutex_lock(&mm->inflight_lock);
	mm->inflight[slot] = 0;
	pthread_cond_broadcast(&mm->inflight_cond);
	pthread_mutex_unlock(&mm->inflight_lock);
}

/*
 * The VMA of the fault @msg in @as, with a reference, and the object page
 * it shows; NULL when the fault is answered already: no VMA there (the
 * address space's ->no_vma), or a write to a write-protected page (its
 * ->wp_fault: dirty tracking).
 */
static struct uf_vma *fault_vma_get(struct uf_as *as, const struct uffd_msg *msg,
				    uint64_t *pgoff, bool *nonlinear)
{
	unsigned long addr = msg->arg.pagefault.address;
	struct uf_vma *vma = as->ops->lookup_get(as, addr, pgoff, nonlinear);

	if (!vma) {
		as->ops->no_vma(as, addr & PAGE_MASK);
		return NULL;
	}
	if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		as->ops->wp_fault(vma, addr, *pgoff);
		uf_vma_put(vma);
		return NULL;
	}
	return vma;
}

/*
 * Call the VMA's ->fault (or the ->nopage adapter) for @fdata and install
 * the page it returns; fdata->type is the outcome.  Return the type
 * ->fault gave (what is counted should the VMA go meanwhile).
 */
static int fault_call(struct uf_as *as, struct uf_fault_data *fdata, pid_t tid)
{
	struct uf_vma *vma = fdata->vma;
	unsigned long page_addr = fdata->address & PAGE_MASK;
	const struct uf_vm_operations *ops = __atomic_load_n(&vma->vm_ops, __ATOMIC_ACQUIRE);
	bool check = as->ops->unresolved && vma->obj;
	bool cached = check && uf_pagebits_test(&vma->obj->pages, UF_PG_PRESENT, fdata->pgoff);
	struct uf_page *page;
	int typed;

	cur.vma = vma;
	cur.page = page_addr;
	cur.installed = false;
	if (ops->fault)
		page = ops->fault(vma, fdata);
	else
		page = nopage_adapter(vma, ops, fdata);
	if (check && !page && fdata->type == UF_FAULT_MINOR &&
	    as->ops->unresolved(as, tid, page_addr, cached)) {
		fdata->type = UF_FAULT_SIGBUS;
		uf_count_sigbus_cause(vma->mm, vma, UF_SIGBUS_OTHER);
	}
	typed = fdata->type;

	if (page) {
		int ret = install_page(vma, page_addr, page);

		uf_page_put(page);
		if (ret == -ENOMEM)
			fdata->type = UF_FAULT_OOM;
		else if (ret)
			fdata->type = UF_FAULT_SIGBUS;
	} else if (fdata->type == UF_FAULT_MINOR || fdata->type == UF_FAULT_MAJOR) {
		/*
		 * ->fault says it installed the page.  An operation mapping
		 * whose ->fault installed nothing would fault forever: that
		 * is a broken ->fault, and the access gets SIGBUS, not a hang.
		 */
		if (!vma->obj && !cur.installed)	/* an operation mapping */
			fdata->type = UF_FAULT_SIGBUS;
	} else if (fdata->type != UF_FAULT_OOM) {
		fdata->type = UF_FAULT_SIGBUS;
	}
	cur.vma = NULL;
	return typed;
}

/*
 * Count the fault and answer it: a wake, an error passed on to the
 * handler waiting to serve the same page, or SIGBUS.  false: the VMA was
 * unmapped while ->fault ran (woken only).
 */
static bool fault_answer(struct uf_mm *mm, unsigned int slot, struct uf_fault_data *fdata,
			 pid_t tid, int typed, const struct timespec *t0)
{
	struct uf_vma *vma = fdata->vma;
	unsigned long addr = fdata->address, page_addr = addr & PAGE_MASK;

	if (__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE)) {
		/* unmapped while fault() ran: the retry meets the placeholder
		 * and takes SIGSEGV, as for any unmapped address */
		count_fault(vma, typed);
		uf_uffd_wake(uf_vma_uffd(vma), page_addr, PAGE_SIZE);
		return false;
	}
	/* count before the wake: a thread that reads the statistics after
	 * its access returns must see its own fault (one woken by the fill's
	 * copy already waits for this, in uf_fault_settle()) */
	count_fault(vma, fdata->type);
	count_latency(vma, t0);
	__atomic_store_n(&mm->serving_tid[slot], 0, __ATOMIC_RELEASE);
	if (fdata->type == UF_FAULT_MINOR || fdata->type == UF_FAULT_MAJOR) {
		/* a passed-on error is answered (page atomic: a stale one only
		 * costs a later error its pass) */
		if (__atomic_load_n(&mm->inflight_deferred, __ATOMIC_RELAXED) == page_addr)
			__atomic_store_n(&mm->inflight_deferred, 0, __ATOMIC_RELAXED);
		if (!(fdata->flags & UF_FAULT_FLAG_WOKEN))
			uf_uffd_wake(uf_vma_uffd(vma), page_addr, PAGE_SIZE);
	} else if (vma->obj && !(fdata->flags & UF_FAULT_FLAG_EOF) &&
		   inflight_pass_error(mm, slot, page_addr, tid)) {
		;	/* the next handler answers this thread too */
	} else {
		deliver_sigbus(vma, addr, tid, fdata->flags & UF_FAULT_FLAG_EOF);
	}
	return true;
}

/* Serve the fault @msg of address space @as.  No lock held. */
static void __handle_fault(struct uf_as *as, unsigned int slot, const struct uffd_msg *msg)
{
	struct uf_mm *mm = as->mm;
	unsigned long addr = msg->arg.pagefault.address;
	pid_t tid = (pid_t)msg->arg.pagefault.feat.ptid;
	struct uf_fault_data fdata;
	struct uf_vma *vma;
	struct timespec t0;
	bool nonlinear, answered;
	uint64_t pgoff;
	int typed;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* this thread is past any access it was poisoned for elsewhere
	 * (markers are the program's: another process's tid is no hint) */
	if (__atomic_load_n(&mm->npoison, __ATOMIC_RELAXED))
		poison_expire(mm, false, as->ops->remote ? 0 : tid, addr & PAGE_MASK);
	vma = fault_vma_get(as, msg, &pgoff, &nonlinear);
	if (!vma)
		return;

	fdata.vma = vma;
	fdata.address = addr;
	fdata.pgoff = pgoff;
	fdata.flags = 0;
	if (msg->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE)
		fdata.flags |= UF_FAULT_FLAG_WRITE;
	if (nonlinear)
		fdata.flags |= UF_FAULT_FLAG_NONLINEAR;
	fdata.type = UF_FAULT_MINOR;
	typed = fault_call(as, &fdata, tid);
	answered = fault_answer(mm, slot, &fdata, tid, typed, &t0);
	uf_vma_put(vma);
	if (answered && mm->budget_pages)
		uf_reclaim(mm, 0);
}

/*
 * fault_serve - serve a fault of address space @as (any: the program's
 * own, a fork child's, a served process's, an attached client's).
 */
static void fault_serve(struct uf_as *as, unsigned int slot, const struct uffd_msg *msg)
{
	struct uf_mm *mm = as->mm;
	unsigned long page_addr = msg->arg.pagefault.address & PAGE_MASK;
	pid_t tid = (pid_t)msg->arg.pagefault.feat.ptid;

	/* (a child's page and the parent's at one address are served in
	 * turn too: it costs a wait, never a wrong answer) */
	inflight_begin(mm, slot, page_addr, tid);
	__atomic_store_n(&mm->serving_tid[slot], tid, __ATOMIC_RELEASE);
	__handle_fault(as, slot, msg);
	__atomic_store_n(&mm->serving_tid[slot], 0, __ATOMIC_RELEASE);
	inflight_end(mm, slot);
}

/* ->fault of the mm's engine (mm.c): the program's own address space. */
void uf_fault_handle(void *owner, unsigned int slot, const struct uffd_msg *msg)
{
	struct uf_mm *mm = owner;

	fault_serve(&mm->self, slot, msg);
}

/* ->fault of another process's userfaultfd (as.c). */
void uf_fault_as(void *owner, unsigned int slot, const struct uffd_msg *msg)
{
	fault_serve(owner, slot, msg);
}

/*
 * uf_fault_settle - wait until the calling thread's own fault, if a handler
 * still serves it, is counted.  A fill's copy can wake the faulting thread
 * before the handler has counted the fault (it counts right after); a
 * thread that reads the statistics after its access returns must see its
 * own fault.  Waits for the calling thread's fault only, so microseconds.
 */
void uf_fault_settle(struct uf_mm *mm)
{
	unsigned int i, n = __atomic_load_n(&mm->uffd.nthreads, __ATOMIC_ACQUIRE);
	pid_t self = gettid();

	for (i = 0; i < n; i++)
		while (__atomic_load_n(&mm->serving_tid[i], __ATOMIC_ACQUIRE) == self)
			sched_yield();
}

/* A handler woke (->idle, mm.c): lift the markers whose thread retried. */
void uf_fault_idle(struct uf_mm *mm)
{
	if (__atomic_load_n(&mm->npoison, __ATOMIC_RELAXED))
		poison_expire(mm, false, 0, 0);
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
	uint64_t pgoff = 0;
	bool inside;
	int ret = 0;

	if (!vma || !kaddr || !PAGE_ALIGNED(kaddr))
		return -EINVAL;
	if (uf_forked(vma->mm))
		return -ECHILD;
	/*
	 * The program may unmap or move part of the mapping meanwhile, and
	 * put another there: an operation mapping's page is copied in only
	 * while the table is known to be the kernel's (uf_uffd_copy_mapped),
	 * else the events are applied and the address looked at again.
	 */
	/* (a fork child's VMA: its table, through its userfaultfd) */
	for (;;) {
		pthread_rwlock_rdlock(uf_vma_table_lock(vma));
		/* (an object's cache takes the page whatever the mapping) */
		inside = address >= vma->start && address < vma->end &&
			 (vma->obj || !__atomic_load_n(&vma->dead, __ATOMIC_ACQUIRE));
		if (inside && vma->obj)
			pgoff = __uf_vma_pgoff(vma, page_addr);
		if (!inside || vma->obj) {
			pthread_rwlock_unlock(uf_vma_table_lock(vma));
			break;
		}
		ret = uf_uffd_copy_mapped(uf_vma_uffd(vma), page_addr, kaddr, PAGE_SIZE,
					  cur.vma == vma && cur.page == page_addr ?
					  UF_UFFD_DONTWAKE : 0, NULL);
		pthread_rwlock_unlock(uf_vma_table_lock(vma));
		if (ret != -EAGAIN)
			break;
		uf_uffd_settle(uf_vma_uffd(vma));
	}
	if (!inside)
		return -EINVAL;
	if (vma->obj) {
		ret = uf_object_insert(vma->obj, pgoff, kaddr);
		if ((ret == 0 || ret == -EEXIST) && !(cur.vma == vma && cur.page == page_addr))
			uf_uffd_wake(uf_vma_uffd(vma), page_addr, PAGE_SIZE);
	} else if (ret == -EEXIST && !(cur.vma == vma && cur.page == page_addr)) {
		/* (copied above) the page being faulted on is woken by
		 * uf_fault_handle(), after the fault is counted; any other now */
		uf_uffd_wake(uf_vma_uffd(vma), page_addr, PAGE_SIZE);
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
