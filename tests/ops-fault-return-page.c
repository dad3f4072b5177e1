/* Description: fault() that returns a page hands one reference to the core,
 * which installs a copy of the page's bytes and puts it: a page the fault()
 * keeps (uf_page_get) stays valid and can be returned for several pgoffs,
 * and later changes to it are not seen through the mapping. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>

#define NPAGES 8

struct ctx {
	struct uf_mm *mm;
	struct uf_page *shared;		/* kept by the test, returned with a get */
	int calls[NPAGES];
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;
	unsigned char *p;

	if (fd->pgoff >= NPAGES) {
		fd->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	__atomic_add_fetch(&c->calls[fd->pgoff], 1, __ATOMIC_RELAXED);
	if (fd->pgoff % 2 == 0) {
		/* the shared page, stamped with this pgoff before each return */
		p = uf_page_address(c->shared);
		memset(p, 0x40 + (int)fd->pgoff, UF_PAGE_SIZE);
		uf_page_get(c->shared);
		fd->type = UF_FAULT_MINOR;
		return c->shared;
	}
	/* a fresh page, with an extra get/put pair */
	page = uf_page_alloc(c->mm);
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	uf_page_get(page);
	p = uf_page_address(page);
	memset(p, 0x80 + (int)fd->pgoff, UF_PAGE_SIZE);
	uf_page_put(page);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

int main(void)
{
	struct ctx c = { 0 };
	unsigned char *map, *sp;
	size_t pg, i;

	c.mm = ut_mm_create(NULL);
	c.shared = uf_page_alloc(c.mm);
	CHECK(c.shared != NULL, "uf_page_alloc");
	sp = uf_page_address(c.shared);
	CHECK(sp != NULL && ((uintptr_t)sp & (UF_PAGE_SIZE - 1)) == 0, "page address %p", (void *)sp);
	for (i = 0; i < UF_PAGE_SIZE; i++)
		CHECK(sp[i] == 0, "uf_page_alloc not zeroed at %zu", i);
	CHECK(uf_page_alloc(NULL) == NULL, "uf_page_alloc(NULL)");

	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&map), 0);
	for (pg = 0; pg < NPAGES; pg++) {
		unsigned char want = (unsigned char)((pg % 2 ? 0x80 : 0x40) + pg);

		for (i = 0; i < UF_PAGE_SIZE; i++)
			CHECK(map[pg * UF_PAGE_SIZE + i] == want, "page %zu byte %zu = %#x, want %#x",
			      pg, i, map[pg * UF_PAGE_SIZE + i], want);
		CHECK(__atomic_load_n(&c.calls[pg], __ATOMIC_RELAXED) == 1, "page %zu: calls", pg);
	}
	/* copies: changing the kept page changes no mapping page */
	memset(sp, 0xEE, UF_PAGE_SIZE);
	for (pg = 0; pg < NPAGES; pg += 2)
		CHECK(map[pg * UF_PAGE_SIZE + 7] == (unsigned char)(0x40 + pg),
		      "page %zu follows the fault()'s page after install", pg);
	/* and writing the mapping does not change the kept page */
	map[0] = 0x11;
	CHECK(sp[0] == 0xEE, "mapping write reached the page");
	CHECK(map[0] == 0x11, "write lost");

	CHECK_RET(uf_munmap(c.mm, map, NPAGES * UF_PAGE_SIZE), 0);
	/* the test's own reference is still good after the core's puts */
	CHECK(sp[UF_PAGE_SIZE - 1] == 0xEE, "kept page changed");
	uf_page_put(c.shared);
	uf_page_put(NULL);
	uf_mm_destroy(c.mm);
	return 0;
}
