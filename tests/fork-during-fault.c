/* Description: fork() while faults are being served, from an application
 * thread and from inside fault() itself (a handler thread), leaves a child
 * that can clean up (uf_mm_destroy()) and exit, and a parent whose faults
 * keep being served.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define NPAGES	2048

struct ctx {
	struct uf_mm *mm;
	unsigned char *map;
	int forks_in_fault;	/* fault() forks while this is > 0 */
	int stop;
	int child_fail;
};

/* A child cleans up and exits; the forker reaps it. */
static void reap(struct ctx *c, pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		__atomic_store_n(&c->child_fail, 1, __ATOMIC_RELAXED);
}

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), (int)(fd->pgoff & 0xff), UF_PAGE_SIZE);
	if (__atomic_load_n(&c->forks_in_fault, __ATOMIC_RELAXED) > 0) {
		pid_t pid;

		__atomic_sub_fetch(&c->forks_in_fault, 1, __ATOMIC_RELAXED);
		pid = fork();
		if (pid == 0) {
			uf_mm_destroy(c->mm);
			_exit(0);
		}
		reap(c, pid);
	}
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

static void *toucher(void *arg)
{
	struct ctx *c = arg;
	size_t i;

	for (i = 0; i < NPAGES && !__atomic_load_n(&c->stop, __ATOMIC_RELAXED); i++) {
		unsigned char v = c->map[i * UF_PAGE_SIZE];

		if (v != (i & 0xff)) {
			fprintf(stderr, "page %zu reads %#x\n", i, v);
			__atomic_store_n(&c->child_fail, 2, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct ctx c = { 0 };
	pthread_t t;
	int i;

	os_watchdog(120);
	c.mm = ut_mm_create(&cfg);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&c.map), 0);
	__atomic_store_n(&c.forks_in_fault, 5, __ATOMIC_RELAXED);
	CHECK(pthread_create(&t, NULL, toucher, &c) == 0, "pthread_create");
	/* forks from this thread while the toucher's faults are served */
	for (i = 0; i < 20; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			uf_mm_destroy(c.mm);
			_exit(0);	/* (see fork-child-destroy.c) */
		}
		reap(&c, pid);
	}
	pthread_join(t, NULL);
	CHECK(__atomic_load_n(&c.forks_in_fault, __ATOMIC_RELAXED) == 0, "fault() did not fork");
	CHECK(__atomic_load_n(&c.child_fail, __ATOMIC_RELAXED) == 0, "a child failed (%d)",
	      c.child_fail);
	/* the parent still works */
	CHECK(c.map[(NPAGES - 1) * UF_PAGE_SIZE] == ((NPAGES - 1) & 0xff), "last page");
	uf_mm_destroy(c.mm);
	return 0;
}
