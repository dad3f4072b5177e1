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
	struct reader rd[2];
	uint64_t i;

	race_start(r, mm, kind, rd);
	for (i = 0; i < ITERS; i++) {
		race_step(r, i);
		if (i % 3 == 2)
			wait_collapse(r, collapses(mm));
	}
	race_finish(r, rd, ITERS);
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
