// SPDX-License-Identifier: MIT
/*
 * The lock order, checked: in a build with -DUF_LOCKDEP (`make LOCKDEP=1`,
 * and the UndefinedBehaviorSanitizer build), every pthread mutex and
 * rwlock the library takes goes through here (internal.h turns the calls
 * into these), and a lock taken out of the order of internal.h stops the
 * process with both locks named and where each was taken.  That is the
 * one place the library prints or aborts: a debug build's assertion, as
 * the kernel's lockdep warns.
 *
 * A lock has a class when its init is followed by uf_lockdep_class();
 * the others are not checked.  Each thread keeps the locks it holds, with
 * their classes, in the order taken.  Taking a lock of class C (waiting
 * for it) while holding one of class H is wrong when:
 *  - H comes after C in the order (H > C), or H is C (two of one class at
 *    once), except for invalidate locks (an overlay store's ->read reads
 *    its lower object);
 *  - H is innermost and C is not a lock allowed under it (charge_lock ->
 *    obj_lock, a record's lock -> a prefetch's or the worker's), or H is
 *    a leaf (nothing under it);
 *  - H or C is a lock taken alone.
 * A trylock that succeeds is noted without a check: "tried" locks are
 * taken in the inverted order on purpose, and do without when the try
 * fails.  A condition wait keeps its mutex noted (it is taken back before
 * the wait returns).
 *
 * Classes are found by the lock's address in a table that only grows
 * (relaxed atomics: no ordering that would hide a race from
 * ThreadSanitizer); an address reused by a new lock gets the new class.
 */
#define _GNU_SOURCE
#define UF_LOCKDEP_SELF		/* the real pthread calls here */
#include "internal.h"

#ifdef UF_LOCKDEP

#include <stdio.h>
#include <stdlib.h>

#define LD_SLOTS	(1U << 18)	/* addresses with a class */
#define LD_HELD		32		/* locks one thread holds at once */

static struct ld_slot {
	uintptr_t addr;			/* 0: free */
	unsigned int cls;
} ld_table[LD_SLOTS];

struct ld_held {
	const void *lock;
	unsigned int cls;
	const char *file;
	int line;
};

static __thread struct ld_held ld_held[LD_HELD];
static __thread unsigned int ld_nheld;

static const char *const ld_names[UF_LK_NCLASSES] = {
	[UF_LK_NONE] = "(no class)",
	[UF_LK_RECLAIM] = "mm->reclaim_lock",
	[UF_LK_SYNC] = "obj->sync_lock",
	[UF_LK_VMA] = "mm->vma_lock",
	[UF_LK_AS] = "mm->as_lock",
	[UF_LK_AS_VMA] = "as->vma_lock",
	[UF_LK_POISON] = "mm->poison_lock",
	[UF_LK_INVALIDATE] = "obj->invalidate_lock",
	[UF_LK_RMAP] = "obj->rmap_lock",
	[UF_LK_PAGE] = "obj->page_lock",
	[UF_LK_HUGE] = "huge->lock",
	[UF_LK_VMA_REF] = "vma->ref_lock",
	[UF_LK_STORE] = "a store's lock",
	[UF_LK_COPY] = "u->copy_lock",
	[UF_LK_EV] = "u->ev_lock",
	[UF_LK_CHARGE] = "mm->charge_lock",
	[UF_LK_OBJ] = "mm->obj_lock",
	[UF_LK_ZAP] = "mm->zap_lock",
	[UF_LK_WS] = "obj->ws->lock",
	[UF_LK_PREFETCH] = "a prefetch's lock",
	[UF_LK_GUEST] = "u->guest_lock",
	[UF_LK_INFLIGHT] = "mm->inflight_lock",
	[UF_LK_RA] = "ra->lock",
	[UF_LK_WORKER] = "worker->lock",
	[UF_LK_START] = "u->lock",
	[UF_LK_ATTACH] = "mm->attach_lock, a->lock",
};

static size_t ld_hash(uintptr_t a)
{
	return (size_t)((a >> 3) * 0x9e3779b97f4a7c15ULL >> 46) & (LD_SLOTS - 1);
}

void uf_lockdep_class(const void *lock, enum uf_lock_class cls)
{
	uintptr_t a = (uintptr_t)lock;
	size_t i, h = ld_hash(a);

	for (i = 0; i < LD_SLOTS; i++) {
		struct ld_slot *s = &ld_table[(h + i) & (LD_SLOTS - 1)];
		uintptr_t cur = __atomic_load_n(&s->addr, __ATOMIC_RELAXED);

		if (!cur && __atomic_compare_exchange_n(&s->addr, &cur, a, false, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
			cur = a;
		if (cur == a) {
			__atomic_store_n(&s->cls, (unsigned int)cls, __ATOMIC_RELAXED);
			return;
		}
	}
	/* full: this lock goes unchecked */
}

static unsigned int ld_class(const void *lock)
{
	uintptr_t a = (uintptr_t)lock;
	size_t i, h = ld_hash(a);

	for (i = 0; i < LD_SLOTS; i++) {
		struct ld_slot *s = &ld_table[(h + i) & (LD_SLOTS - 1)];
		uintptr_t cur = __atomic_load_n(&s->addr, __ATOMIC_RELAXED);

		if (cur == a)
			return __atomic_load_n(&s->cls, __ATOMIC_RELAXED);
		if (!cur)
			return UF_LK_NONE;
	}
	return UF_LK_NONE;
}

static bool ld_alone(unsigned int c)
{
	return c >= UF_LK_INFLIGHT;
}

static bool ld_leaf(unsigned int c)
{
	return c == UF_LK_OBJ || c == UF_LK_ZAP || c == UF_LK_PREFETCH || c == UF_LK_WORKER ||
	       c == UF_LK_GUEST;
}

/* Is taking class @c (waiting) wrong while holding class @h? */
static bool ld_wrong(unsigned int h, unsigned int c)
{
	if (ld_alone(h) || ld_alone(c) || ld_leaf(h))
		return true;
	if (h == UF_LK_CHARGE)
		return c != UF_LK_OBJ;
	if (h == UF_LK_WS)
		return c != UF_LK_PREFETCH && c != UF_LK_WORKER;
	if (h == c)
		return c != UF_LK_INVALIDATE;
	return h > c;
}

static void ld_acquire(const void *lock, bool tried, const char *file, int line)
{
	unsigned int c = ld_class(lock), i;

	if (c == UF_LK_NONE)
		return;
	for (i = 0; !tried && i < ld_nheld; i++) {
		const struct ld_held *h = &ld_held[i];

		if (ld_wrong(h->cls, c)) {
			fprintf(stderr, "ufault lockdep: %s (%s:%d) taken holding %s (%s:%d)\n",
				ld_names[c], file, line, ld_names[h->cls], h->file, h->line);
			abort();
		}
	}
	if (ld_nheld < LD_HELD)
		ld_held[ld_nheld++] = (struct ld_held){ lock, c, file, line };
}

static void ld_release(const void *lock)
{
	unsigned int i;

	for (i = ld_nheld; i-- > 0;) {
		if (ld_held[i].lock == lock) {
			for (; i + 1 < ld_nheld; i++)
				ld_held[i] = ld_held[i + 1];
			ld_nheld--;
			return;
		}
	}
}

int uf_ld_mutex_lock(pthread_mutex_t *m, const char *file, int line)
{
	ld_acquire(m, false, file, line);
	return pthread_mutex_lock(m);
}

int uf_ld_mutex_trylock(pthread_mutex_t *m, const char *file, int line)
{
	int ret = pthread_mutex_trylock(m);

	if (!ret)
		ld_acquire(m, true, file, line);
	return ret;
}

int uf_ld_mutex_unlock(pthread_mutex_t *m)
{
	ld_release(m);
	return pthread_mutex_unlock(m);
}

int uf_ld_rwlock_rdlock(pthread_rwlock_t *l, const char *file, int line)
{
	ld_acquire(l, false, file, line);
	return pthread_rwlock_rdlock(l);
}

int uf_ld_rwlock_wrlock(pthread_rwlock_t *l, const char *file, int line)
{
	ld_acquire(l, false, file, line);
	return pthread_rwlock_wrlock(l);
}

int uf_ld_rwlock_tryrdlock(pthread_rwlock_t *l, const char *file, int line)
{
	int ret = pthread_rwlock_tryrdlock(l);

	if (!ret)
		ld_acquire(l, true, file, line);
	return ret;
}

int uf_ld_rwlock_trywrlock(pthread_rwlock_t *l, const char *file, int line)
{
	int ret = pthread_rwlock_trywrlock(l);

	if (!ret)
		ld_acquire(l, true, file, line);
	return ret;
}

int uf_ld_rwlock_unlock(pthread_rwlock_t *l)
{
	ld_release(l);
	return pthread_rwlock_unlock(l);
}

/*
 * A walk that needs @lock held: report and abort if this thread does not
 * hold it (in any mode).  A thread holding more than LD_HELD locks may
 * hold it unnoted: then nothing is said.
 */
void uf_ld_assert_held(const void *lock, const char *what, const char *file, int line)
{
	unsigned int i;

	if (ld_nheld >= LD_HELD)
		return;
	for (i = 0; i < ld_nheld; i++)
		if (ld_held[i].lock == lock)
			return;
	fprintf(stderr, "ufault lockdep: %s (%s:%d) walked without %s\n", what, file, line,
		ld_names[ld_class(lock)]);
	abort();
}

#endif /* UF_LOCKDEP */
