/* SPDX-License-Identifier: MIT */
/*
 * For the truncate race tests (trunc-race-fault, huge-trunc-race): the
 * writer's published state and its iterations, the reader threads, the
 * check of every byte they read against it and of the last stamp.  The
 * test defines NPAGES (pages read in turn) before including this.  Not a test program itself (the Makefile
 * builds tests/<name>.c only).
 */
#ifndef UT_TRUNC_RACE_H
#define UT_TRUNC_RACE_H

#include "trunc-target.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define OFF	17	/* the byte of each page that is stamped and read */

/*
 * Writer state: iteration i goes through 3i+1 (truncating to 0 and
 * extending), 3i+2 (extended, stamping), 3i+3 (stamped).  0: the initial
 * pattern.
 */
struct race {
	struct tt t;
	uint64_t state;
	int stop;
};

struct reader {
	struct race *r;
	const char *name;
	unsigned char *map;
	unsigned long reads, sigbus, zeros, stamps;
	pthread_t thread;
};

static unsigned char stamp(uint64_t i)
{
	return (unsigned char)(i % 255 + 1);
}

/* Is there an x in [a, b] with x % 3 == m? */
static bool phase_in(uint64_t a, uint64_t b, uint64_t m)
{
	uint64_t x = a + (m + 3 - a % 3) % 3;

	return x <= b;
}

static void check_read(struct reader *rd, size_t pg, int sig, const struct ut_fault *f,
		       unsigned char v, uint64_t a, uint64_t b)
{
	const char *tn = rd->r->t.name;
	uint64_t i;

	rd->reads++;
	if (sig) {
		CHECK(sig == SIGBUS, "%s: %s page %zu: signal %d", tn, rd->name, pg, sig);
		CHECK(f->addr == rd->map + pg * PG + OFF, "%s: %s page %zu: si_addr %p, want %p",
		      tn, rd->name, pg, f->addr, (void *)(rd->map + pg * PG + OFF));
		CHECK(phase_in(a, b, 1), "%s: %s page %zu: SIGBUS with no truncate running "
		      "(state %lu..%lu)", tn, rd->name, pg, (unsigned long)a, (unsigned long)b);
		rd->sigbus++;
		return;
	}
	if (a < 2 && v == ut_pattern(pg * PG + OFF))
		return;		/* the initial bytes, before the first truncate completed */
	if (v == 0) {
		CHECK(phase_in(a, b, 1) || phase_in(a, b, 2), "%s: %s page %zu: zero while "
		      "stamped (state %lu..%lu)", tn, rd->name, pg, (unsigned long)a,
		      (unsigned long)b);
		rd->zeros++;
		return;
	}
	/* stamp(i) may be seen when 3i+2 <= b and the next truncate had not
	 * completed at a (it completes before state 3i+5) */
	for (i = a >= 5 ? (a - 5) / 3 : 0; 3 * i + 2 <= b; i++) {
		if (a < 3 * i + 5 && v == stamp(i)) {
			rd->stamps++;
			return;
		}
	}
	CHECK(0, "%s: %s page %zu: stale byte %#x (state %lu..%lu, current stamp %#x)", tn,
	      rd->name, pg, v, (unsigned long)a, (unsigned long)b,
	      b >= 2 ? stamp((b - 2) / 3) : 0);
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct race *r = rd->r;
	size_t pg = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct ut_fault f;
		unsigned char v = 0;
		uint64_t a, b;
		int sig;

		a = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
		sig = ut_read(rd->map + pg * PG + OFF, &v, &f);
		/* ut_read() is a call into another file (a compiler barrier), and
		 * x86 keeps loads in order: the read happened before this load */
		b = __atomic_load_n(&r->state, __ATOMIC_SEQ_CST);
		check_read(rd, pg, sig, &f, v, a, b);
		pg = (pg + 1) % NPAGES;
	}
	return NULL;
}

/* Open @r's target of @kind, map it shared and private, and start a
 * reader on each mapping. */
static void race_start(struct race *r, struct uf_mm *mm, enum tt_kind kind,
		       struct reader rd[2])
{
	int k;

	tt_open(&r->t, mm, kind, NPAGES * PG);
	r->state = 0;
	r->stop = 0;
	rd[0] = (struct reader){ .r = r, .name = "shared" };
	rd[1] = (struct reader){ .r = r, .name = "private" };
	rd[0].map = tt_map(&r->t, NPAGES * PG, PROT_READ, true, 0);
	rd[1].map = tt_map(&r->t, NPAGES * PG, PROT_READ, false, 0);
	for (k = 0; k < 2; k++)
		CHECK_RET(pthread_create(&rd[k].thread, NULL, reader_main, &rd[k]), 0);
}

/* The writer's iteration @i: truncate to 0, extend, stamp every page,
 * each phase published (struct race). */
static void race_step(struct race *r, uint64_t i)
{
	unsigned char s = stamp(i);
	size_t pg;

	__atomic_store_n(&r->state, 3 * i + 1, __ATOMIC_SEQ_CST);
	CHECK_RET(tt_truncate(&r->t, 0), 0);
	CHECK_RET(tt_truncate(&r->t, NPAGES * PG), 0);
	__atomic_store_n(&r->state, 3 * i + 2, __ATOMIC_SEQ_CST);
	for (pg = 0; pg < NPAGES; pg++)
		CHECK_RET(tt_pwrite(&r->t, &s, 1, pg * PG + OFF), 1);
	__atomic_store_n(&r->state, 3 * i + 3, __ATOMIC_SEQ_CST);
}

/* Stop the readers after @iters iterations, check that every page now
 * reads the last stamp, and close the target. */
static void race_finish(struct race *r, struct reader rd[2], uint64_t iters)
{
	size_t pg;
	int k;

	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 2; k++) {
		/* a reader still blocked in a fault 10 s after the last
		 * truncate is a stuck page (the seed's "page stuck") */
		struct timespec ts;
		int ret;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		ret = pthread_timedjoin_np(rd[k].thread, NULL, &ts);
		CHECK(ret == 0, "%s: %s reader stuck in a fault for 10 s after %lu reads "
		      "(%lu SIGBUS): page stuck", r->t.name, rd[k].name, rd[k].reads, rd[k].sigbus);
	}
	for (k = 0; k < 2; k++) {
		for (pg = 0; pg < NPAGES; pg++) {
			unsigned char v = 0;
			struct ut_fault f;

			CHECK(ut_read(rd[k].map + pg * PG + OFF, &v, &f) == 0, "%s: final read",
			      r->t.name);
			CHECK(v == stamp(iters - 1), "%s: %s page %zu: final byte %#x, want %#x",
			      r->t.name, rd[k].name, pg, v, stamp(iters - 1));
		}
		printf("%s: %s: %lu reads: %lu SIGBUS, %lu zero, %lu stamped\n", r->t.name,
		       rd[k].name, rd[k].reads, rd[k].sigbus, rd[k].zeros, rd[k].stamps);
		tt_unmap(&r->t, rd[k].map, NPAGES * PG);
	}
	tt_close(&r->t);
}

#endif
