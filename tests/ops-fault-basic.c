/* Description: every first touch of an operation mapping calls fault() once
 * with the right address, pgoff and write flag; the page's bytes read back. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>

#define NPAGES 64

struct ctx {
	struct uf_mm *mm;
	int calls[NPAGES];
	unsigned long addr[NPAGES];
	unsigned int flags[NPAGES];
};

static struct uf_page *fill_fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;
	unsigned char *p;
	size_t i;

	if (fd->pgoff >= NPAGES) {
		fd->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	/* atomics: the faulting thread reads these after a wake that goes
	 * through the kernel, a happens-before ThreadSanitizer cannot see */
	__atomic_add_fetch(&c->calls[fd->pgoff], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->addr[fd->pgoff], fd->address, __ATOMIC_RELAXED);
	__atomic_store_n(&c->flags[fd->pgoff], fd->flags, __ATOMIC_RELEASE);
	page = uf_page_alloc(c->mm);
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	p = uf_page_address(page);
	for (i = 0; i < UF_PAGE_SIZE; i++)
		p[i] = (unsigned char)(fd->pgoff + i);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fill_fault };

int main(void)
{
	static struct ctx c;
	struct uf_stats st;
	unsigned char *map;
	size_t pg, i;
	int ret;

	c.mm = ut_mm_create(NULL);
	ret = uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c, (void **)&map);
	CHECK(ret == 0, "uf_mmap_ops: %d", ret);

	for (pg = 0; pg < NPAGES; pg++) {
		unsigned char *p = map + pg * UF_PAGE_SIZE;

		if (pg % 2) {
			p[100] = 0xAB;		/* write first */
			CHECK(p[100] == 0xAB, "write lost on page %zu", pg);
		}
		for (i = 0; i < UF_PAGE_SIZE; i++)
			if (i != 100 || !(pg % 2))
				CHECK(p[i] == (unsigned char)(pg + i), "page %zu byte %zu = %u", pg, i, p[i]);
		unsigned int flags = __atomic_load_n(&c.flags[pg], __ATOMIC_ACQUIRE);
		unsigned long addr = __atomic_load_n(&c.addr[pg], __ATOMIC_RELAXED);
		int calls = __atomic_load_n(&c.calls[pg], __ATOMIC_RELAXED);

		CHECK(calls == 1, "page %zu: %d calls", pg, calls);
		CHECK((addr & ~(UF_PAGE_SIZE - 1)) == (unsigned long)p, "page %zu: address %#lx", pg, addr);
		CHECK(!!(flags & UF_FAULT_FLAG_WRITE) == (pg % 2), "page %zu: flags %#x", pg, flags);
	}
	CHECK(uf_find_vma(c.mm, map + 5) != NULL, "uf_find_vma");
	CHECK(uf_vma_private(uf_find_vma(c.mm, map)) == &c, "uf_vma_private");
	CHECK(uf_find_vma(c.mm, map + NPAGES * UF_PAGE_SIZE) == NULL, "find past end");
	CHECK_RET(uf_vma_stats(uf_find_vma(c.mm, map), &st), 0);
	CHECK(st.major_faults == NPAGES && st.minor_faults == 0, "stats %lu/%lu",
	      (unsigned long)st.major_faults, (unsigned long)st.minor_faults);
	CHECK_RET(uf_munmap(c.mm, map, NPAGES * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c.mm);
	return 0;
}
