/* Description: after fork(), a UF_MAP_SHARED object mapping is one cache
 * in parent and child, as the kernel's MAP_SHARED mapping of a file is:
 * the child reads what the parent wrote before the fork and the object's
 * bytes where nobody had touched; a write in either is seen at once by
 * the other's mapping and by uf_object_pread(); the child's writes reach
 * the store at the parent's next uf_msync(), both while the child lives
 * and after it exited.  Run against every store and against the kernel's
 * own mmap of a tmpfs and a disk file.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	64
#define SIZE	(NPAGES * PG)

static void child(struct fk_sync *s, unsigned char *m, pid_t parent)
{
	ut_catch_signals();
	FK_CHECK(s, fk_byte(m + 1 * PG) == 0xa1);		/* written before */
	FK_CHECK(s, fk_byte(m + 40 * PG + 3) == ut_pattern(40 * PG + 3));	/* untouched */
	FK_CHECK(s, fk_byte(m + 2 * PG) == ut_pattern(2 * PG));	/* cached */
	m[41 * PG + 5] = 0xc1;		/* a hole */
	m[2 * PG] = 0xc2;		/* a cached page */
	fk_set(s, 1);
	fk_wait(s, 2, parent);
	FK_CHECK(s, fk_byte(m + 42 * PG) == 0xb1);		/* the parent's, after */
	m[43 * PG + 7] = 0xc3;		/* then exit: the parent syncs after */
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
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, true, 0);
	for (i = 0; i < 8; i++)
		CHECK(m[i * PG] == ut_pattern((uint64_t)i * PG), "%s: page %d", t.name, i);
	m[1 * PG] = 0xa1;

	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(s, m, getppid());
	fk_wait(s, 1, 0);
	CHECK(m[41 * PG + 5] == 0xc1, "%s: the child's write to a hole", t.name);
	CHECK(m[2 * PG] == 0xc2, "%s: the child's write to a cached page", t.name);
	CHECK_RET(tt_pread(&t, &b, 1, 41 * PG + 5), 1);
	CHECK(b == 0xc1, "%s: pread of the child's write: %#x", t.name, b);
	/* the child's writes reach the store while it lives */
	CHECK_RET(tt_msync(&t, m, SIZE), 0);
	if (t.path[0]) {
		CHECK(ut_file_byte(t.path, 41 * PG + 5) == 0xc1, "%s: store, child's hole", t.name);
		CHECK(ut_file_byte(t.path, 2 * PG) == 0xc2, "%s: store, child's cached", t.name);
	}
	m[42 * PG] = 0xb1;
	fk_set(s, 2);
	fk_reap(t.name, s, pid);
	/* ... and after it exited */
	CHECK(m[43 * PG + 7] == 0xc3, "%s: the child's last write", t.name);
	CHECK_RET(tt_msync(&t, m, SIZE), 0);
	if (t.path[0]) {
		CHECK(ut_file_byte(t.path, 43 * PG + 7) == 0xc3, "%s: store, child's last", t.name);
		CHECK(ut_file_byte(t.path, 42 * PG) == 0xb1, "%s: store, parent's", t.name);
		CHECK(ut_file_byte(t.path, 1 * PG) == 0xa1, "%s: store, before fork", t.name);
	} else {
		CHECK_RET(tt_pread(&t, &b, 1, 43 * PG + 7), 1);
		CHECK(b == 0xc3, "%s: pread of the child's last write", t.name);
	}
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
