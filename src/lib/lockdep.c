// SPDX-License-Identifier: MIT
/*
 * The lock order, checked: in a build with -DUF_LOCKDEP (`make LOCKDEP=1`,
 * and the UndefinedBehaviorSanitizer build), every pthread mutex and
 * rwlock the library and the Redis store take goes through here (lockdep.h
 * turns the calls into these), and a lock taken out of the order of
 * lockorder.h stops the process with both locks named and where each was
 * taken.  So does a lock with no class: every lock has a line in
 * lockorder.h and gets its class with uf_lockdep_class() after its init.
 * That is the one place the library prints or aborts: a debug build's
 * assertion, as the kernel's lockdep warns.
 *
 * Each thread keeps the locks it holds, with their classes, in the order
 * taken.  Taking a lock of class C (waiting for it) while holding one of
 * class H is wrong unless H names C in its "under" (lockorder.h), or
 *  - C is of kind LAST and is not H;
 *  - H and C are both of the main order and H comes before C;
 *  - H is of the main order and C is innermost.
 * A trylock that succeeds is noted without a check: "tried" locks are
 * taken in the inverted order on purpose, and do without when the try
 * fails.  A condition wait keeps its mutex noted (it is taken back before
 * the wait returns).
 *
 * Classes are found by the lock's address in a table that only grows
 * (relaxed atomics: no ordering that would hide a race from
 * ThreadSanitizer); an address reused by a new lock gets the new class.
 * These calls are exported in a LOCKDEP=1 build only (lockdep.map), for
 * libufault-redis.
 */
#define _GNU_SOURCE
#define UF_LOCKDEP_SELF		/* the real pthread calls here */
#include "lib/lib.h"

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
static bool ld_table_full;

/* lockorder.h, as a table */
static const struct ld_class {
	const char *name;
	enum uf_lock_kind kind;
	unsigned long long under;	/* UF_LKB() of classes allowed under it */
} ld_classes[UF_LK_NCLASSES] = {
	[UF_LK_NONE] = { "(no class)", UF_LK_ORDER, 0 },
#define UF_LOCK(cls, name, kind, under, where, what) [UF_LK_##cls] = { name, kind, under },
	UF_LOCK_ORDER
#undef UF_LOCK
};

static size_t ld_hash(uintptr_t a)
{
	return (size_t)((a >> 3) * 0x9e3779b97f4a7c15ULL >> 46) & (LD_SLOTS - 1);
}

UF_EXPORT void uf_lockdep_class(const void *lock, enum uf_lock_class cls)
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
	/* full: the lock is reported when taken */
	__atomic_store_n(&ld_table_full, true, __ATOMIC_RELAXED);
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

/* Is taking class @c (waiting) wrong while holding class @h? */
static bool ld_wrong(unsigned int h, unsigned int c)
{
	enum uf_lock_kind hk = ld_classes[h].kind, ck = ld_classes[c].kind;

	if (ld_classes[h].under & (1ULL << c))
		return false;
	if (h == c)
		return true;
	if (ck == UF_LK_LAST)
		return false;
	if (hk != UF_LK_ORDER || ck == UF_LK_ALONE)
		return true;
	return ck == UF_LK_ORDER && h > c;
}

static void ld_report(const char *what, const void *lock, const char *file, int line)
{
	fprintf(stderr, "ufault lockdep: %s %p (%s:%d): every lock needs a class (lockorder.h)\n",
		what, lock, file, line);
	abort();
}

static void ld_acquire(const void *lock, bool tried, const char *file, int line)
{
	unsigned int c = ld_class(lock), i;

	if (c == UF_LK_NONE)
		ld_report(ld_table_full ? "a lock taken with the class table full"
					: "a lock with no class taken", lock, file, line);
	for (i = 0; !tried && i < ld_nheld; i++) {
		const struct ld_held *h = &ld_held[i];

		if (ld_wrong(h->cls, c)) {
			fprintf(stderr, "ufault lockdep: %s (%s:%d) taken holding %s (%s:%d)\n",
				ld_classes[c].name, file, line, ld_classes[h->cls].name, h->file,
				h->line);
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

/* This thread no longer holds @lock, which was not unlocked: a fork
 * child's copy of a MADV_WIPEONFORK lock reads as a free lock. */
UF_EXPORT void uf_lockdep_forget(const void *lock)
{
	ld_release(lock);
}

UF_EXPORT int uf_ld_mutex_lock(pthread_mutex_t *m, const char *file, int line)
{
	ld_acquire(m, false, file, line);
	return pthread_mutex_lock(m);
}

UF_EXPORT int uf_ld_mutex_trylock(pthread_mutex_t *m, const char *file, int line)
{
	int ret = pthread_mutex_trylock(m);

	if (!ret)
		ld_acquire(m, true, file, line);
	return ret;
}

UF_EXPORT int uf_ld_mutex_unlock(pthread_mutex_t *m)
{
	ld_release(m);
	return pthread_mutex_unlock(m);
}

UF_EXPORT int uf_ld_rwlock_rdlock(pthread_rwlock_t *l, const char *file, int line)
{
	ld_acquire(l, false, file, line);
	return pthread_rwlock_rdlock(l);
}

UF_EXPORT int uf_ld_rwlock_wrlock(pthread_rwlock_t *l, const char *file, int line)
{
	ld_acquire(l, false, file, line);
	return pthread_rwlock_wrlock(l);
}

UF_EXPORT int uf_ld_rwlock_tryrdlock(pthread_rwlock_t *l, const char *file, int line)
{
	int ret = pthread_rwlock_tryrdlock(l);

	if (!ret)
		ld_acquire(l, true, file, line);
	return ret;
}

UF_EXPORT int uf_ld_rwlock_trywrlock(pthread_rwlock_t *l, const char *file, int line)
{
	int ret = pthread_rwlock_trywrlock(l);

	if (!ret)
		ld_acquire(l, true, file, line);
	return ret;
}

UF_EXPORT int uf_ld_rwlock_unlock(pthread_rwlock_t *l)
{
	ld_release(l);
	return pthread_rwlock_unlock(l);
}

/*
 * A walk that needs @lock held: report and abort if this thread does not
 * hold it (in any mode).  A thread holding more than LD_HELD locks may
 * hold it unnoted: then nothing is said.
 */
UF_EXPORT void uf_ld_assert_held(const void *lock, const char *what, const char *file, int line)
{
	unsigned int i;

	if (ld_nheld >= LD_HELD)
		return;
	for (i = 0; i < ld_nheld; i++)
		if (ld_held[i].lock == lock)
			return;
	fprintf(stderr, "ufault lockdep: %s (%s:%d) walked without %s\n", what, file, line,
		ld_classes[ld_class(lock)].name);
	abort();
}

#endif /* UF_LOCKDEP */
