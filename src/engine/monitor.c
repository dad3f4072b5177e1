// SPDX-License-Identifier: MIT
/*
 * The engine's spare-handler monitor: the timer the handlers arm when
 * they are all busy (busy_begin), the monitor thread that starts a spare
 * handler or reads for a fork() under way, the lock that keeps spares
 * from starting across a fork, and uf_uffd_start()/uf_uffd_stop().
 *
 * Locking: u->lock (a mutex) only guards starting handler threads;
 * engines_lock is a leaf.
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
 * How long every handler may be busy before the monitor starts a spare.
 * A fault() that touches another ufault mapping blocks its handler until
 * another handler serves that fault; with every handler busy, nobody
 * would.  Short enough that nesting costs little, long enough that an
 * ordinary burst of faults does not grow the pool.
 */
#define SPARE_AFTER_NS	(5 * 1000 * 1000)

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
void __uf_uffd_busy_begin(struct uf_uffd_handler *h)
{
	struct uf_uffd *u = h->uffd;

	__atomic_store_n(&h->busy_since, uf_now_ns(), __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&u->t->nidle, 1, __ATOMIC_SEQ_CST) == 0 &&
	    !__atomic_exchange_n(&u->t->timer_armed, true, __ATOMIC_SEQ_CST))
		arm_timer(u, SPARE_AFTER_NS);
}

void __uf_uffd_busy_end(struct uf_uffd_handler *h)
{
	__atomic_store_n(&h->busy_since, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&h->uffd->t->nidle, 1, __ATOMIC_SEQ_CST);
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
	ret = uf_thread_start(&u->t->threads[i], __uf_uffd_handler_thread, &u->t->handlers[i]);
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

int __uf_uffd_cpus;

static void spawn_init(void)
{
	pthread_rwlock_t *l = uf_nocow_alloc(sizeof(*l));
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	__uf_uffd_cpus = ncpu > 1 ? (int)ncpu : 1;

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
		__uf_uffd_drain(u);
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
		__uf_uffd_drain(g);
		__uf_uffd_guest_put(u, g);
	}
}

/*
 * The monitor sleeps until the timer __uf_uffd_busy_begin() armed runs out.  If
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
	__uf_uffd_nofork_malloc = true;
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
		now = uf_now_ns();
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
