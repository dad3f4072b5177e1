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
#define NPAGES	(2 * 512 + 8)	/* read in turn by the readers (trunc-race.h) */
#include "trunc-race.h"

#include <time.h>

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
