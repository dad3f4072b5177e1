/* Description: after fork(), a UF_MAP_PRIVATE object mapping is
 * copy-on-write between parent and child, as the kernel's MAP_PRIVATE
 * mapping of a file is: the child sees the parent's private writes made
 * before the fork, neither sees the other's writes after it, and pages
 * neither had touched read the object's bytes.  Run against every store
 * and against the kernel's own mmap of a tmpfs and a disk file.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	64
#define SIZE	(NPAGES * PG)

static void child(struct fk_sync *s, unsigned char *m, pid_t parent)
{
	ut_catch_signals();
	FK_CHECK(s, fk_byte(m + 1 * PG) == 0xa1);		/* parent's, before */
	FK_CHECK(s, fk_byte(m + 50 * PG + 9) == ut_pattern(50 * PG + 9));
	m[1 * PG] = 0xc1;
	m[3 * PG] = 0xc3;		/* cached, untouched by the parent */
	m[51 * PG] = 0xc5;		/* a hole, write first */
	fk_set(s, 1);
	fk_wait(s, 2, parent);
	FK_CHECK(s, fk_byte(m + 5 * PG) == ut_pattern(5 * PG));	/* not the parent's */
	FK_CHECK(s, fk_byte(m + 1 * PG) == 0xc1);
	_exit(0);
}

static void run(enum tt_kind kind, struct uf_mm *mm)
{
	struct fk_sync *s = fk_sync_new();
	unsigned char *m, b = 0;
	struct tt t;
	pid_t pid;
	int i;

	tt_open(&t, mm, kind, SIZE);
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, false, 0);
	for (i = 0; i < 8; i++)
		CHECK(m[i * PG] == ut_pattern((uint64_t)i * PG), "%s: page %d", t.name, i);
	m[1 * PG] = 0xa1;
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(s, m, getppid());
	fk_wait(s, 1, 0);
	CHECK(m[1 * PG] == 0xa1, "%s: the parent's copy", t.name);
	CHECK(m[3 * PG] == ut_pattern(3 * PG), "%s: the child's write leaked", t.name);
	CHECK(m[51 * PG] == ut_pattern(51 * PG), "%s: the child's hole write leaked", t.name);
	m[5 * PG] = 0xb5;
	fk_set(s, 2);
	fk_reap(t.name, s, pid);
	CHECK_RET(tt_pread(&t, &b, 1, 3 * PG), 1);
	CHECK(b == ut_pattern(3 * PG), "%s: a private write reached the object", t.name);
	tt_unmap(&t, m, SIZE);
	tt_close(&t);
	munmap(s, UF_PAGE_SIZE);
}

int main(void)
{
	struct uf_mm *mm;
	int k;

	ut_watchdog(120);
	mm = ut_mm_create(NULL);
	for (k = 0; k < TT_NKINDS; k++)
		if (fk_runs((enum tt_kind)k))
			run((enum tt_kind)k, mm);
	uf_mm_destroy(mm);
	return ut_fork_events() ? 0 : UT_SKIP;
}
