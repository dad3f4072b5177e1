/* Description: truncate racing with faults never brings stale data back.
 * Two threads read one byte of every page of an object in a loop, through a
 * shared and a private mapping, while the main thread repeats (2000 times)
 * truncate to 0, extend to 8 pages, write a new stamp byte into each page.
 * Every read is checked against the writer's published state: it returns
 * the current stamp, zero (between extend and stamp), the previous stamp
 * (only while a truncate may not have finished) or SIGBUS with the exact
 * si_addr (only while a truncate ran); never a byte from an iteration whose
 * truncate had completed.  Every store; the kernel's mmap of a tmpfs and a
 * disk file runs the same loop to check the checker. */
#define _GNU_SOURCE
#define NPAGES	8	/* read in turn by the readers (trunc-race.h) */
#include "trunc-race.h"

#define ITERS	2000

static void run(struct race *r, struct uf_mm *mm, enum tt_kind kind)
{
	struct reader rd[2];
	uint64_t i;

	race_start(r, mm, kind, rd);
	for (i = 0; i < ITERS; i++) {
		race_step(r, i);
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
	free(r);
	uf_mm_destroy(mm);
	return 0;
}
