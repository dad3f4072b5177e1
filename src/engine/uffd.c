// SPDX-License-Identifier: MIT
/*
 * The engine: one userfaultfd (the handler threads that read it are in
 * handler.c, the monitor that adds spares in monitor.c).
 *
 * This is the lowest layer of ufault, and the only file that issues
 * userfaultfd ioctls (handler.c reads events with read(2)).  This file
 * opens the fd and negotiates features, registers and write-protects
 * ranges, fills (copy), wakes and poisons pages, maps the zero page, and
 * has the bare-fd calls (uf_uffd_fd_*) for an attached object's
 * userfaultfd.  It knows nothing of VMAs or objects: every event goes up
 * through the struct uf_uffd_ops its owner (the mm) gave it — page faults
 * to the fault path (fault.c), address-space events (unmap, remap,
 * remove) to the VMA code.
 *
 * While an address-space event is unread every copy, write-protect and
 * poison ioctl of the fd fails with EAGAIN: a thread that meets it reads
 * the fd itself (__uf_uffd_drain, handler.c) and tries again.
 */
#define _GNU_SOURCE
#include "engine/engine.h"
#include "engine/uffd_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Open a userfaultfd: /dev/userfaultfd first (faults taken inside system
 * calls are then served too), then the system call, then the system call
 * restricted to user-mode faults.  Return the fd or -errno of the first
 * attempt that says why the others failed.
 */
static int uffd_open(bool user_mode_only)
{
	int fd, err = -ENOSYS;

	if (!user_mode_only) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
			err = fd < 0 ? -errno : 0;
			close(dev);
			if (fd >= 0)
				return fd;
		}
		fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0)
			return fd;
		err = -errno;
	}
	fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd >= 0)
		return fd;
	/* EINVAL here means the kernel lacks UFFD_USER_MODE_ONLY: keep the
	 * earlier, more telling error */
	if (errno != EINVAL || err == -ENOSYS)
		err = -errno;
	return err;
}

/* Ask for @want; the kernel answers with everything it supports. */
static int uffd_api(int fd, uint64_t want, uint64_t *got)
{
	struct uffdio_api api = { .api = UFFD_API, .features = want };

	if (ioctl(fd, UFFDIO_API, &api) < 0)
		return -errno;
	*got = api.features;
	return 0;
}

/*
 * uf_uffd_probe - the features this kernel offers, through a throwaway fd
 * (UFFDIO_API may be called once per fd).
 */
int uf_uffd_probe(bool user_mode_only, uint64_t *avail)
{
	int fd = uffd_open(user_mode_only), ret;

	if (fd < 0)
		return fd;
	ret = uffd_api(fd, 0, avail);
	close(fd);
	return ret;
}

/*
 * uf_uffd_new_fd - a userfaultfd of this process (O_CLOEXEC | O_NONBLOCK)
 * with the features of @want the kernel offers: what an attached object
 * hands to its server (attach.c).  *got: the features granted.  Return
 * the fd or -errno.
 */
int uf_uffd_new_fd(uint64_t want, uint64_t *got)
{
	uint64_t avail = 0;
	int fd, ret;

	ret = uf_uffd_probe(false, &avail);
	if (ret)
		return ret;
	fd = uffd_open(false);
	if (fd < 0)
		return fd;
	ret = uffd_api(fd, want & avail, got);
	if (ret) {
		close(fd);
		return ret;
	}
	*got = want & avail;
	return fd;
}

/* uf_uffd_fd_is_uffd - is @fd (handed over by another process) a
 * userfaultfd?  Its link in /proc names its anonymous inode. */
bool uf_uffd_fd_is_uffd(int fd)
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

/*
 * Calls on a bare userfaultfd of this process that no engine here reads:
 * an attached object's (attach.c), whose server reads it.  Register
 * MISSING; unregister (which wakes the waiters); poison one range without
 * waking (-errno: EEXIST where a page is); wake.
 */
int uf_uffd_fd_register(int fd, unsigned long start, unsigned long len)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(fd, UFFDIO_REGISTER, &r) < 0 ? -errno : 0;
}

void uf_uffd_fd_unregister(int fd, unsigned long start, unsigned long len)
{
	struct uffdio_range r = { .start = start, .len = len };

	ioctl(fd, UFFDIO_UNREGISTER, &r);
}

/* uf_uffd_fd_wake - let threads waiting on [addr, addr + len) of the
 * userfaultfd @fd retry: an engine's (uf_uffd_wake), or one no struct
 * uf_uffd has (a served or attached process's). */
void uf_uffd_fd_wake(int fd, unsigned long addr, unsigned long len)
{
	struct uffdio_range r = { .start = addr, .len = len };

	ioctl(fd, UFFDIO_WAKE, &r);
}


static void uffd_init_queues(struct uf_uffd *u)
{
	pthread_rwlockattr_t a;

	pthread_mutex_init(&u->ev_lock, NULL);
	uf_lockdep_class(&u->ev_lock, UF_LK_EV);
	pthread_cond_init(&u->ev_cond, NULL);
	/* a reader of the fd is not kept out by a stream of copies */
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&u->copy_lock, &a);
	uf_lockdep_class(&u->copy_lock, UF_LK_COPY);
	pthread_rwlockattr_destroy(&a);
}

/*
 * uf_uffd_probe_feature - does this process get @feature when it asks?
 * Some are offered but refused (UFFD_FEATURE_EVENT_FORK without
 * CAP_SYS_PTRACE).
 */
bool uf_uffd_probe_feature(bool user_mode_only, uint64_t feature)
{
	int fd = uffd_open(user_mode_only);
	uint64_t got;
	bool ok;

	if (fd < 0)
		return false;
	ok = uffd_api(fd, feature, &got) == 0;
	close(fd);
	return ok;
}

/* uf_uffd_open - open the engine's fd with exactly the features @want. */
int uf_uffd_open(struct uf_uffd *u, bool user_mode_only, uint64_t want)
{
	uint64_t got;
	int fd, ret;

	u->fd = u->stopfd = u->kickfd = -1;
	pthread_mutex_init(&u->lock, NULL);
	uf_lockdep_class(&u->lock, UF_LK_START);
	pthread_mutex_init(&u->guest_lock, NULL);
	uf_lockdep_class(&u->guest_lock, UF_LK_GUEST);
	fd = uffd_open(user_mode_only);
	if (fd < 0)
		return fd;
	ret = uffd_api(fd, want, &got);
	if (ret) {
		close(fd);
		return ret;
	}
	u->fd = fd;
	u->features = want;
	uffd_init_queues(u);
	__uf_uffd_reserve_room(u);
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->stopfd < 0)
		return -errno;
	u->kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->kickfd < 0)
		return -errno;
	return 0;
}

/*
 * uf_uffd_guest_init - make @g the engine of another address space whose
 * userfaultfd is @fd (a fork child's, from UFFD_EVENT_FORK): it has the
 * host's features, and its messages go to @ops with @owner, read by the
 * handler threads of @host once attached.
 */
void uf_uffd_guest_init(struct uf_uffd *g, int fd, struct uf_uffd *host,
			const struct uf_uffd_ops *ops, void *owner)
{
	memset(g, 0, sizeof(*g));
	g->fd = fd;
	g->stopfd = g->kickfd = g->timerfd = -1;
	g->features = host->features;
	g->ops = ops;
	g->owner = owner;
	g->host = host;
	pthread_mutex_init(&g->lock, NULL);
	uf_lockdep_class(&g->lock, UF_LK_START);
	pthread_mutex_init(&g->guest_lock, NULL);
	uf_lockdep_class(&g->guest_lock, UF_LK_GUEST);
	uffd_init_queues(g);
	__uf_uffd_reserve_room(g);
}

/*
 * uf_uffd_alive - does the address space of @g still exist?  Its process
 * may have exited or exec'ed: the fd raises no event for that, but every
 * call on its memory fails with ESRCH once the memory is gone.  The
 * question is a write-protect lift of one page at the lowest address a
 * mapping may have (it changes nothing outside a ufault mapping there).
 */
bool uf_uffd_alive(struct uf_uffd *g)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = 1UL << 16, .len = PAGE_SIZE },
		.mode = UFFDIO_WRITEPROTECT_MODE_DONTWAKE,
	};

	return ioctl(g->fd, UFFDIO_WRITEPROTECT, &wp) == 0 || errno != ESRCH;
}

struct zap_arg {
	const struct uf_range *r;
	size_t n;
};

static int zap_fn(void *p)
{
	struct zap_arg *z = p;
	size_t i;
	int ret = 0;

	for (i = 0; i < z->n; i++)
		if (madvise((void *)z->r[i].start, z->r[i].end - z->r[i].start,
			    MADV_DONTNEED) < 0 && !ret)
			ret = -errno;
	return ret;
}

/*
 * uf_uffd_zap - drop the page table entries of the ranges @r[0..n)
 * (MADV_DONTNEED: a poison marker goes too; on shmem a write-protect
 * marker stays).  Over a registered range this raises a remove event: the
 * calls are made through uf_uffd_run(), so the caller may hold locks or be
 * a handler.
 */
int uf_uffd_zap(struct uf_uffd *u, const struct uf_range *r, size_t n)
{
	struct zap_arg z = { .r = r, .n = n };

	if (!n)
		return 0;
	return uf_uffd_run(u, zap_fn, &z);
}

/* uf_uffd_close - close the fds (the threads are stopped, or a guest is
 * detached). */
void uf_uffd_close(struct uf_uffd *u)
{
	if (u->stopfd >= 0)
		close(u->stopfd);
	if (u->kickfd >= 0)
		close(u->kickfd);
	if (u->fd >= 0) {
		close(u->fd);
		pthread_mutex_destroy(&u->ev_lock);
		pthread_cond_destroy(&u->ev_cond);
		pthread_rwlock_destroy(&u->copy_lock);
	}
	pthread_mutex_destroy(&u->guest_lock);
	pthread_mutex_destroy(&u->lock);
	uf_nocow_free(u->t);
	u->t = NULL;
	u->fd = u->stopfd = u->kickfd = -1;
	uf_nocow_free(u->pending);
	u->pending = NULL;
	u->npending = u->pending_cap = 0;
	uf_nocow_free(u->evq);
	u->evq = NULL;
	u->evq_cap = 0;
	__atomic_store_n(&u->nevq, 0, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Ranges and pages                                                    */
/* ------------------------------------------------------------------ */

/*
 * uf_uffd_register - register [start, start + len) for missing-page
 * events, and for write-protect events with @wp.
 */
int uf_uffd_register(struct uf_uffd *u, unsigned long start, unsigned long len, bool wp)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	if (wp)
		reg.mode |= UFFDIO_REGISTER_MODE_WP;
	return ioctl(u->fd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

/*
 * uf_uffd_unregister - stop serving [start, start + len); threads waiting
 * there are woken.  A range unregistered first can be unmapped or mapped
 * over without raising an event.
 */
int uf_uffd_unregister(struct uf_uffd *u, unsigned long start, unsigned long len)
{
	struct uffdio_range r = { .start = start, .len = len };

	return ioctl(u->fd, UFFDIO_UNREGISTER, &r) < 0 ? -errno : 0;
}


/*
 * The calls below come in pairs: uf_uffd_X() reads the fd itself when
 * the kernel says EAGAIN (an event is unread) and tries again;
 * uf_uffd_X_mapped() gives -EAGAIN back at once (see
 * uf_uffd_copy_mapped()).  Each pair shares one loop, told by @drain.
 */

static int writeprotect(struct uf_uffd *u, unsigned long start, unsigned long len,
			bool protect, bool dontwake, bool drain)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = start, .len = len },
		.mode = (protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0) |
			(dontwake ? UFFDIO_WRITEPROTECT_MODE_DONTWAKE : 0),
	};

	while (ioctl(u->fd, UFFDIO_WRITEPROTECT, &wp) < 0) {
		if (errno != EAGAIN || !drain)
			return -errno;
		__uf_uffd_drain(u);		/* an event is unread */
	}
	return 0;
}

/*
 * uf_uffd_writeprotect - set (@protect) or lift the write protection of
 * [start, start + len).  Lifting wakes threads waiting on the range unless
 * @dontwake.
 */
int uf_uffd_writeprotect(struct uf_uffd *u, unsigned long start, unsigned long len,
			 bool protect, bool dontwake)
{
	return writeprotect(u, start, len, protect, dontwake, true);
}

/* uf_uffd_wake - let threads waiting on [addr, addr + len) retry. */
void uf_uffd_wake(struct uf_uffd *u, unsigned long addr, size_t len)
{
	uf_uffd_fd_wake(u->fd, addr, len);
}

/* Bytes this thread's copies have put into other processes (guests'
 * fds), ever: what a fault or a window delivered is the difference. */
__thread uint64_t uf_uffd_guest_copied;

/*
 * uf_uffd_copy - copy @len bytes from @src into the missing pages at @dst
 * (UF_UFFD_DONTWAKE: do not wake; UF_UFFD_WP: map them write-protected).
 * *copied (if given) grows by the bytes that landed, also before an error
 * (-EEXIST: a page is already present there).
 */
static int copy(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
		unsigned int flags, size_t *copied, bool drain)
{
	struct uffdio_copy c = {
		.dst = dst, .src = (unsigned long)src, .len = len,
		.mode = ((flags & UF_UFFD_DONTWAKE) ? UFFDIO_COPY_MODE_DONTWAKE : 0) |
			((flags & UF_UFFD_WP) ? UFFDIO_COPY_MODE_WP : 0),
	};
	int ret = 0;

	while (ioctl(u->fd, UFFDIO_COPY, &c) < 0) {
		ret = -errno;
		if (c.copy > 0) {
			/* partial: go on from where it stopped */
			c.dst += c.copy;
			c.src += c.copy;
			c.len -= c.copy;
			c.copy = 0;
			ret = 0;
			continue;
		}
		if (ret == -EAGAIN && drain) {	/* an event is unread: read it, retry */
			__uf_uffd_drain(u);
			ret = 0;
			continue;
		}
		break;
	}
	if (c.copy > 0)
		c.dst += c.copy;
	if (copied)
		*copied += c.dst - dst;
	if (u->host)
		uf_uffd_guest_copied += c.dst - dst;
	return ret;
}

int uf_uffd_copy(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
		 unsigned int flags, size_t *copied)
{
	return copy(u, dst, src, len, flags, copied, true);
}

/* EAGAIN once pages were poisoned (p.updated) is success: the callers
 * poison one page, and it has its marker. */
static int poison(struct uf_uffd *u, unsigned long addr, size_t len, bool drain)
{
	struct uf_uffdio_poison p = { .range = { addr, len } };

	while (ioctl(u->fd, UF_UFFDIO_POISON, &p) < 0) {
		if (errno == EAGAIN && p.updated > 0)
			return 0;
		if (errno != EAGAIN || !drain)
			return -errno;
		__uf_uffd_drain(u);		/* an event is unread */
	}
	return 0;
}

/*
 * Begin a call on the program's own mappings at addresses the owner's
 * table gives (see uf_uffd_copy_mapped): false, with nothing held, while
 * an event read is not yet applied.  uffd_mapped_end() after.
 */
static bool uffd_mapped_begin(struct uf_uffd *u)
{
	pthread_rwlock_rdlock(&u->copy_lock);
	/* (ev_read cannot move under copy_lock; ev_done only grows to it) */
	if (__atomic_load_n(&u->ev_done, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&u->ev_read, __ATOMIC_RELAXED))
		return true;
	pthread_rwlock_unlock(&u->copy_lock);
	return false;
}

static void uffd_mapped_end(struct uf_uffd *u)
{
	pthread_rwlock_unlock(&u->copy_lock);
}

/*
 * uf_uffd_copy_mapped - uf_uffd_copy() into the program's own mapping at
 * @dst, as the owner's table shows it.  The program may have unmapped or
 * moved that mapping and put another there (one of this fd too); the
 * kernel makes such copies fail with EAGAIN only until the event is read,
 * so a copy made after another thread read the event, but before the
 * table shows it, would land in whatever is there now -- another object's
 * cache, another page of this one.  So the copy is made only while every
 * event read has been applied, with reads of the fd kept out until it is
 * done (copy_lock); else, or on EAGAIN (an event is unread), it returns
 * -EAGAIN at once, and the caller copies elsewhere or looks again: it
 * does not read the fd itself, which would wait for its own copy_lock.
 * *copied grows as with uf_uffd_copy().
 * Locking: the caller holds what keeps its table from changing (the
 * owner's lock that ->event takes, shared), taken before copy_lock.
 */
int uf_uffd_copy_mapped(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
			unsigned int flags, size_t *copied)
{
	int ret;

	if (!uffd_mapped_begin(u))
		return -EAGAIN;
	ret = copy(u, dst, src, len, flags, copied, false);
	uffd_mapped_end(u);
	return ret;
}

/*
 * uf_uffd_poison_mapped, uf_uffd_writeprotect_mapped - uf_uffd_poison()
 * and uf_uffd_writeprotect() on a range of the program's mapping as the
 * owner's table shows it, under the rule of uf_uffd_copy_mapped(): -EAGAIN
 * at once while the table may be behind the kernel.
 * Locking: as uf_uffd_copy_mapped().
 */
int uf_uffd_poison_mapped(struct uf_uffd *u, unsigned long addr, size_t len)
{
	int ret;

	if (!(u->features & UFFD_FEATURE_POISON))
		return -ENOSYS;
	if (!uffd_mapped_begin(u))
		return -EAGAIN;
	ret = poison(u, addr, len, false);
	uffd_mapped_end(u);
	return ret;
}

int uf_uffd_writeprotect_mapped(struct uf_uffd *u, unsigned long start, unsigned long len,
				bool protect, bool dontwake)
{
	int ret;

	if (!uffd_mapped_begin(u))
		return -EAGAIN;
	ret = writeprotect(u, start, len, protect, dontwake, false);
	uffd_mapped_end(u);
	return ret;
}

/*
 * uf_uffd_poison - put the kernel's poison marker on the missing pages of
 * [addr, addr + len) and wake their waiters: every access there takes
 * SIGBUS (BUS_ADRERR) from the kernel, and a system call fails with
 * EFAULT, until the marker is zapped.  -ENOSYS before Linux 6.6.
 */
int uf_uffd_poison(struct uf_uffd *u, unsigned long addr, size_t len)
{
	if (!(u->features & UFFD_FEATURE_POISON))
		return -ENOSYS;
	return poison(u, addr, len, true);
}

/* The poison marker on a bare fd (uffd_holes.h: ufault-serve's supervisor
 * calls these too, linked from libufault.a). */
int uf_uffd_fd_poison(int fd, unsigned long addr, unsigned long len)
{
	struct uf_uffdio_poison p = { .range = { addr, len }, .mode = UFFDIO_COPY_MODE_DONTWAKE };

	return ioctl(fd, UF_UFFDIO_POISON, &p) < 0 ? -errno : 0;
}

int uf_uffd_fd_poison_holes(int fd, unsigned long addr, unsigned long len, size_t step,
			    void (*drain)(void *arg), void *arg)
{
	unsigned long a = addr, end = addr + len;

	while (a < end) {
		struct uf_uffdio_poison p = { .range = { a, end - a },
					      .mode = UFFDIO_COPY_MODE_DONTWAKE };

		if (ioctl(fd, UF_UFFDIO_POISON, &p) == 0)
			return 0;
		if (p.updated > 0)
			a += (unsigned long)p.updated;
		if (errno == EAGAIN) {
			if (p.updated <= 0 && drain)
				drain(arg);	/* an event is unread */
			continue;
		}
		if (errno == EEXIST) {
			a += step;	/* a page is there */
			continue;
		}
		return -errno;	/* gone (ESRCH), not registered, no marker */
	}
	return 0;
}

/*
 * uf_uffd_poison_holes - poison every missing page of [addr, addr + len)
 * and leave the pages present alone (the ioctl stops at each: skip it,
 * @step bytes: the page size there), then wake the whole range: every
 * access to a page that was not there takes SIGBUS.  For an address
 * space nobody will serve any more.
 * Return 0, or -errno when the range cannot be poisoned at all.
 */
static void poison_drain(void *u)
{
	__uf_uffd_drain(u);
}

int uf_uffd_poison_holes(struct uf_uffd *u, unsigned long addr, size_t len, size_t step)
{
	int ret;

	if (!(u->features & UFFD_FEATURE_POISON))
		return -ENOSYS;
	ret = uf_uffd_fd_poison_holes(u->fd, addr, len, step, poison_drain, u);
	uf_uffd_wake(u, addr, len);
	return ret;
}

/*
 * uf_uffd_zeropage_mapped - map the zero page at the missing pages of
 * [addr, addr + len) of the program's mapping as the owner's table shows
 * it (UF_UFFD_DONTWAKE: do not wake), under the rule of
 * uf_uffd_copy_mapped(): -EAGAIN at once while the table may be behind
 * the kernel.  -EEXIST: a page is there already.  For anonymous memory
 * only (a memfd's would take the zero page into the cache).
 * Locking: as uf_uffd_copy_mapped().
 */
int uf_uffd_zeropage_mapped(struct uf_uffd *u, unsigned long addr, size_t len,
			    unsigned int flags)
{
	struct uffdio_zeropage z = {
		.range = { .start = addr, .len = len },
		.mode = (flags & UF_UFFD_DONTWAKE) ? UFFDIO_ZEROPAGE_MODE_DONTWAKE : 0,
	};
	int ret = 0;

	if (!uffd_mapped_begin(u))
		return -EAGAIN;
	if (ioctl(u->fd, UFFDIO_ZEROPAGE, &z) < 0)
		ret = -errno;
	uffd_mapped_end(u);
	return ret;
}
