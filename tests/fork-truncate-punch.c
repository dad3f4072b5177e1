/* Description: truncate and hole punch in the parent reach a fork child's
 * shared mapping, as they do the kernel's: past the new EOF the child
 * takes SIGBUS, a punched page reads zero, the rest reads the object's
 * bytes (cached before the fork or not).  Run against every store and
 * against the kernel's own mmap of a tmpfs and a disk file.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	64
#define SIZE	(NPAGES * PG)

static void child(struct fk_sync *s, unsigned char *m, pid_t parent)
{
	ut_catch_signals();
	FK_CHECK(s, fk_byte(m + 20 * PG) == ut_pattern(20 * PG));	/* mapped here */
	fk_set(s, 1);
	fk_wait(s, 2, parent);
	FK_CHECK(s, fk_byte(m + 20 * PG) == -SIGBUS);		/* past EOF */
	FK_CHECK(s, fk_byte(m + 40 * PG) == -SIGBUS);		/* never touched */
	FK_CHECK(s, fk_byte(m + 4 * PG + 1) == 0);		/* punched */
	FK_CHECK(s, fk_byte(m + 5 * PG + 1) == ut_pattern(5 * PG + 1));
	FK_CHECK(s, fk_byte(m + 12 * PG + 1) == ut_pattern(12 * PG + 1));	/* cold */
	_exit(0);
}

static void run(enum tt_kind kind, struct uf_mm *mm)
{
	struct fk_sync *s = fk_sync_new();
	unsigned char *m;
	struct tt t;
	pid_t pid;
	int i;

	tt_open(&t, mm, kind, SIZE);
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, true, 0);
	for (i = 0; i < 8; i++)
		CHECK(m[i * PG] == ut_pattern((uint64_t)i * PG), "%s: page %d", t.name, i);
	CHECK(m[20 * PG] == ut_pattern(20 * PG), "%s: page 20", t.name);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(s, m, getppid());
	fk_wait(s, 1, 0);
	CHECK_RET(tt_truncate(&t, 16 * PG), 0);
	CHECK_RET(tt_punch(&t, 4 * PG, PG), 0);
	fk_set(s, 2);
	fk_reap(t.name, s, pid);
	tt_expect_sigbus(t.name, m + 20 * PG);
	tt_unmap(&t, m, SIZE);
	tt_close(&t);
	munmap(s, UF_PAGE_SIZE);
}

int main(void)
{
	struct uf_mm *mm;
	int k;

	ut_watchdog(120);
	ut_catch_signals();
	mm = ut_mm_create(NULL);
	for (k = 0; k < TT_NKINDS; k++)
		if (fk_runs((enum tt_kind)k))
			run((enum tt_kind)k, mm);
	uf_mm_destroy(mm);
	return ut_fork_events() ? 0 : UT_SKIP;
}
