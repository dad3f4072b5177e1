/* Description: an mm created with UF_MM_USER_MODE_ONLY serves faults taken
 * in user mode like any other (reads, writes, SIGBUS from fault()), even
 * where /dev/userfaultfd could be used; a system call touching a missing
 * page is not reported to it: the call fails with EFAULT, it does not hang. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES 8

struct ctx {
	struct uf_mm *mm;
	int calls;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
	if (fd->pgoff == 3) {
		fd->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	page = uf_page_alloc(c->mm);
	if (page)
		memset(uf_page_address(page), 0x50 + (int)fd->pgoff, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MAJOR : UF_FAULT_OOM;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

int main(void)
{
	struct uf_mm_config cfg = { .flags = UF_MM_USER_MODE_ONLY };
	struct ctx c = { 0 };
	struct ut_fault f;
	unsigned char *map, v, buf[16] = { 0 };
	int pfd[2], ret;
	ssize_t n;
	size_t pg;

	ut_catch_signals();
	ret = uf_mm_create(&cfg, &c.mm);
	if (ret == -EPERM || ret == -ENOSYS) {
		fprintf(stderr, "skip: user-mode-only userfaultfd not available (%s)\n",
			strerror(-ret));
		return UT_SKIP;
	}
	CHECK(ret == 0, "uf_mm_create(UF_MM_USER_MODE_ONLY): %d", ret);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&map), 0);
	for (pg = 0; pg < NPAGES - 1; pg++) {
		unsigned char *p = map + pg * UF_PAGE_SIZE;

		if (pg == 3) {
			CHECK(ut_read(p, &v, &f) == SIGBUS, "page 3: signal %d", f.sig);
			continue;
		}
		if (pg % 2)
			p[10] = 0xEE;	/* write first */
		CHECK(p[0] == 0x50 + pg, "page %zu: %#x", pg, p[0]);
		CHECK(pg % 2 == 0 || p[10] == 0xEE, "page %zu: write lost", pg);
	}
	CHECK(__atomic_load_n(&c.calls, __ATOMIC_RELAXED) == NPAGES - 1, "fault() calls");

	/* a kernel-mode access to the last, missing page */
	CHECK(pipe(pfd) == 0, "pipe");
	n = write(pfd[1], map + (NPAGES - 1) * UF_PAGE_SIZE, sizeof(buf));
	CHECK(n < 0 && errno == EFAULT, "write() from a missing page returned %zd (%s), want "
	      "EFAULT: the kernel-mode fault reached the handler", n, n < 0 ? strerror(errno) : "");
	CHECK(__atomic_load_n(&c.calls, __ATOMIC_RELAXED) == NPAGES - 1, "fault() called");
	/* user mode still gets the page afterwards */
	CHECK(map[(NPAGES - 1) * UF_PAGE_SIZE] == 0x50 + NPAGES - 1, "last page");
	close(pfd[0]);
	close(pfd[1]);
	CHECK_RET(uf_munmap(c.mm, map, NPAGES * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c.mm);
	return 0;
}
