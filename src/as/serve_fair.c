// SPDX-License-Identifier: MIT
/*
 * Fairness between the tenants of served processes (struct uf_serve_opts'
 * @tenant; ufault-serve passes each VMM's uid), and the requests of
 * ufault clients (attach_srv.c, the peer's uid): while two tenants or
 * more have had faults served in the last window and this one, a tenant
 * that took more than its share of the handlers' time there has its
 * faults served at the
 * lowest CPU priority, and without running ahead (serve_fault()); its
 * run-ahead windows in flight are counted, and run as they are.
 *
 * Why a priority and not a queue: a tenant's process waits for each of
 * its faults, so what a hostile tenant takes from the others is the
 * machine's CPU (its own process, the handler copying for it, the
 * worker running ahead of it), not a place in a queue.  A handler at
 * nice 19 serves it on a CPU nobody else wants, and gives the CPU up at
 * once to a handler serving another tenant's fault.  Going back to the
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
 * takes nothing from anyone.  A tenant under FAIR_FLOOR_NS in the last
 * window and this one is never lowered: it takes too little to matter,
 * and lowering stops its run-ahead. */
#define FAIR_CAP_NS	2000000ULL
#define FAIR_FLOOR_NS	(FAIR_WINDOW_NS / 5)

struct fair_slot {
	unsigned int tenant;	/* 0: free (atomic) */
	uint64_t window;	/* the window @cur counts (atomic) */
	uint64_t cur, prev;	/* ns served in it, and in the one before */
};

static struct fair_slot fair[FAIR_SLOTS];
static int fair_can;		/* 0 unknown, 1 may lower and raise, -1 not */
static __thread int fair_base = 100;	/* this thread's own nice (100: unread) */

static uint64_t fair_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

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

/* @s's windows brought to @w: what it counted moves to prev. */
static void fair_roll(struct fair_slot *s, uint64_t w)
{
	uint64_t was = __atomic_load_n(&s->window, __ATOMIC_RELAXED), cur;

	if (was == w || !__atomic_compare_exchange_n(&s->window, &was, w, false, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		return;
	cur = __atomic_exchange_n(&s->cur, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->prev, was + 1 == w ? cur : 0, __ATOMIC_RELAXED);
}

/* @tenant's slot, taken if it has none (a free or stale one); NULL when
 * all are in use: that tenant is then neither counted nor lowered. */
static struct fair_slot *fair_slot(unsigned int tenant, uint64_t w)
{
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
	__atomic_store_n(&free_->window, w, __ATOMIC_RELAXED);
	return free_;
}

/* Did @me take more than its share (1.25x an equal share, and more than
 * FAIR_FLOOR_NS) of the last window and this one, with another tenant
 * served in them too? */
static bool fair_over(const struct fair_slot *me, uint64_t w)
{
	uint64_t total = 0, mine = 0, v;
	unsigned int i, n = 0;

	for (i = 0; i < FAIR_SLOTS; i++) {
		struct fair_slot *s = &fair[i];

		if (!__atomic_load_n(&s->tenant, __ATOMIC_RELAXED))
			continue;
		fair_roll(s, w);
		v = __atomic_load_n(&s->prev, __ATOMIC_RELAXED) +
		    __atomic_load_n(&s->cur, __ATOMIC_RELAXED);
		if (!v)
			continue;
		total += v;
		n++;
		if (s == me)
			mine = v;
	}
	return n >= 2 && mine > FAIR_FLOOR_NS && mine * n * 4 > total * 5;
}

/*
 * A fault of @tenant (0: none) begins on this thread: with @lower, the
 * thread is lowered if that tenant is over its share.  Fill *@f for
 * serve_fair_end().  Return whether the tenant is over its share (then
 * the fault does not run ahead).  The worker's run-ahead windows are
 * counted, never lowered: the worker is one thread for every tenant, so
 * a window run low would hold up the others' behind it.
 */
bool serve_fair_begin(unsigned int tenant, struct serve_fair *f, bool lower)
{
	f->slot = NULL;
	f->low = false;
	if (!tenant)
		return false;
	f->t0 = fair_now();
	f->slot = fair_slot(tenant, f->t0 / FAIR_WINDOW_NS);
	if (!f->slot || !fair_over(f->slot, f->t0 / FAIR_WINDOW_NS) || !fair_may_renice())
		return false;
	if (!lower)
		return true;
	if (fair_base == 100) {
		errno = 0;
		fair_base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
		if (errno)
			fair_base = 0;
	}
	if (fair_base >= FAIR_NICE ||
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FAIR_NICE))
		return false;
	f->low = true;
	return true;
}

/* The fault begun by serve_fair_begin() ends: its time counted, the
 * thread's priority back. */
void serve_fair_end(struct serve_fair *f)
{
	struct fair_slot *s = f->slot;
	uint64_t now;

	if (f->low)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), fair_base);
	if (!s)
		return;
	now = fair_now();
	fair_roll(s, now / FAIR_WINDOW_NS);
	__atomic_add_fetch(&s->cur, now - f->t0 < FAIR_CAP_NS ? now - f->t0 : FAIR_CAP_NS,
			   __ATOMIC_RELAXED);
}
