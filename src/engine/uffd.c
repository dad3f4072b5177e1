// SPDX-License-Identifier: MIT
/*
 * The engine: one userfaultfd and the handler threads that read it.
 *
 * This is the lowest layer of ufault and the only file that issues
 * userfaultfd ioctls.  It opens the fd and negotiates features, registers
 * and write-protects ranges, fills (copy), wakes and poisons pages, and
 * runs the event loop.  It knows nothing of VMAs or objects: every event
 * goes up through the struct uf_uffd_ops its owner (the mm) gave it —
 * page faults to the fault path (fault.c), address-space events (unmap,
 * remap, remove) to the VMA code.
 *
 * Address-space events.  With UFFD_FEATURE_EVENT_UNMAP/REMAP/REMOVE the
 * thread that unmaps, moves or zaps a registered range sleeps in the kernel
 * until a handler reads the event, and while an event is unread every
 * copy, write-protect and poison ioctl of the fd fails with EAGAIN.  So:
 *  - reading never waits for a lock the rest of ufault takes: events are
 *    read under ev_lock only (a leaf lock), and handed to ->event after;
 *  - a thread that meets EAGAIN reads the fd itself (uffd_drain) and keeps
 *    what it read for the handlers, since they may all wait for it;
 *  - ufault's own system calls that raise an event on this fd are made by
 *    uf_uffd_run(): from a helper thread while the caller reads.
 *
 * Guests.  The handler threads also read the userfaultfds of other
 * address spaces (fork children: as.c), each a struct uf_uffd of its own
 * with no threads (uf_uffd_guest_init, uf_uffd_attach): every handler's
 * epoll set holds every guest's fd, and a guest's messages go to its own
 * ops and owner.  Each rule above holds per fd.
 *
 * Locking: u->lock (a mutex) only guards starting handler threads; ev_lock
 * is a leaf (held around read() and the queue only); guest_lock is a leaf
 * (the list of guests, their users, the handlers' epoll sets).  The
 * handler threads call the ops with no lock held.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

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

/* a handler with no epoll set (out of fds) tries again this often */
#define GUEST_RETRY_MS	20

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

static void reserve_room(struct uf_uffd *u);

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
	reserve_room(u);
	u->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->stopfd < 0)
		return -errno;
	u->kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->kickfd < 0)
		return -errno;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The event loop                                                      */
/* ------------------------------------------------------------------ */

/*
 * How long every handler may be busy before the monitor starts a spare.
 * A fault() that touches another ufault mapping blocks its handler until
 * another handler serves that fault; with every handler busy, nobody
 * would.  Short enough that nesting costs little, long enough that an
 * ordinary burst of faults does not grow the pool.
 */
#define SPARE_AFTER_NS	(5 * 1000 * 1000)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec;
}

static void arm_timer(struct uf_uffd *u, uint64_t ns)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000) },
	};

	timerfd_settime(u->timerfd, 0, &its, NULL);
}

/*
 * A handler took an event.  The last idle handler arms the monitor's
 * timer (unless armed already), so that no event waits for long behind
 * handlers that are all busy.  Costs an atomic and a clock read per event.
 */
static void busy_begin(struct uf_uffd_handler *h)
{
	struct uf_uffd *u = h->uffd;

	__atomic_store_n(&h->busy_since, now_ns(), __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&u->t->nidle, 1, __ATOMIC_SEQ_CST) == 0 &&
	    !__atomic_exchange_n(&u->t->timer_armed, true, __ATOMIC_SEQ_CST))
		arm_timer(u, SPARE_AFTER_NS);
}

static void busy_end(struct uf_uffd_handler *h)
{
	__atomic_store_n(&h->busy_since, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->uffd->t->nidle, 1, __ATOMIC_SEQ_CST);
}

/* The engine whose handler this thread is (NULL: an application thread). */
static __thread struct uf_uffd *cur_uffd;
/* This thread reads for a fork() that may hold malloc's locks (the
 * monitor): it reads into the room kept, never makes more. */
static __thread bool nofork_malloc;

static bool is_event(const struct uffd_msg *m)
{
	return m->event != UFFD_EVENT_PAGEFAULT;
}

/*
 * Room for messages is made before a read, outside every lock: a fork()
 * holds the C library's malloc locks until its fork event has been read,
 * so a reader must never wait for malloc (nor for a lock held by a thread
 * that does).  The queues keep ROOM_SLACK free entries; a read takes at
 * most 16.
 */
#define ROOM_SLACK	32

/* Grow *q (under ev_lock, at *cap entries, @used in use) to hold @slack
 * more.  Locking: takes ev_lock; allocates without it. */
static void grow_queue(struct uf_uffd *u, struct uffd_msg **q, size_t *used, size_t *cap)
{
	for (;;) {
		size_t c, want;
		struct uffd_msg *p;

		pthread_mutex_lock(&u->ev_lock);
		c = *cap;
		want = *used + ROOM_SLACK;
		pthread_mutex_unlock(&u->ev_lock);
		if (c >= want)
			return;
		want = want * 2;
		/* (no copy-on-write after a fork: a guest's queues are made
		 * as its fork event is read) */
		p = uf_nocow_alloc(want * sizeof(*p));
		if (!p)
			return;
		pthread_mutex_lock(&u->ev_lock);
		if (*cap == c) {
			struct uffd_msg *old = *q;

			if (*used)
				memcpy(p, old, *used * sizeof(*p));
			*q = p;
			*cap = want;
			p = old;
		}
		pthread_mutex_unlock(&u->ev_lock);
		uf_nocow_free(p);
	}
}

static void reserve_room(struct uf_uffd *u)
{
	grow_queue(u, &u->evq, &u->nevq, &u->evq_cap);
	grow_queue(u, &u->pending, &u->npending, &u->pending_cap);
}

/*
 * Read up to @max messages.  Events go to the event queue, in the order
 * read (they are applied in that order: a move and an unmap of the same
 * addresses do not commute); faults go to @faults, or with @faults NULL
 * to the pending queue.  Return the faults given back in @faults.
 * Locking: takes copy_lock exclusive (no copy into a mapping of the
 * program runs across a read: see uf_uffd_copy_mapped()), then ev_lock,
 * so that uf_uffd_quiesce() sees every event whose reader has returned
 * from read().  Without memory to keep what it would read, nothing is
 * read.
 */
static size_t uffd_read(struct uf_uffd *u, struct uffd_msg *faults, size_t max, size_t *nread)
{
	struct uffd_msg msgs[16];
	size_t i, cnt, nf = 0;
	ssize_t n;

	if (max > 16)
		max = 16;
	if (!nofork_malloc)
		reserve_room(u);
	pthread_rwlock_wrlock(&u->copy_lock);
	pthread_mutex_lock(&u->ev_lock);
	if (u->nevq + max > u->evq_cap)
		max = u->evq_cap - u->nevq;
	if (!faults && u->npending + max > u->pending_cap)
		max = u->pending_cap - u->npending;
	if (!max) {
		pthread_mutex_unlock(&u->ev_lock);
		pthread_rwlock_unlock(&u->copy_lock);
		*nread = 0;
		return 0;
	}
	n = read(u->fd, msgs, max * sizeof(*msgs));
	cnt = n > 0 ? (size_t)n / sizeof(*msgs) : 0;
	for (i = 0; i < cnt; i++) {
		if (is_event(&msgs[i])) {
			u->evq[u->nevq] = msgs[i];
			/* (nevq and ev_read are also read without the lock) */
			__atomic_store_n(&u->nevq, u->nevq + 1, __ATOMIC_RELAXED);
			__atomic_store_n(&u->ev_read, u->ev_read + 1, __ATOMIC_RELAXED);
		} else if (faults) {
			faults[nf++] = msgs[i];
		} else {
			u->pending[u->npending] = msgs[i];
			/* (npending is also read without the lock) */
			__atomic_store_n(&u->npending, u->npending + 1, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&u->ev_lock);
	pthread_rwlock_unlock(&u->copy_lock);
	*nread = cnt;
	return nf;
}

/*
 * Apply the queued events, oldest first, unless another thread is at it
 * (it takes those queued meanwhile too).  No lock held by the caller.
 */
static void apply_events(struct uf_uffd *u)
{
	struct uffd_msg m;

	pthread_mutex_lock(&u->ev_lock);
	if (u->ev_applying || !u->nevq) {
		pthread_mutex_unlock(&u->ev_lock);
		return;
	}
	u->ev_applying = true;
	while (u->nevq) {
		m = u->evq[0];
		memmove(&u->evq[0], &u->evq[1], (u->nevq - 1) * sizeof(m));
		__atomic_store_n(&u->nevq, u->nevq - 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&u->ev_lock);
		if (u->ops->event)
			u->ops->event(u->owner, &m);
		pthread_mutex_lock(&u->ev_lock);
		__atomic_store_n(&u->ev_done, u->ev_done + 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&u->ev_cond);
	}
	u->ev_applying = false;
	pthread_mutex_unlock(&u->ev_lock);
}

/* Take a fault another thread read and kept.  Locking: takes ev_lock. */
static bool pending_pop(struct uf_uffd *u, struct uffd_msg *m)
{
	bool got = false;

	pthread_mutex_lock(&u->ev_lock);
	if (u->npending) {
		*m = u->pending[0];
		memmove(&u->pending[0], &u->pending[1], (u->npending - 1) * sizeof(*m));
		__atomic_store_n(&u->npending, u->npending - 1, __ATOMIC_RELAXED);
		got = true;
	}
	pthread_mutex_unlock(&u->ev_lock);
	return got;
}

/*
 * A thread that cannot go on until an event is read (an ioctl says
 * EAGAIN): read the fd and keep the messages for the handlers.  Any
 * thread may: the handlers may all be waiting for a lock the caller holds.
 */
static void uffd_drain(struct uf_uffd *u)
{
	size_t n;

	uffd_read(u, NULL, 16, &n);
	if (n && cur_uffd != u) {
		uint64_t one = 1;

		/* the handlers sleep on an empty fd: tell them */
		if (write(u->host ? u->host->kickfd : u->kickfd, &one, sizeof(one)) < 0) {
			/* an eventfd write fails only on overflow */
		}
	}
	if (!n)
		sched_yield();
}

/* Serve a fault read from @u (the handler's engine or a guest of it).
 * No lock held. */
static void deliver_fault(struct uf_uffd_handler *h, struct uf_uffd *u, const struct uffd_msg *msg)
{
	u->ops->fault(u->owner, h->slot, msg);
}

/* Take guest @g of @u for a while (NULL if it left meanwhile: epoll may
 * report an fd just removed).  Locking: takes u->guest_lock. */
static struct uf_uffd *guest_get(struct uf_uffd *u, const struct uf_uffd *g)
{
	struct uf_uffd *p;

	pthread_mutex_lock(&u->guest_lock);
	for (p = u->guests; p && p != g; p = p->guest_next)
		;
	if (p)
		p->users++;
	pthread_mutex_unlock(&u->guest_lock);
	return p;
}

static void guest_put(struct uf_uffd *u, struct uf_uffd *g)
{
	pthread_mutex_lock(&u->guest_lock);
	g->users--;
	pthread_mutex_unlock(&u->guest_lock);
}

/* Does guest @g hold events or faults read and not yet taken?  Only
 * reads @g: a guest is written only when there is work for it, since
 * after a fork() every page the handlers write costs a copy-on-write
 * fault while the child lives. */
static bool guest_has_work(const struct uf_uffd *g)
{
	return __atomic_load_n(&g->nevq, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&g->npending, __ATOMIC_RELAXED);
}

/* Apply a guest's events and serve a fault it holds (read by a thread that
 * met EAGAIN), one guest after the other.  Return whether it did work. */
static bool guests_pending(struct uf_uffd_handler *h)
{
	struct uf_uffd *u = h->uffd, *g;
	bool did = false;
	unsigned int i;

	if (!__atomic_load_n(&u->nguests, __ATOMIC_RELAXED))
		return false;
	for (i = 0;; i++) {
		struct uffd_msg msg;
		unsigned int k = 0;

		pthread_mutex_lock(&u->guest_lock);
		for (g = u->guests; g && (k < i || !guest_has_work(g)); g = g->guest_next)
			k++;
		if (g)
			g->users++;
		pthread_mutex_unlock(&u->guest_lock);
		if (!g)
			return did;
		i = k;
		if (__atomic_load_n(&g->nevq, __ATOMIC_RELAXED)) {
			apply_events(g);
			did = true;
		}
		if (pending_pop(g, &msg)) {
			deliver_fault(h, g, &msg);
			did = true;
		}
		guest_put(u, g);
	}
}

/* A guest's fd is readable: read one message, apply or serve it. */
static void guest_ready(struct uf_uffd_handler *h, const struct uf_uffd *which)
{
	struct uf_uffd *u = h->uffd, *g = guest_get(u, which);
	struct uffd_msg msg;
	size_t n;

	if (!g)
		return;
	if (uffd_read(g, &msg, 1, &n) == 1)
		deliver_fault(h, g, &msg);
	if (__atomic_load_n(&g->nevq, __ATOMIC_RELAXED))
		apply_events(g);
	guest_put(u, g);
}

static void guest_epoll_add(int ep, struct uf_uffd *g)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = g };

	epoll_ctl(ep, EPOLL_CTL_ADD, g->fd, &ev);
}

/*
 * The handler's epoll set: @pfd's three fds (the engine's fd
 * EPOLLEXCLUSIVE) and every guest attached so far (uf_uffd_attach() adds
 * later ones).  The set, or -1 (out of fds, say: the caller polls @pfd
 * meanwhile, and tries again while guests wait, whom poll() cannot see).
 * Locking: takes u->guest_lock.
 */
static int handler_epoll(struct uf_uffd_handler *h, const struct pollfd *pfd)
{
	struct uf_uffd *u = h->uffd, *g;
	int ep = epoll_create1(EPOLL_CLOEXEC), i;

	for (i = 0; ep >= 0 && i < 3; i++) {
		struct epoll_event ev = {
			.events = EPOLLIN | (i == 0 ? EPOLLEXCLUSIVE : 0),
			.data.u64 = (uint64_t)i,
		};

		if (epoll_ctl(ep, EPOLL_CTL_ADD, pfd[i].fd, &ev) < 0) {
			close(ep);
			ep = -1;
		}
	}
	if (ep < 0)
		return -1;
	pthread_mutex_lock(&u->guest_lock);
	h->ep = ep;
	for (g = u->guests; g; g = g->guest_next)
		guest_epoll_add(ep, g);
	pthread_mutex_unlock(&u->guest_lock);
	return ep;
}

/*
 * Each handler reads one event at a time: an idle handler takes the next
 * event while another runs a slow fault() (no event waits in one
 * handler's batch behind another).  Address-space events are applied
 * first, in the order read; then faults another thread read and kept.
 */
static void *handler_thread(void *arg)
{
	struct uf_uffd_handler *h = arg;
	struct uf_uffd *u = h->uffd;
	struct pollfd pfd[3] = {
		{ .fd = u->fd, .events = POLLIN },
		{ .fd = u->stopfd, .events = POLLIN },
		{ .fd = u->kickfd, .events = POLLIN },
	};
	struct uf_uffd *guest_seen = NULL;
	int ep, i;
	sigset_t all;

	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	cur_uffd = u;

	/*
	 * Wait in an epoll set of this thread's own that holds the fd
	 * EPOLLEXCLUSIVE: a fault wakes one idle handler, not all of them
	 * (with poll() every handler woke for every fault and all but one
	 * met an empty fd, contending for copy_lock on the way).  A handler
	 * that re-enters the wait as the next fault arrives still races the
	 * one woken for it (level-triggered): that costs a failed read, no
	 * more.
	 * Where epoll cannot be set up (the process out of fds), poll() on
	 * the fd, and try again every GUEST_RETRY_MS while there are guests:
	 * only the set holds their fds.
	 */
	ep = handler_epoll(h, pfd);

	/*
	 * A handler counts as idle only while it waits for the fds: whatever
	 * else it does (serving, applying events, ->idle) may wait -- for
	 * malloc, which a fork() holds until its event is read -- and the
	 * monitor must then read for it (drain_all).
	 */
	busy_begin(h);
	for (;;) {
		struct uffd_msg msg;
		size_t n;
		int ready, timeout;

		if (__atomic_load_n(&u->nevq, __ATOMIC_RELAXED))
			apply_events(u);
		if (pending_pop(u, &msg)) {
			deliver_fault(h, u, &msg);
			continue;
		}
		if (guests_pending(h))
			continue;
		timeout = u->ops->idle_ms ? u->ops->idle_ms(u->owner) : -1;
		if (ep < 0 && __atomic_load_n(&u->nguests, __ATOMIC_RELAXED) &&
		    (ep = handler_epoll(h, pfd)) < 0 && (timeout < 0 || timeout > GUEST_RETRY_MS))
			timeout = GUEST_RETRY_MS;
		busy_end(h);
		if (ep >= 0) {
			struct epoll_event evs[4];
			int k;

			ready = epoll_wait(ep, evs, 4, timeout);
			for (i = 0; i < 3; i++)
				pfd[i].revents = 0;
			guest_seen = NULL;
			for (k = 0; k < ready; k++) {
				if (evs[k].data.u64 < 3)
					pfd[evs[k].data.u64].revents = (short)evs[k].events;
				else
					guest_seen = evs[k].data.ptr;	/* one per round */
			}
		} else {
			ready = poll(pfd, 3, timeout);
		}
		busy_begin(h);
		if (u->ops->idle)
			u->ops->idle(u->owner);
		if (ready <= 0)
			continue;	/* EINTR, or the owner's timer */
		if (pfd[1].revents)
			break;
		if (guest_seen)
			guest_ready(h, guest_seen);
		if (pfd[2].revents) {
			uint64_t v;

			/* messages kept by another thread: serve them */
			if (read(u->kickfd, &v, sizeof(v)) < 0) {
				/* another handler took the count */
			}
			continue;
		}
		/* an event is queued (applied at the top of the loop); a
		 * fault is served now; nothing: another handler took it */
		if (pfd[0].revents && uffd_read(u, &msg, 1, &n) == 1)
			deliver_fault(h, u, &msg);
	}
	if (ep >= 0) {
		pthread_mutex_lock(&u->guest_lock);
		h->ep = -1;
		pthread_mutex_unlock(&u->guest_lock);
		close(ep);
	}
	return NULL;
}

/*
 * uf_uffd_quiesce - wait until every address-space event read so far has
 * been handed to ->event: after it, the owner's table shows every unmap,
 * remap and remove that has returned to its caller.  A handler thread
 * applies them itself when no other thread is at it.
 * Locking: none may be held that ->event takes.
 */
void uf_uffd_quiesce(struct uf_uffd *u)
{
	uint64_t target;

	pthread_mutex_lock(&u->ev_lock);
	target = u->ev_read;
	while (u->ev_done < target) {
		if (!u->ev_applying) {
			/* the handlers may all be busy: apply them here */
			pthread_mutex_unlock(&u->ev_lock);
			apply_events(u);
			pthread_mutex_lock(&u->ev_lock);
			continue;
		}
		pthread_cond_wait(&u->ev_cond, &u->ev_lock);
	}
	pthread_mutex_unlock(&u->ev_lock);
}

/*
 * uf_uffd_settle - read what the fd holds and apply every event read, so
 * that a copy refused by uf_uffd_copy_mapped() can be tried again against
 * a table that shows what the program did.
 * Locking: none may be held that ->event takes.
 */
void uf_uffd_settle(struct uf_uffd *u)
{
	uffd_drain(u);
	uf_uffd_quiesce(u);
}

struct run_arg {
	int (*fn)(void *arg);
	void *arg;
	int ret;
	int done;
	int donefd;			/* eventfd: @fn returned */
};

static void *run_thread(void *p)
{
	struct run_arg *r = p;
	uint64_t one = 1;

	r->ret = r->fn(r->arg);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	if (write(r->donefd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only on overflow: cannot happen */
	}
	return NULL;
}

/*
 * uf_uffd_run - call @fn, which may raise an event on this fd (munmap,
 * mmap MAP_FIXED, mremap or madvise over a registered range), from a
 * thread that may hold ufault locks or be a handler.  The event puts the
 * caller of the system call to sleep until it is read, and the handlers
 * may all wait for a lock the caller holds (or be the caller): so @fn runs
 * in a helper thread while the caller reads the fd, until the helper says
 * it is done (an eventfd, so the caller does not sleep past it).  The
 * events it reads are applied later by the handlers.  Return what @fn
 * returned, or -errno if no thread could be started.
 */
int uf_uffd_run(struct uf_uffd *u, int (*fn)(void *arg), void *arg)
{
	struct run_arg r = { .fn = fn, .arg = arg };
	pthread_t t;
	int ret;

	r.donefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r.donefd < 0)
		return -errno;
	ret = pthread_create(&t, NULL, run_thread, &r);
	if (ret) {
		close(r.donefd);
		return -ret;
	}
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd[2] = {
			{ .fd = u->fd, .events = POLLIN },
			{ .fd = r.donefd, .events = POLLIN },
		};

		if (poll(pfd, 2, 1000) > 0 && (pfd[0].revents & POLLIN))
			uffd_drain(u);
	}
	pthread_join(t, NULL);
	close(r.donefd);
	return r.ret;
}

/* Locking: u->lock held. */
static int __start_handler(struct uf_uffd *u)
{
	unsigned int i = u->nthreads;
	int ret;

	if (i == UF_MAX_HANDLERS || u->stopping)
		return -EAGAIN;
	u->t->handlers[i] = (struct uf_uffd_handler){ .uffd = u, .slot = i, .ep = -1 };
	__atomic_add_fetch(&u->t->nidle, 1, __ATOMIC_SEQ_CST);
	ret = uf_thread_start(&u->t->threads[i], handler_thread, &u->t->handlers[i]);
	if (ret) {
		__atomic_sub_fetch(&u->t->nidle, 1, __ATOMIC_SEQ_CST);
		return ret;
	}
	__atomic_store_n(&u->nthreads, i + 1, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Spares are not started while a fork() is under way: the C library holds
 * its malloc locks across the fork system call, which with the fork event
 * returns only once a thread has read the event; a pthread_create() then
 * would wait for the fork, and the fork for the monitor.  Forks take
 * spawn_lock shared (pthread_atfork), the monitor tries it exclusive.
 * The lock is memory a fork does not copy (nocow.c): the unlock after a
 * fork writes no page the fork write-protected, and a child finds it all
 * zeros, which is a free rwlock (PTHREAD_RWLOCK_INITIALIZER, in glibc as
 * in musl), with no handler of ours run in the child to unlock it.
 */
static pthread_rwlock_t spawn_lock_static = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t *spawn_lock = &spawn_lock_static;
static pthread_once_t spawn_once = PTHREAD_ONCE_INIT;

/*
 * The engines with fork events, so that a fork() can wake their monitors:
 * should every handler wait (for malloc, which the fork holds, or for
 * anything else), the monitor reads the fork event within a millisecond
 * or two (monitor_thread).  A leaf lock.
 */
static pthread_mutex_t engines_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uf_uffd *engines;

static void spawn_fork_prepare(void)
{
	struct uf_uffd *u;

	pthread_mutex_lock(&engines_lock);
	for (u = engines; u; u = u->engine_next) {
		__atomic_store_n(&u->t->timer_armed, true, __ATOMIC_SEQ_CST);
		arm_timer(u, 2 * 1000 * 1000);
	}
	pthread_mutex_unlock(&engines_lock);
	pthread_rwlock_rdlock(spawn_lock);
}

static void engines_add(struct uf_uffd *u)
{
	pthread_mutex_lock(&engines_lock);
	u->engine_next = engines;
	engines = u;
	pthread_mutex_unlock(&engines_lock);
}

static void engines_del(struct uf_uffd *u)
{
	struct uf_uffd **pp;

	pthread_mutex_lock(&engines_lock);
	for (pp = &engines; *pp; pp = &(*pp)->engine_next) {
		if (*pp == u) {
			*pp = u->engine_next;
			break;
		}
	}
	pthread_mutex_unlock(&engines_lock);
}

static void spawn_fork_done(void)
{
	pthread_rwlock_unlock(spawn_lock);
}

/* In the child, the lock of memory a fork does not copy is free. */
static void spawn_fork_child(void)
{
	uf_lockdep_forget(spawn_lock);
}

static void spawn_init(void)
{
	pthread_rwlock_t *l = uf_nocow_alloc(sizeof(*l));

	uf_lockdep_class(&engines_lock, UF_LK_ENGINES);
	if (!l) {
		/* the lock of the program's memory, unlocked in the child */
		uf_lockdep_class(spawn_lock, UF_LK_SPAWN);
		pthread_atfork(spawn_fork_prepare, spawn_fork_done, spawn_fork_done);
		return;
	}
	pthread_rwlock_init(l, NULL);
	uf_lockdep_class(l, UF_LK_SPAWN);
	spawn_lock = l;
	pthread_atfork(spawn_fork_prepare, spawn_fork_done, spawn_fork_child);
}

/* Has @fd something to read?  A system call, no lock taken. */
static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/*
 * Read what the fds of @u and its guests hold into their queues, for the
 * handlers: they may all be busy, and a fork() waits for its event to be
 * read (maybe while the handlers wait for malloc, which the fork holds).
 * Locking: takes guest_lock, and what uffd_read() takes; no malloc.
 */
static void drain_all(struct uf_uffd *u)
{
	unsigned int i;

	if (fd_readable(u->fd))
		uffd_drain(u);
	for (i = 0;; i++) {
		struct uf_uffd *g;
		unsigned int k = 0;

		/* (a guest with nothing to read is not written: see
		 * guest_has_work) */
		pthread_mutex_lock(&u->guest_lock);
		for (g = u->guests; g && (k < i || !fd_readable(g->fd)); g = g->guest_next)
			k++;
		if (g)
			g->users++;
		pthread_mutex_unlock(&u->guest_lock);
		if (!g)
			return;
		i = k;
		uffd_drain(g);
		guest_put(u, g);
	}
}

/*
 * The monitor sleeps until the timer busy_begin() armed runs out.  If
 * every handler is still busy and one has been for SPARE_AFTER_NS, it
 * starts a spare handler (up to UF_MAX_HANDLERS in all); if they are busy
 * with faults that began later, it looks again when the oldest is due.
 * Spares stay for the life of the engine.
 */
static void *monitor_thread(void *arg)
{
	struct uf_uffd *u = arg;
	struct pollfd pfd[2] = {
		{ .fd = u->timerfd, .events = POLLIN },
		{ .fd = u->stopfd, .events = POLLIN },
	};
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	nofork_malloc = true;
	for (;;) {
		uint64_t ticks, now, oldest = UINT64_MAX;
		unsigned int i, n;

		if (poll(pfd, 2, -1) <= 0)
			continue;
		if (pfd[1].revents)
			break;
		if (read(u->timerfd, &ticks, sizeof(ticks)) != sizeof(ticks))
			continue;
		/* cleared before nidle is read: a handler that goes busy
		 * after this arms the timer again */
		__atomic_store_n(&u->t->timer_armed, false, __ATOMIC_SEQ_CST);
		if ((u->features & UFFD_FEATURE_EVENT_FORK) &&
		    pthread_rwlock_trywrlock(spawn_lock) != 0) {
			/* a fork is under way (or a spare being started): read
			 * its event, whatever the handlers do, until it is done */
			drain_all(u);
			if (!__atomic_exchange_n(&u->t->timer_armed, true, __ATOMIC_SEQ_CST))
				arm_timer(u, 1000 * 1000);
			continue;
		} else if (u->features & UFFD_FEATURE_EVENT_FORK) {
			pthread_rwlock_unlock(spawn_lock);
		}
		if (__atomic_load_n(&u->t->nidle, __ATOMIC_SEQ_CST) != 0)
			continue;
		if (u->features & UFFD_FEATURE_EVENT_FORK)
			drain_all(u);
		n = __atomic_load_n(&u->nthreads, __ATOMIC_ACQUIRE);
		for (i = 0; i < n; i++) {
			uint64_t t = __atomic_load_n(&u->t->handlers[i].busy_since, __ATOMIC_RELAXED);

			if (t && t < oldest)
				oldest = t;
		}
		now = now_ns();
		if (oldest != UINT64_MAX && now - oldest >= SPARE_AFTER_NS &&
		    pthread_rwlock_trywrlock(spawn_lock) == 0) {
			pthread_mutex_lock(&u->lock);
			__start_handler(u);	/* at UF_MAX_HANDLERS: none */
			pthread_mutex_unlock(&u->lock);
			pthread_rwlock_unlock(spawn_lock);
		} else if (oldest != UINT64_MAX && now - oldest >= SPARE_AFTER_NS) {
			/* a fork is under way: read for it, look again soon */
			if (!__atomic_exchange_n(&u->t->timer_armed, true, __ATOMIC_SEQ_CST))
				arm_timer(u, 1000 * 1000);
		} else if (!__atomic_exchange_n(&u->t->timer_armed, true, __ATOMIC_SEQ_CST)) {
			arm_timer(u, oldest == UINT64_MAX ? SPARE_AFTER_NS
							  : SPARE_AFTER_NS - (now - oldest));
		}
	}
	return NULL;
}

/*
 * uf_uffd_start - start @nthreads handler threads that hand each event to
 * @ops with @owner, and the monitor that adds spares.  On failure the
 * threads started are stopped again.
 */
int uf_uffd_start(struct uf_uffd *u, unsigned int nthreads, const struct uf_uffd_ops *ops,
		  void *owner)
{
	unsigned int i;
	int ret;

	pthread_once(&spawn_once, spawn_init);
	u->t = uf_nocow_alloc(sizeof(*u->t));
	if (!u->t)
		return -ENOMEM;
	u->ops = ops;
	u->owner = owner;
	u->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (u->timerfd < 0)
		return -errno;
	ret = uf_thread_start(&u->t->monitor, monitor_thread, u);
	if (ret) {
		close(u->timerfd);
		return ret;
	}
	u->monitor_started = true;
	if (u->features & UFFD_FEATURE_EVENT_FORK)
		engines_add(u);
	pthread_mutex_lock(&u->lock);
	for (i = 0; i < nthreads && !ret; i++)
		ret = __start_handler(u);
	pthread_mutex_unlock(&u->lock);
	if (ret)
		uf_uffd_stop(u);
	return ret;
}

/* uf_uffd_stop - make the handler threads exit and wait for them. */
void uf_uffd_stop(struct uf_uffd *u)
{
	uint64_t one = 1;
	unsigned int i;

	if (u->stopfd >= 0 && write(u->stopfd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only on overflow: cannot happen */
	}
	pthread_mutex_lock(&u->lock);
	u->stopping = true;		/* no spare starts after this */
	pthread_mutex_unlock(&u->lock);
	if (u->monitor_started) {
		if (u->features & UFFD_FEATURE_EVENT_FORK)
			engines_del(u);
		uf_thread_join(&u->t->monitor);
		close(u->timerfd);
		u->monitor_started = false;
	}
	for (i = 0; i < u->nthreads; i++)
		uf_thread_join(&u->t->threads[i]);
	u->nthreads = 0;
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
	reserve_room(g);
}

/*
 * uf_uffd_attach - the host's handlers read @g from now on.
 * Locking: takes the host's guest_lock.
 */
void uf_uffd_attach(struct uf_uffd *g)
{
	struct uf_uffd *u = g->host;
	unsigned int i, n;

	bool kick = false;

	pthread_mutex_lock(&u->guest_lock);
	g->guest_next = u->guests;
	u->guests = g;
	__atomic_add_fetch(&u->nguests, 1, __ATOMIC_RELAXED);
	n = __atomic_load_n(&u->nthreads, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		if (u->t->handlers[i].ep >= 0)
			guest_epoll_add(u->t->handlers[i].ep, g);
		else
			kick = true;
	}
	pthread_mutex_unlock(&u->guest_lock);
	if (kick) {
		uint64_t one = 1;

		/* a handler with no epoll set (its process was out of fds
		 * when it started) waits in poll(), which cannot see @g: it
		 * wakes, and makes its set now (handler_thread) */
		if (write(u->kickfd, &one, sizeof(one)) < 0) {
			/* (the counter is full: it is awake already) */
		}
	}
}

/*
 * uf_uffd_detach - the host's handlers stop reading @g; then it may be
 * closed (uf_uffd_close).  While a handler uses it: -EBUSY, or with @wait
 * wait for it (the caller must not be that handler).
 * Locking: takes the host's guest_lock.
 */
int uf_uffd_detach(struct uf_uffd *g, bool wait)
{
	struct uf_uffd *u = g->host, **pp;
	unsigned int i, n;

	for (;;) {
		pthread_mutex_lock(&u->guest_lock);
		if (!g->users)
			break;
		pthread_mutex_unlock(&u->guest_lock);
		if (!wait)
			return -EBUSY;
		sched_yield();
	}
	for (pp = &u->guests; *pp; pp = &(*pp)->guest_next) {
		if (*pp == g) {
			*pp = g->guest_next;
			__atomic_sub_fetch(&u->nguests, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	n = __atomic_load_n(&u->nthreads, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++)
		if (u->t->handlers[i].ep >= 0)
			epoll_ctl(u->t->handlers[i].ep, EPOLL_CTL_DEL, g->fd, NULL);
	pthread_mutex_unlock(&u->guest_lock);
	return 0;
}

/*
 * uf_uffd_guest_hold, uf_uffd_guest_unhold - keep attached guest @g from
 * being detached (uf_uffd_detach() fails, or waits), as a handler using
 * it does: for a thread of the owner's that copies into it.
 * Locking: takes the host's guest_lock.
 */
void uf_uffd_guest_hold(struct uf_uffd *g)
{
	pthread_mutex_lock(&g->host->guest_lock);
	g->users++;
	pthread_mutex_unlock(&g->host->guest_lock);
}

void uf_uffd_guest_unhold(struct uf_uffd *g)
{
	guest_put(g->host, g);
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
		uffd_drain(u);		/* an event is unread */
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

	while (ioctl(u->fd, UFFDIO_COPY, &c) < 0) {
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
		if (ret == -EAGAIN && drain) {	/* an event is unread: read it, retry */
			uffd_drain(u);
			continue;
		}
		return ret;
	}
	if (copied)
		*copied += c.copy;
	return 0;
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
		uffd_drain(u);		/* an event is unread */
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
	uffd_drain(u);
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
