/* Description: fault() may install pages itself with uf_vm_insert_page()
 * and return NULL: the faulting access sees the bytes, a neighbour page
 * installed ahead is not faulted again, a second insert of the same page
 * returns -EEXIST and keeps the first, and an address outside the VMA or a
 * NULL page returns -EINVAL. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <sys/mman.h>

#define NPAGES 8

struct ctx {
	struct uf_mm *mm;
	int calls[NPAGES];
	int ret_first[NPAGES], ret_again[NPAGES], ret_ahead[NPAGES];
	int ret_outside[NPAGES], ret_null[NPAGES];
};

/*
 * The results are stored by the handler thread after the insert has woken
 * the faulting thread: main reads them once uf_munmap() has waited for the
 * handler.
 */
static void st(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static int ld(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	unsigned long start = (unsigned long)uf_vma_start(vma);
	unsigned long addr = start + fd->pgoff * UF_PAGE_SIZE;
	struct uf_page *page;

	if (fd->pgoff >= NPAGES) {
		fd->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	__atomic_add_fetch(&c->calls[fd->pgoff], 1, __ATOMIC_RELAXED);
	page = uf_page_alloc(c->mm);
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), 0x10 + (int)fd->pgoff, UF_PAGE_SIZE);
	/* any address inside the page will do */
	st(&c->ret_first[fd->pgoff], uf_vm_insert_page(vma, fd->address, page));
	memset(uf_page_address(page), 0xEE, UF_PAGE_SIZE);
	st(&c->ret_again[fd->pgoff], uf_vm_insert_page(vma, addr + 5, page));
	st(&c->ret_outside[fd->pgoff], uf_vm_insert_page(vma, start + uf_vma_len(vma), page));
	st(&c->ret_null[fd->pgoff], uf_vm_insert_page(vma, addr, NULL));
	/* even pages also install the next page ahead of its fault */
	if (fd->pgoff % 2 == 0) {
		memset(uf_page_address(page), 0x10 + (int)fd->pgoff + 1, UF_PAGE_SIZE);
		st(&c->ret_ahead[fd->pgoff], uf_vm_insert_page(vma, addr + UF_PAGE_SIZE, page));
	}
	uf_page_put(page);
	fd->type = UF_FAULT_MAJOR;
	return NULL;
}

static const struct uf_vm_operations ops = { .fault = fault };

int main(void)
{
	struct ctx c = { 0 };
	struct uf_stats stats;
	unsigned char *map;
	size_t pg, i;

	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&map), 0);
	for (pg = 0; pg < NPAGES; pg++) {
		unsigned char *p = map + pg * UF_PAGE_SIZE;

		if (pg % 4 == 0)
			p[3] = (unsigned char)(0x10 + pg);	/* write first */
		for (i = 0; i < UF_PAGE_SIZE; i++)
			CHECK(p[i] == (unsigned char)(0x10 + pg), "page %zu byte %zu = %#x", pg, i, p[i]);
	}
	CHECK_RET(uf_munmap(c.mm, map, NPAGES * UF_PAGE_SIZE), 0);
	for (pg = 0; pg < NPAGES; pg++) {
		if (pg % 2) {
			CHECK(ld(&c.calls[pg]) == 0, "page %zu installed ahead but faulted %d times",
			      pg, ld(&c.calls[pg]));
			continue;
		}
		CHECK(ld(&c.calls[pg]) == 1, "page %zu: %d calls", pg, ld(&c.calls[pg]));
		CHECK(ld(&c.ret_first[pg]) == 0, "page %zu: insert returned %d", pg, ld(&c.ret_first[pg]));
		CHECK(ld(&c.ret_again[pg]) == -EEXIST, "page %zu: second insert returned %d",
		      pg, ld(&c.ret_again[pg]));
		CHECK(ld(&c.ret_outside[pg]) == -EINVAL, "page %zu: insert outside returned %d",
		      pg, ld(&c.ret_outside[pg]));
		CHECK(ld(&c.ret_null[pg]) == -EINVAL, "page %zu: insert NULL returned %d",
		      pg, ld(&c.ret_null[pg]));
		CHECK(ld(&c.ret_ahead[pg]) == 0, "page %zu: insert ahead returned %d",
		      pg, ld(&c.ret_ahead[pg]));
	}
	/* per-mm totals: fault() typed each of its NPAGES / 2 calls MAJOR */
	CHECK_RET(uf_mm_stats(c.mm, &stats), 0);
	CHECK(stats.major_faults == NPAGES / 2 && stats.minor_faults == 0 && stats.sigbus == 0,
	      "stats major %lu minor %lu sigbus %lu", (unsigned long)stats.major_faults,
	      (unsigned long)stats.minor_faults, (unsigned long)stats.sigbus);
	CHECK(uf_vm_insert_page(NULL, (unsigned long)map, NULL) == -EINVAL, "insert NULL vma");
	uf_mm_destroy(c.mm);
	return 0;
}
