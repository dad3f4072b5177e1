// SPDX-License-Identifier: MIT
/*
 * Fairness between the tenants of served processes (struct uf_serve_opts'
 * @tenant; ufault-serve passes each VMM's uid), and the requests of
 * ufault clients (attach_srv.c, the peer's uid): while two tenants or
 * more have each taken a part of the serving in the last window and
 * this one (FAIR_FLOOR_NS), or begun in it (FAIR_WINDOW_NS: a newcomer is
 * a rival from its first fault), a tenant that took more than its share of
 * it, judged over the last seconds (the windows before decay:
 * FAIR_DECAY), is over its share.  What a tenant takes is the handlers'
 * time for its faults, requests and run-ahead windows, FAIR_PAGE_NS
 * for each page copied into its processes, and FAIR_TRIP_NS for each
 * request's round trip.  A tenant over its share
 * waits, before each fault, till the others have been quiet a while
 * (fair_wait(): the tarpit), and is then served at the lowest CPU
 * priority, the faulting page alone, without running ahead
 * (serve_fault()); the worker finishes the window it is copying for it,
 * and takes no other of its windows (ahead_fair()).
 *
 * Why judged over seconds: a restore is short and a flood is not.  A
 * tenant that has taken the server for seconds yields to one that has
 * just begun, and gets its turn back once the newcomer has taken as
 * much.  Why pages count: a flood of pages run ahead of its process
 * takes little of the handlers' time, and much of the machine's (each
 * page's first touch in that process, which no handler sees).
 *
 * Why a priority and a wait, not a queue: a tenant's process waits for
 * each of its faults, so what a hostile tenant takes from the others is
 * the machine's CPU (its own process, the handler copying for it, the
 * worker running ahead of it), not a place in a queue.  At nice 19 a
 * handler gives the CPU up at once to one serving another tenant; the
 * wait keeps the hostile process itself asleep meanwhile (its faults
 * are what wake it).  The handlers are shared by every tenant, so no
 * more of them wait at once than leaves one free.  Going back to the
 * handler's own priority needs CAP_SYS_NICE (or an RLIMIT_NICE that
 * allows it): without, nothing is lowered (serve_fair_begin() says no).
 *
 * The table is a few slots, one per tenant seen lately, kept with
 * atomics alone (no lock: a fault's time added to a window just rolled
 * lands in the next; the figures steer a priority, they bill nobody).
 */
#define _GNU_SOURCE
#include "as/as.h"
#include "as/serve.h"

#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAIR_SLOTS	64
#define FAIR_WINDOW_NS	25000000ULL	/* 25 ms: a restore may take 200 */
#define FAIR_STALE	50		/* windows: a slot unused so long is free */
#define FAIR_NICE	19
/* A fault or window counts its time up to FAIR_CAP_NS: past that it
 * waits (for a slow store, or for the CPU when lowered), and waiting
 * takes nothing from anyone.  A tenant that took FAIR_FLOOR_NS or less
 * in the last window and this one is no rival to the others: it takes
 * too little to matter, and being over stops a tenant's run-ahead. */
#define FAIR_CAP_NS	2000000ULL
#define FAIR_FLOOR_NS	(FAIR_WINDOW_NS / 5)
/* A page copied into a process counts FAIR_PAGE_NS more: the CPU it
 * costs beyond the handler's copy, its process's first touch (1.25 us
 * for a page UFFDIO_COPY put in, to about 10 us for fresh memory in this
 * virtual machine) and the touches that follow, none of which the
 * handlers' time shows (a flood of pages run ahead of its process takes
 * little of theirs). */
#define FAIR_PAGE_NS	8000ULL
/* A request of a ufault client (attach_srv.c) counts FAIR_TRIP_NS more:
 * its round trip, which the handler's time does not show: the client
 * process's send and receive (16 us a request here, measured under the
 * bench's mapping flood) and the server's receive, answer and wakeups
 * around the time counted (its CPU was 23 us a request in all).  A
 * fault's round trip is in its page's FAIR_PAGE_NS. */
#define FAIR_TRIP_NS	30000ULL
/* the past loses 1/32 of itself a window: half in 22 windows (0.55 s) */
#define FAIR_DECAY	5
/* Over its share: more than FAIR_OVER/4 of an equal share (with two
 * tenants, 62.5% of what both took) */
#define FAIR_OVER	5
/* A fault over its share waits at most FAIR_WAIT_NS for the others to
 * be quiet: nothing of theirs in service for FAIR_QUIET_NS (a process
 * touching what was copied ahead of it is still at work: its next fault
 * or window comes soon). */
#define FAIR_WAIT_NS	2000000ULL
#define FAIR_QUIET_NS	1000000ULL

struct fair_slot {
	unsigned int tenant;	/* 0: free (atomic) */
	uint64_t window;	/* the window @cur counts (atomic) */
	uint64_t cur, prev;	/* ns served in it, and in the one before */
	uint64_t past;		/* the windows before those, decayed */
	uint64_t born;		/* ns, monotonic: the slot was taken (atomic) */
};

static struct fair_slot fair[FAIR_SLOTS];
static unsigned int fair_busy;	/* faults and windows in service, of tenants within their share */
static uint64_t fair_busy_end;	/* ns, monotonic: the last of those ended */
static unsigned int fair_waiting;	/* handlers in fair_wait() */
static int fair_can;		/* 0 unknown, 1 may lower and raise, -1 not */
static __thread int fair_base = 100;	/* this thread's own nice (100: unread) */

/* May a thread lower its priority and raise it back?  CAP_SYS_NICE, or
 * an RLIMIT_NICE reaching nice 0 (20 - 0). */
static bool fair_may_renice(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	struct rlimit rl;
	int can = __atomic_load_n(&fair_can, __ATOMIC_RELAXED);

	if (can)
		return can > 0;
	can = -1;
	if (syscall(SYS_capget, &h, d) == 0 && (d[0].effective & (1U << CAP_SYS_NICE)))
		can = 1;
	else if (getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur >= 20)
		can = 1;
	__atomic_store_n(&fair_can, can, __ATOMIC_RELAXED);
	return can > 0;
}

/* @s's windows brought to @w: what it counted moves to prev, and prev's
 * to the past, which loses 1/2^FAIR_DECAY of itself a window. */
static void fair_roll(struct fair_slot *s, uint64_t w)
{
	uint64_t was = __atomic_load_n(&s->window, __ATOMIC_RELAXED), cur, prev, past, gap;

	if (was == w || !__atomic_compare_exchange_n(&s->window, &was, w, false, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		return;
	gap = w - was;
	cur = __atomic_exchange_n(&s->cur, 0, __ATOMIC_RELAXED);
	prev = __atomic_exchange_n(&s->prev, gap == 1 ? cur : 0, __ATOMIC_RELAXED);
	past = __atomic_load_n(&s->past, __ATOMIC_RELAXED) + prev + (gap == 1 ? 0 : cur);
	if (gap > (64 << FAIR_DECAY))
		past = 0;		/* (decayed to nothing long since) */
	while (gap-- && past)
		past -= (past >> FAIR_DECAY) + 1;
	__atomic_store_n(&s->past, past, __ATOMIC_RELAXED);
}

/* @tenant's slot, taken if it has none (a free or stale one); NULL when
 * all are in use: that tenant is then neither counted nor lowered. */
static struct fair_slot *fair_slot(unsigned int tenant, uint64_t now)
{
	uint64_t w = now / FAIR_WINDOW_NS;
	struct fair_slot *free_ = NULL;
	unsigned int i, t;

	for (i = 0; i < FAIR_SLOTS; i++) {
		t = __atomic_load_n(&fair[i].tenant, __ATOMIC_RELAXED);
		if (t == tenant)
			return &fair[i];
		if (!free_ && (!t || __atomic_load_n(&fair[i].window, __ATOMIC_RELAXED) + FAIR_STALE < w))
			free_ = &fair[i];
	}
	if (!free_)
		return NULL;
	t = __atomic_load_n(&free_->tenant, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&free_->tenant, &t, tenant, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return NULL;	/* (taken meanwhile: this fault goes uncounted) */
	__atomic_store_n(&free_->cur, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&free_->prev, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&free_->past, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&free_->born, now, __ATOMIC_RELAXED);
	__atomic_store_n(&free_->window, w, __ATOMIC_RELAXED);
	return free_;
}

/* Is @me over its share among the rivals of the last window and this
 * one, their past counted too?  A rival took more than FAIR_FLOOR_NS in
 * them, or is new: a restore that has just begun is a rival from its
 * first fault, before it has taken its floor's worth -- which, with the
 * others unchecked meanwhile, it could take a while to.  (@me counts
 * whatever it took lately: held back, it takes little, and is still
 * what it was.) */
static bool fair_over(const struct fair_slot *me, uint64_t now)
{
	uint64_t w = now / FAIR_WINDOW_NS, total = 0, mine = 0, v;
	unsigned int i, n = 0;

	for (i = 0; i < FAIR_SLOTS; i++) {
		struct fair_slot *s = &fair[i];

		if (!__atomic_load_n(&s->tenant, __ATOMIC_RELAXED))
			continue;
		fair_roll(s, w);
		v = __atomic_load_n(&s->prev, __ATOMIC_RELAXED) +
		    __atomic_load_n(&s->cur, __ATOMIC_RELAXED);
		if (s != me && v <= FAIR_FLOOR_NS &&
		    now >= __atomic_load_n(&s->born, __ATOMIC_RELAXED) + FAIR_WINDOW_NS)
			continue;	/* little served lately: not a rival */
		v += __atomic_load_n(&s->past, __ATOMIC_RELAXED);
		total += v;
		n++;
		if (s == me)
			mine = v;
	}
	return n >= 2 && mine && mine * n * 4 > total * FAIR_OVER;
}

/* A fault over its share waits till the tenants within theirs are quiet,
 * FAIR_WAIT_NS at most, unless @wait threads of its kind wait already
 * (UINT_MAX: a thread of its own).  It sleeps till the earliest moment
 * they could be (FAIR_QUIET_NS after the last of theirs ended, or from
 * now while one is in service), and looks again: a few wakeups a wait,
 * each of which takes a CPU from the tenants it waits for. */
static void fair_wait(unsigned int wait)
{
	uint64_t now = uf_now_ns(), end = now + FAIR_WAIT_NS, at;
	struct timespec ts;

	if (wait != UINT_MAX && __atomic_add_fetch(&fair_waiting, 1, __ATOMIC_RELAXED) > wait) {
		__atomic_sub_fetch(&fair_waiting, 1, __ATOMIC_RELAXED);
		return;
	}
	for (; now < end; now = uf_now_ns()) {
		at = __atomic_load_n(&fair_busy, __ATOMIC_RELAXED) ? now :
		     __atomic_load_n(&fair_busy_end, __ATOMIC_RELAXED);
		at += FAIR_QUIET_NS;
		if (at <= now)
			break;		/* quiet */
		if (at > end)
			at = end;
		ts = uf_ns_timespec(at);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	if (wait != UINT_MAX)
		__atomic_sub_fetch(&fair_waiting, 1, __ATOMIC_RELAXED);
}

unsigned int serve_fair_waiters(const struct uf_vma *vma)
{
	unsigned int n = __atomic_load_n(&vma->mm->uffd.nthreads, __ATOMIC_RELAXED);

	return n > 1 ? n - 1 : 0;
}

/* Lower this thread to FAIR_NICE: whether it was. */
static bool fair_lower(void)
{
	if (fair_base == 100) {
		errno = 0;
		fair_base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
		if (errno)
			fair_base = 0;
	}
	return fair_base < FAIR_NICE &&
	       !setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FAIR_NICE);
}

/*
 * A fault of @tenant (0: none) begins on this thread: with @lower, if
 * that tenant is over its share, the fault waits (fair_wait(), @wait as
 * there: 0, never) and the thread is lowered.  Fill *@f for
 * serve_fair_end().  Return whether the tenant is over its share (then
 * the fault copies its page alone, and does not run ahead).  The
 * worker's run-ahead windows are counted, never lowered: the worker is
 * one thread for every tenant, so a window run low would hold up the
 * others' behind it.
 */
bool serve_fair_begin(unsigned int tenant, struct serve_fair *f, bool lower, unsigned int wait)
{
	f->slot = NULL;
	f->low = f->busy = f->trip = false;
	if (!tenant)
		return false;
	f->t0 = uf_now_ns();
	f->copied0 = uf_uffd_guest_copied;
	f->slot = fair_slot(tenant, f->t0);
	if (!f->slot || !fair_over(f->slot, f->t0) || !fair_may_renice()) {
		f->busy = true;
		__atomic_add_fetch(&fair_busy, 1, __ATOMIC_RELAXED);
		return false;
	}
	if (!lower)
		return true;
	if (wait) {
		fair_wait(wait);
		f->t0 = uf_now_ns();	/* (waiting takes from nobody) */
	}
	f->low = fair_lower();
	return f->low;
}

/* The fault begun by serve_fair_begin() ends: its time counted, the
 * thread's priority back. */
void serve_fair_end(struct serve_fair *f)
{
	struct fair_slot *s = f->slot;
	uint64_t now;

	if (f->low)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), fair_base);
	if (!s && !f->busy)
		return;
	now = uf_now_ns();
	if (f->busy) {
		__atomic_store_n(&fair_busy_end, now, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&fair_busy, 1, __ATOMIC_RELAXED);
	}
	if (!s)
		return;
	fair_roll(s, now / FAIR_WINDOW_NS);
	__atomic_add_fetch(&s->cur, (now - f->t0 < FAIR_CAP_NS ? now - f->t0 : FAIR_CAP_NS) +
			   ((uf_uffd_guest_copied - f->copied0) >> PAGE_SHIFT) * FAIR_PAGE_NS +
			   (f->trip ? FAIR_TRIP_NS : 0), __ATOMIC_RELAXED);
}
