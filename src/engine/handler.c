// SPDX-License-Identifier: MIT
/*
 * The engine's handler threads: their event loop and epoll sets, reading
 * the userfaultfd (events queued and applied in order, faults delivered
 * to the owner's ops), the guests they read too, and uf_uffd_run().
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

/* a handler with no epoll set (out of fds) tries again this often */
#define GUEST_RETRY_MS	20

/* The engine whose handler this thread is (NULL: an application thread). */
static __thread struct uf_uffd *cur_uffd;
/* This thread reads for a fork() that may hold malloc's locks (the
 * monitor): it reads into the room kept, never makes more. */
__thread bool __uf_uffd_nofork_malloc;

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

void __uf_uffd_reserve_room(struct uf_uffd *u)
{
	grow_queue(u, &u->evq, &u->nevq, &u->evq_cap);
	grow_queue(u, &u->pending, &u->npending, &u->pending_cap);
}

/*
 * copy_lock taken exclusive, to read the fd.  What it waits for is a copy
 * into the process under way (uf_uffd_copy_mapped()), often a short one:
 * a pushed run of a working set, 10-20 us for 16 pages.  A reader that
 * sleeps behind it also waits for the wakeup after it, which on a virtual
 * machine costs as much as the copy again; a process touching the pages a
 * push copies in for it meets this at each of its faults.  So where the
 * copy can run on another CPU, the reader spins for it, COPY_SPIN_NS at
 * most, before it sleeps.
 * Locking: takes copy_lock exclusive.
 */
#define COPY_SPIN_NS	25000

static void copy_lock_read_fd(struct uf_uffd *u)
{
	uint64_t now, until = 0;
	int i;

	while (__uf_uffd_cpus > 1) {
		if (!pthread_rwlock_trywrlock(&u->copy_lock))
			return;
		now = uf_now_ns();
		if (!until)
			until = now + COPY_SPIN_NS;
		else if (now >= until)
			break;
		for (i = 0; i < 8; i++)
			uf_cpu_relax();
	}
	pthread_rwlock_wrlock(&u->copy_lock);
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
	if (!__uf_uffd_nofork_malloc)
		__uf_uffd_reserve_room(u);
	copy_lock_read_fd(u);
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
void __uf_uffd_drain(struct uf_uffd *u)
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

void __uf_uffd_guest_put(struct uf_uffd *u, struct uf_uffd *g)
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
		__uf_uffd_guest_put(u, g);
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
	__uf_uffd_guest_put(u, g);
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
 * Wait for the fds of handler @h: in its epoll set *@ep (made now, if it
 * has none and guests wait), else in poll() on @pfd.  The handler is idle
 * while it waits.  Set @pfd's revents and *@guest_seen (a guest whose fd
 * is readable, one per round) and return what the wait returned.
 */
static int handler_wait(struct uf_uffd_handler *h, int *ep, struct pollfd *pfd,
			struct uf_uffd **guest_seen)
{
	struct uf_uffd *u = h->uffd;
	int ready, timeout, i;

	timeout = u->ops->idle_ms ? u->ops->idle_ms(u->owner) : -1;
	if (*ep < 0 && __atomic_load_n(&u->nguests, __ATOMIC_RELAXED) &&
	    (*ep = handler_epoll(h, pfd)) < 0 && (timeout < 0 || timeout > GUEST_RETRY_MS))
		timeout = GUEST_RETRY_MS;
	__uf_uffd_busy_end(h);
	if (*ep >= 0) {
		struct epoll_event evs[4];
		int k;

		ready = epoll_wait(*ep, evs, 4, timeout);
		for (i = 0; i < 3; i++)
			pfd[i].revents = 0;
		*guest_seen = NULL;
		for (k = 0; k < ready; k++) {
			if (evs[k].data.u64 < 3)
				pfd[evs[k].data.u64].revents = (short)evs[k].events;
			else
				*guest_seen = evs[k].data.ptr;	/* one per round */
		}
	} else {
		ready = poll(pfd, 3, timeout);
	}
	__uf_uffd_busy_begin(h);
	return ready;
}

/* Handler @h leaves its epoll set @ep (-1: none).  Locking: takes
 * u->guest_lock. */
static void handler_epoll_close(struct uf_uffd_handler *h, int ep)
{
	struct uf_uffd *u = h->uffd;

	if (ep >= 0) {
		pthread_mutex_lock(&u->guest_lock);
		h->ep = -1;
		pthread_mutex_unlock(&u->guest_lock);
		close(ep);
	}
}

/*
 * Each handler reads one event at a time: an idle handler takes the next
 * event while another runs a slow fault() (no event waits in one
 * handler's batch behind another).  Address-space events are applied
 * first, in the order read; then faults another thread read and kept.
 */
void *__uf_uffd_handler_thread(void *arg)
{
	struct uf_uffd_handler *h = arg;
	struct uf_uffd *u = h->uffd;
	struct pollfd pfd[3] = {
		{ .fd = u->fd, .events = POLLIN },
		{ .fd = u->stopfd, .events = POLLIN },
		{ .fd = u->kickfd, .events = POLLIN },
	};
	struct uf_uffd *guest_seen = NULL;
	int ep;
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
	__uf_uffd_busy_begin(h);
	for (;;) {
		struct uffd_msg msg;
		size_t n;
		int ready;

		if (__atomic_load_n(&u->nevq, __ATOMIC_RELAXED))
			apply_events(u);
		if (pending_pop(u, &msg)) {
			deliver_fault(h, u, &msg);
			continue;
		}
		if (guests_pending(h))
			continue;
		ready = handler_wait(h, &ep, pfd, &guest_seen);
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
	handler_epoll_close(h, ep);
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
	__uf_uffd_drain(u);
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
			__uf_uffd_drain(u);
	}
	pthread_join(t, NULL);
	close(r.donefd);
	return r.ret;
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
		 * wakes, and makes its set now (__uf_uffd_handler_thread) */
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
	__uf_uffd_guest_put(g->host, g);
}
