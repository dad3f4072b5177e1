/* Description: truncate racing with faults and with the collapse of huge
 * extents never brings stale data back: trunc-race-fault's loop over an
 * object of two 2 MiB extents and a few pages, each stamped whole, so that
 * every iteration fills both extents and queues their collapse; every 3rd
 * iteration waits (bounded) for a collapse, so that readers also read
 * through PMD-mapped huge pages when the next truncate removes them.  Two
 * threads read one byte of every page in a loop, through a shared and a
 * private mapping, while the main thread repeats truncate to 0, extend,
 * write a new stamp byte into each page.
 * Every read is checked against the writer's published state: it returns
 * the current stamp, zero (between extend and stamp), the previous stamp
 * (only while a truncate may not have finished) or SIGBUS with the exact
 * si_addr (only while a truncate ran); never a byte from an iteration whose
 * truncate had completed.  Every store; the kernel's mmap of a tmpfs and a
 * disk file runs the same loop to check the checker. */
#define _GNU_SOURCE
#include "trunc-target.h"

#include <pthread.h>
#include <time.h>

#define NPAGES	(2 * 512 + 8)
/* sanitizer builds run 5-10x slower: fewer rounds there */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ITERS	9
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ITERS	9
#endif
#endif
#ifndef ITERS
#define ITERS	24
#endif
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

static uint64_t collapses(struct uf_mm *mm)
{
	struct uf_stats st;

	CHECK_RET(uf_mm_stats(mm, &st), 0);
	return st.huge_collapses;
}

/* ufault targets: wait (bounded) until a collapse more than @since is done. */
static void wait_collapse(struct race *r, uint64_t since)
{
	int n;

	if (tt_is_kernel(&r->t))
		return;
	for (n = 0; n < 200 && collapses(r->t.mm) <= since; n++)
		usleep(5000);
}

static void run(struct race *r, struct uf_mm *mm, enum tt_kind kind)
{
	struct reader rd[2] = {
		{ .r = r, .name = "shared" },
		{ .r = r, .name = "private" },
	};
	uint64_t i;
	size_t pg;
	int k;

	tt_open(&r->t, mm, kind, NPAGES * PG);
	r->state = 0;
	r->stop = 0;
	rd[0].map = tt_map(&r->t, NPAGES * PG, PROT_READ, true, 0);
	rd[1].map = tt_map(&r->t, NPAGES * PG, PROT_READ, false, 0);
	for (k = 0; k < 2; k++)
		CHECK_RET(pthread_create(&rd[k].thread, NULL, reader_main, &rd[k]), 0);

	for (i = 0; i < ITERS; i++) {
		unsigned char s = stamp(i);

		__atomic_store_n(&r->state, 3 * i + 1, __ATOMIC_SEQ_CST);
		CHECK_RET(tt_truncate(&r->t, 0), 0);
		CHECK_RET(tt_truncate(&r->t, NPAGES * PG), 0);
		__atomic_store_n(&r->state, 3 * i + 2, __ATOMIC_SEQ_CST);
		for (pg = 0; pg < NPAGES; pg++)
			CHECK_RET(tt_pwrite(&r->t, &s, 1, pg * PG + OFF), 1);
		__atomic_store_n(&r->state, 3 * i + 3, __ATOMIC_SEQ_CST);
		if (i % 3 == 2)
			wait_collapse(r, collapses(mm));
	}
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
			CHECK(v == stamp(ITERS - 1), "%s: %s page %zu: final byte %#x, want %#x",
			      r->t.name, rd[k].name, pg, v, stamp(ITERS - 1));
		}
		printf("%s: %s: %lu reads: %lu SIGBUS, %lu zero, %lu stamped\n", r->t.name,
		       rd[k].name, rd[k].reads, rd[k].sigbus, rd[k].zeros, rd[k].stamps);
		tt_unmap(&r->t, rd[k].map, NPAGES * PG);
	}
	tt_close(&r->t);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct race *r = calloc(1, sizeof(*r));
	int kind;

	CHECK(r, "out of memory");
	ut_catch_signals();
	for (kind = 0; kind < TT_NKINDS; kind++)
		run(r, mm, (enum tt_kind)kind);
	printf("%lu collapses\n", (unsigned long)collapses(mm));
	/* the race ran either way; that huge pages took part is checked
	 * where the kernel makes them */
	if (ut_collapse_works())
		CHECK(collapses(mm) > 0, "no extent was ever collapsed");
	free(r);
	uf_mm_destroy(mm);
	return 0;
}
