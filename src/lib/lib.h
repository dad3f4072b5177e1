/* SPDX-License-Identifier: MIT */
/*
 * What every layer of the library shares (src/lib/): the page macros, the
 * counters' atomics, ufault's own threads (thread.c), the pid checks
 * (pid.c), memory a fork does not copy (nocow.c), the kernel interfaces
 * newer than the installed headers (compat.h) and the lock classes
 * (lockdep.h).  It knows no structure of a layer above it.  Each layer has
 * a private header that includes the one below it: engine/engine.h,
 * store/store.h, cache/cache.h (and the shared structures,
 * cache/mm_types.h), fault/fault.h, as/as.h.  The lock order is
 * src/lib/lockorder.h: the one list, which lockdep.c checks in a
 * LOCKDEP=1 build and every other file's comments refer to.
 */
#ifndef UF_LIB_H
#define UF_LIB_H

#define UF_NO_DEPRECATED_WARNINGS	/* the core calls ->nopage itself */
#include "ufault.h"
#include "compat.h"
#include "lockdep.h"

#include <pthread.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define PAGE_SHIFT	12
#define PAGE_SIZE	UF_PAGE_SIZE
#define PAGE_MASK	(~(PAGE_SIZE - 1))
#define PAGE_ALIGNED(x)	(((uint64_t)(x) & (PAGE_SIZE - 1)) == 0)
#define PAGE_ALIGN(x)	(((x) + PAGE_SIZE - 1) & PAGE_MASK)	/* up, as mmap(2) rounds a length */
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define BITS_PER_LONG	(8 * sizeof(unsigned long))

#define UF_MAX_HANDLERS	64
#define UF_MAX_SIZE	((1ULL << 63) - PAGE_SIZE)	/* largest object size */
#define UF_EXPORT	__attribute__((visibility("default")))

#define uf_add(p, n)	__atomic_add_fetch((p), (n), __ATOMIC_RELAXED)
#define uf_load(p)	__atomic_load_n((p), __ATOMIC_RELAXED)

static inline uint64_t size_pages(uint64_t size)
{
	return DIV_ROUND_UP(size, PAGE_SIZE);
}

/* CLOCK_MONOTONIC in ns */
static inline uint64_t uf_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A spinning thread's pause: the CPU's hint that it spins (no yield) */
static inline void uf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* @ns (of uf_now_ns()'s clock) as a timespec: a timed wait's deadline */
static inline struct timespec uf_ns_timespec(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };
}

/* addresses [start, end) */
struct uf_range {
	unsigned long start, end;
};

/* A thread of ufault's own (thread.c): its stack is not a fork child's. */
struct uf_thread {
	pthread_t id;
	void *stack;
	size_t size;
	void *(*fn)(void *);
	void *arg;
};

/* thread.c: ufault's own threads, on stacks fork children do not inherit */
int uf_thread_start(struct uf_thread *t, void *(*fn)(void *), void *arg);
void uf_thread_join(struct uf_thread *t);

/* pid.c: this process as ufault sees it (uf_forked() and uf_object_forked()
 * of cache/mm_types.h compare it with an mm's and an object's) */
pid_t uf_pid(void);

/* nocow.c: memory a fork does not copy, for state no fork child reads */
void *uf_nocow_alloc(size_t n);
void *uf_nocow_realloc(void *p, size_t n);
void uf_nocow_free(void *p);
void *uf_nocow_map(size_t len);

#endif /* UF_LIB_H */
