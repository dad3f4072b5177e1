/* SPDX-License-Identifier: MIT */
/*
 * A thread that samples an mm's cache_pages every few microseconds and
 * keeps the largest value seen, for the budget tests: the ceiling must
 * hold at every moment, not only between the test's own accesses.
 * Not a test program itself (the Makefile builds tests/<name>.c only).
 */
#ifndef UT_CACHE_SAMPLER_H
#define UT_CACHE_SAMPLER_H

#include "helpers.h"

#include <pthread.h>
#include <unistd.h>

struct ut_sampler {
	struct uf_mm *mm;
	pthread_t thread;
	bool stop;			/* atomic */
	uint64_t max_cache;
};

static void *ut_sample_loop(void *p)
{
	struct ut_sampler *s = p;
	struct uf_stats st;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		if (uf_mm_stats(s->mm, &st) == 0 && st.cache_pages > s->max_cache)
			s->max_cache = st.cache_pages;
		usleep(20);
	}
	return NULL;
}

static inline void ut_sampler_start(struct ut_sampler *s, struct uf_mm *mm)
{
	s->mm = mm;
	s->stop = false;
	s->max_cache = 0;
	CHECK(pthread_create(&s->thread, NULL, ut_sample_loop, s) == 0, "pthread_create");
}

/* Stop the sampler; return the most cache pages it saw. */
static inline uint64_t ut_sampler_stop(struct ut_sampler *s)
{
	__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
	pthread_join(s->thread, NULL);
	return s->max_cache;
}

#endif
