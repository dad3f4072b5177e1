/* Description: after fork(), an operation mapping (uf_mmap_ops) calls
 * fault() for the child's faults with a VMA of the child's address space
 * (not the parent's, at the same addresses, with the same private data),
 * installs what it returns into the child only, and what the child
 * writes stays the child's; ->open is called for the child's copy, as the
 * kernel's fork calls vm_ops->open.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#define NPAGES	16

struct ctx {
	struct uf_mm *mm;
	struct uf_vma *vma_seen[NPAGES];	/* the VMA of each page's last fault */
	int faults[NPAGES];
	int opens;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), (int)(0x40 + fd->pgoff), UF_PAGE_SIZE);
	__atomic_store_n(&c->vma_seen[fd->pgoff], vma, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->faults[fd->pgoff], 1, __ATOMIC_RELAXED);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static void vopen(struct uf_vma *vma)
{
	struct ctx *c = uf_vma_private(vma);

	__atomic_add_fetch(&c->opens, 1, __ATOMIC_RELAXED);
}

static const struct uf_vm_operations ops = { .fault = fault, .open = vopen };

int main(void)
{
	struct ctx c = { 0 };
	struct fk_sync *s;
	struct uf_vma *mine;
	unsigned char *m;
	pid_t pid;

	ut_watchdog(60);
	if (!ut_fork_events())
		return UT_SKIP;
	s = fk_sync_new();
	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * PG, PROT_READ | PROT_WRITE, &ops, &c, (void **)&m), 0);
	mine = uf_find_vma(c.mm, m);
	CHECK(m[0] == 0x40, "page 0");
	CHECK(c.vma_seen[0] == mine, "the parent's fault had the parent's VMA");
	m[0] = 0xa0;
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		pid_t parent = getppid();

		ut_catch_signals();
		FK_CHECK(s, fk_byte(m) == 0xa0);		/* inherited */
		FK_CHECK(s, fk_byte(m + 3 * PG) == 0x43);	/* fault() for the child */
		m[3 * PG] = 0xc3;
		m[0] = 0xc0;
		fk_set(s, 1);
		fk_wait(s, 2, parent);
		FK_CHECK(s, fk_byte(m + 5 * PG) == 0x45);	/* after the parent's */
		FK_CHECK(s, fk_byte(m + 3 * PG) == 0xc3);
		_exit(0);
	}
	fk_wait(s, 1, 0);
	CHECK(c.faults[3] == 1, "fault() calls for the child's page 3: %d", c.faults[3]);
	CHECK(c.vma_seen[3] && c.vma_seen[3] != mine, "the child's fault had the parent's VMA");
	CHECK(uf_vma_private(c.vma_seen[3]) == &c, "the child's VMA has the private data");
	CHECK(c.opens == 2, "->open calls (the mapping, the child's copy): %d", c.opens);
	CHECK(m[0] == 0xa0, "the child's write reached the parent");
	CHECK(m[3 * PG] == 0x43, "the child's page 3 reached the parent");
	CHECK(c.faults[3] == 2, "the parent's page 3 faulted on its own: %d", c.faults[3]);
	CHECK(c.vma_seen[3] == mine, "the parent's fault had the parent's VMA");
	m[5 * PG] = 0xb5;
	fk_set(s, 2);
	fk_reap("child", s, pid);
	CHECK(c.faults[5] == 2, "page 5 faulted in both: %d", c.faults[5]);
	CHECK_RET(uf_munmap(c.mm, m, NPAGES * PG), 0);
	uf_mm_destroy(c.mm);
	return 0;
}
