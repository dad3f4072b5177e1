/* Description: fork() while another thread's uf_munmap() of the same
 * mapping is under way (here: held in the mapping's ->close, after ufault
 * took it out of its table and before the kernel's unmap): the kernel's
 * fork copied the mapping into the child, so the child's faults there are
 * served -- fault() with the child's VMA -- not SIGBUS, and the parent's
 * unmap then completes.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#include <pthread.h>

#define NPAGES	8
#define LD(x)	__atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

struct ctx {
	struct uf_mm *mm;
	unsigned char *m;
	int in_close, release, unmapped;
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
	fd->type = UF_FAULT_MAJOR;
	return page;
}

/* The parent's mapping closes (its unmap): hold it there until the test
 * has forked.  A child's copy closes at the child's exit: pass. */
static void vclose(struct uf_vma *vma)
{
	struct ctx *c = uf_vma_private(vma);

	if (uf_find_vma(c->mm, c->m) != vma && LD(c->in_close))
		return;
	ST(c->in_close, 1);
	while (!LD(c->release))
		usleep(100);
}

static const struct uf_vm_operations ops = { .fault = fault, .close = vclose };

static void *unmapper(void *arg)
{
	struct ctx *c = arg;

	ST(c->unmapped, uf_munmap(c->mm, c->m, NPAGES * PG) == 0 ? 1 : -1);
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct ctx c = { 0 };
	struct fk_sync *s;
	pthread_t t;
	pid_t pid;

	ut_watchdog(60);
	if (!ut_fork_events())
		return UT_SKIP;
	s = fk_sync_new();
	c.mm = ut_mm_create(&cfg);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * PG, PROT_READ, &ops, &c, (void **)&c.m), 0);
	CHECK(c.m[0] == 0x40, "page 0 before the unmap");
	CHECK(pthread_create(&t, NULL, unmapper, &c) == 0, "pthread_create");
	while (!LD(c.in_close))
		usleep(100);

	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		ut_catch_signals();
		FK_CHECK(s, fk_byte(c.m) == 0x40);		/* inherited */
		FK_CHECK(s, fk_byte(c.m + 2 * PG) == 0x42);	/* served, not SIGBUS */
		FK_CHECK(s, fk_byte(c.m + 7 * PG) == 0x47);
		_exit(0);
	}
	fk_reap("child", s, pid);
	ST(c.release, 1);
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	CHECK(LD(c.unmapped) == 1, "the parent's uf_munmap failed");
	CHECK(uf_find_vma(c.mm, c.m) == NULL, "the mapping is still in the parent's table");
	uf_mm_destroy(c.mm);
	return 0;
}
