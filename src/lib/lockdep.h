/* SPDX-License-Identifier: MIT */
/*
 * Lock classes, made from the one list (lockorder.h), and the checker's
 * calls (lockdep.c).  Included by lib/lib.h, and by redis/internal.h so
 * that the Redis store's locks are checked in the same build.  In a build
 * with -DUF_LOCKDEP (`make LOCKDEP=1`) the pthread mutex and rwlock calls
 * of every file that includes this go through lockdep.c; otherwise
 * uf_lockdep_class() and uf_lockdep_forget() are nothing.
 */
#ifndef UF_LOCKDEP_H
#define UF_LOCKDEP_H

#include "lockorder.h"

#include <pthread.h>

enum uf_lock_class {
	UF_LK_NONE,
#define UF_LOCK(cls, name, kind, under, where, what) UF_LK_##cls,
	UF_LOCK_ORDER
#undef UF_LOCK
	UF_LK_NCLASSES
};

/* what a class may be taken under, and what under it (lockorder.h) */
enum uf_lock_kind { UF_LK_ORDER, UF_LK_INNER, UF_LK_ALONE, UF_LK_LAST };

#define UF_LKB(cls)	(1ULL << UF_LK_##cls)

#ifdef UF_LOCKDEP
void uf_lockdep_class(const void *lock, enum uf_lock_class cls);
void uf_lockdep_forget(const void *lock);
int uf_ld_mutex_lock(pthread_mutex_t *m, const char *file, int line);
int uf_ld_mutex_trylock(pthread_mutex_t *m, const char *file, int line);
int uf_ld_mutex_unlock(pthread_mutex_t *m);
int uf_ld_rwlock_rdlock(pthread_rwlock_t *l, const char *file, int line);
int uf_ld_rwlock_wrlock(pthread_rwlock_t *l, const char *file, int line);
int uf_ld_rwlock_tryrdlock(pthread_rwlock_t *l, const char *file, int line);
int uf_ld_rwlock_trywrlock(pthread_rwlock_t *l, const char *file, int line);
int uf_ld_rwlock_unlock(pthread_rwlock_t *l);
void uf_ld_assert_held(const void *lock, const char *what, const char *file, int line);
#define uf_lockdep_assert_held(l, what)	uf_ld_assert_held(l, what, __FILE__, __LINE__)
#ifndef UF_LOCKDEP_SELF
#define pthread_mutex_lock(m)		uf_ld_mutex_lock(m, __FILE__, __LINE__)
#define pthread_mutex_trylock(m)	uf_ld_mutex_trylock(m, __FILE__, __LINE__)
#define pthread_mutex_unlock(m)		uf_ld_mutex_unlock(m)
#define pthread_rwlock_rdlock(l)	uf_ld_rwlock_rdlock(l, __FILE__, __LINE__)
#define pthread_rwlock_wrlock(l)	uf_ld_rwlock_wrlock(l, __FILE__, __LINE__)
#define pthread_rwlock_tryrdlock(l)	uf_ld_rwlock_tryrdlock(l, __FILE__, __LINE__)
#define pthread_rwlock_trywrlock(l)	uf_ld_rwlock_trywrlock(l, __FILE__, __LINE__)
#define pthread_rwlock_unlock(l)	uf_ld_rwlock_unlock(l)
#endif
#else
static inline void uf_lockdep_class(const void *lock, enum uf_lock_class cls)
{
	(void)lock;
	(void)cls;
}
/* @lock is no longer held by this thread: its memory was wiped (a fork
 * child's copy of a MADV_WIPEONFORK lock) without an unlock */
static inline void uf_lockdep_forget(const void *lock)
{
	(void)lock;
}
#define uf_lockdep_assert_held(l, what)	((void)(l))
#endif

#endif
