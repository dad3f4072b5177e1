/* Description: uf_mm_destroy() while a fork child lives: every page the
 * child had received keeps its bytes there, and every page it had not --
 * of an object mapping, cached in the parent or not, and of an operation
 * mapping -- gives the child SIGBUS when touched: never zeros, never a
 * hang.  The parent's own reads of the object's file are untouched.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	32
#define SIZE	(NPAGES * PG)

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct uf_page *page = uf_page_alloc(uf_vma_private(vma));

	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), 0x60, UF_PAGE_SIZE);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

int main(void)
{
	struct fk_sync *s;
	struct uf_mm *mm;
	unsigned char *m, *o;
	struct tt t;
	pid_t pid;

	ut_watchdog(60);
	if (!ut_fork_events())
		return UT_SKIP;
	s = fk_sync_new();
	mm = ut_mm_create(NULL);
	tt_open(&t, mm, TT_UF_TMPFS, SIZE);
	m = tt_map(&t, SIZE, PROT_READ, true, 0);
	CHECK_RET(uf_mmap_ops(mm, NPAGES * PG, PROT_READ | PROT_WRITE, &ops, mm, (void **)&o), 0);
	CHECK(m[0] == ut_pattern(0) && m[5 * PG] == ut_pattern(5 * PG), "parent's reads");
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		pid_t parent = getppid();

		ut_catch_signals();
		FK_CHECK(s, fk_byte(m + 1 * PG) == ut_pattern(1 * PG));
		FK_CHECK(s, fk_byte(o + 2 * PG) == 0x60);
		fk_set(s, 1);
		fk_wait(s, 2, parent);
		FK_CHECK(s, fk_byte(m + 1 * PG) == ut_pattern(1 * PG));	/* received */
		FK_CHECK(s, fk_byte(o + 2 * PG) == 0x60);
		FK_CHECK(s, fk_byte(m + 20 * PG) == -SIGBUS);	/* never cached */
		FK_CHECK(s, fk_byte(o + 7 * PG) == -SIGBUS);	/* never faulted */
		FK_CHECK(s, fk_byte(m + 20 * PG) == -SIGBUS);	/* and stays so */
		_exit(0);
	}
	fk_wait(s, 1, 0);
	uf_mm_destroy(mm);
	fk_set(s, 2);
	fk_reap("child", s, pid);
	CHECK(ut_file_byte(t.path, 20 * PG) == ut_pattern(20 * PG), "the file");
	uf_object_put(t.obj);
	unlink(t.path);
	return 0;
}
