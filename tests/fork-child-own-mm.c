/* Description: a fork child makes an mm of its own and uses it as any
 * process would: its own object mapping reads the file's bytes, its writes
 * reach its store, its own fork child (the grandchild) keeps that mapping
 * and is served by the child's handlers; the parent's mm and mapping are
 * untouched meanwhile, and the child's calls on the parent's mm still
 * fail with -ECHILD.  Three rounds, so that the second child forks from a
 * parent whose handlers built address spaces for the first.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	64
#define SIZE	(NPAGES * PG)
#define ROUNDS	3

/* ThreadSanitizer (make SAN=thread): the child makes an mm, and with it
 * threads, after a fork of a process with threads; the runtime refuses
 * that unless told (the child shares no memory with the parent it would
 * race on but its own copy). */
const char *__tsan_default_options(void);
__attribute__((used)) const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

/* AddressSanitizer (gcc 12's runtime): its allocator's locks are not
 * taken around fork(), so a child whose new threads allocate deadlocks
 * when a parent thread held one at the fork (seen: 1 run in 10, the
 * child's handler threads asleep in the allocator at their start). */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD	1
#endif
#endif

/* The child's part of round @r; exits with 0 or fails an FK_CHECK. */
static void child(struct fk_sync *s, struct uf_mm *parent_mm, const unsigned char *pm, int r)
{
	struct uf_mm *mm = NULL;
	unsigned char *m;
	struct tt t;
	pid_t g;
	int st;

	ut_catch_signals();
	/* the parent's mapping works here, its mm is not this process's */
	FK_CHECK(s, fk_byte(pm + 5 * PG) == ut_pattern(5 * PG));
	FK_CHECK(s, uf_mm_stats(parent_mm, &(struct uf_stats){ 0 }) == -ECHILD);
	FK_CHECK(s, uf_mm_create(NULL, &mm) == 0);
	tt_open(&t, mm, TT_UF_TMPFS, SIZE);
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, true, 0);
	FK_CHECK(s, fk_byte(m + 7 * PG + r) == ut_pattern(7 * PG + r));
	m[8 * PG] = (unsigned char)(0xa0 + r);
	g = fork();
	FK_CHECK(s, g >= 0);
	if (g == 0) {
		/* the grandchild: the child's mapping, served by the child */
		FK_CHECK(s, fk_byte(m + 8 * PG) == 0xa0 + r);
		FK_CHECK(s, fk_byte(m + 40 * PG + 3) == ut_pattern(40 * PG + 3));
		m[41 * PG] = (unsigned char)(0xb0 + r);
		_exit(0);
	}
	FK_CHECK(s, waitpid(g, &st, 0) == g && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	FK_CHECK(s, fk_byte(m + 41 * PG) == 0xb0 + r);
	FK_CHECK(s, uf_object_sync(t.obj) == 0);
	FK_CHECK(s, ut_file_byte(t.path, 41 * PG) == 0xb0 + r);
	FK_CHECK(s, ut_file_byte(t.path, 8 * PG) == 0xa0 + r);
	tt_unmap(&t, m, SIZE);
	tt_close(&t);
	uf_mm_destroy(mm);
	fk_set(s, r + 1);
	_exit(0);
}

int main(void)
{
	struct fk_sync *s;
	struct uf_mm *mm;
	unsigned char *m;
	struct tt t;
	int r;

	ut_watchdog(90);
#ifdef ASAN_BUILD
	printf("AddressSanitizer's allocator is not fork-safe for a child's new threads\n");
	return UT_SKIP;
#endif
	if (!ut_fork_events())
		return UT_SKIP;
	s = fk_sync_new();
	mm = ut_mm_create(NULL);
	tt_open(&t, mm, TT_UF_TMPFS, SIZE);
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, true, 0);
	CHECK(m[0] == ut_pattern(0), "page 0");
	for (r = 0; r < ROUNDS; r++) {
		pid_t pid = fork();

		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			child(s, mm, m, r);
		fk_reap("child", s, pid);
		CHECK(s->step == r + 1, "round %d: the child ran to its end", r);
		/* the parent's own mapping and mm, after the child's */
		CHECK(m[(20 + r) * PG] == ut_pattern((20 + r) * PG), "round %d: a new page", r);
		m[(50 + r) * PG] = (unsigned char)(0xc0 + r);
	}
	CHECK_RET(uf_object_sync(t.obj), 0);
	for (r = 0; r < ROUNDS; r++)
		CHECK(ut_file_byte(t.path, (50 + r) * PG) == 0xc0 + r, "store: write %d", r);
	tt_unmap(&t, m, SIZE);
	tt_close(&t);
	uf_mm_destroy(mm);
	return 0;
}
