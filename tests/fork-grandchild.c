/* Description: a fork child's own fork: the grandchild keeps the shared
 * object mapping too, reads the object's bytes where nobody had touched,
 * its writes are seen by the grandparent and reach the store at the
 * grandparent's next uf_object_sync(), after both descendants exited.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	64
#define SIZE	(NPAGES * PG)

int main(void)
{
	struct fk_sync *s;
	struct uf_mm *mm;
	unsigned char *m;
	struct tt t;
	pid_t pid;

	ut_watchdog(60);
	if (!ut_fork_events())
		return UT_SKIP;
	s = fk_sync_new();
	mm = ut_mm_create(NULL);
	tt_open(&t, mm, TT_UF_TMPFS, SIZE);
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, true, 0);
	CHECK(m[0] == ut_pattern(0), "page 0");
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		pid_t g;
		int st;

		ut_catch_signals();
		FK_CHECK(s, fk_byte(m + 10 * PG) == ut_pattern(10 * PG));
		m[10 * PG] = 0xc0;
		g = fork();
		FK_CHECK(s, g >= 0);
		if (g == 0) {
			FK_CHECK(s, fk_byte(m + 10 * PG) == 0xc0);
			FK_CHECK(s, fk_byte(m + 30 * PG + 1) == ut_pattern(30 * PG + 1));
			m[31 * PG + 2] = 0xd1;
			fk_set(s, 1);
			_exit(0);
		}
		FK_CHECK(s, waitpid(g, &st, 0) == g && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		FK_CHECK(s, fk_byte(m + 31 * PG + 2) == 0xd1);
		_exit(0);
	}
	fk_reap("child", s, pid);
	CHECK(s->step == 1, "the grandchild ran");
	CHECK(m[31 * PG + 2] == 0xd1, "the grandchild's write");
	CHECK(m[10 * PG] == 0xc0, "the child's write");
	CHECK_RET(uf_object_sync(t.obj), 0);
	CHECK(ut_file_byte(t.path, 31 * PG + 2) == 0xd1, "store: the grandchild's write");
	CHECK(ut_file_byte(t.path, 10 * PG) == 0xc0, "store: the child's write");
	tt_unmap(&t, m, SIZE);
	tt_close(&t);
	uf_mm_destroy(mm);
	return 0;
}
