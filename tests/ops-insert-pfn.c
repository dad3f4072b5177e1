/* Description: fault() may install caller-owned page-aligned memory with
 * uf_vm_insert_pfn() and return NULL: the mapping shows a copy of those
 * bytes (later changes to the memory are not seen), an unaligned kaddr
 * returns -EINVAL and installs nothing, a second insert returns -EEXIST. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <sys/mman.h>

#define NPAGES 4

struct ctx {
	struct uf_mm *mm;
	unsigned char *mem;		/* NPAGES pages the "device" owns */
	int calls[NPAGES];
	int ret_unaligned[NPAGES], ret_first[NPAGES], ret_again[NPAGES];
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	unsigned char *kaddr;
	int ret;

	if (fd->pgoff == NPAGES) {
		/* the last page: one more fault, after all the others ended */
		fd->type = UF_FAULT_MINOR;
		return uf_page_alloc(c->mm);
	}
	kaddr = c->mem + fd->pgoff * UF_PAGE_SIZE;
	__atomic_add_fetch(&c->calls[fd->pgoff], 1, __ATOMIC_RELAXED);
	ret = uf_vm_insert_pfn(vma, fd->address, kaddr + 1);
	__atomic_store_n(&c->ret_unaligned[fd->pgoff], ret, __ATOMIC_RELEASE);
	ret = uf_vm_insert_pfn(vma, fd->address, kaddr);
	__atomic_store_n(&c->ret_first[fd->pgoff], ret, __ATOMIC_RELEASE);
	/* from here on the faulting thread may be running again */
	ret = uf_vm_insert_pfn(vma, fd->address, c->mem);
	__atomic_store_n(&c->ret_again[fd->pgoff], ret, __ATOMIC_RELEASE);
	fd->type = UF_FAULT_MINOR;
	return NULL;
}

static const struct uf_vm_operations ops = { .fault = fault };

int main(void)
{
	struct ctx c = { 0 };
	unsigned char *map;
	size_t pg, i;

	c.mm = ut_mm_create(NULL);
	c.mem = mmap(NULL, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(c.mem != MAP_FAILED, "mmap");
	for (i = 0; i < NPAGES * UF_PAGE_SIZE; i++)
		c.mem[i] = (unsigned char)(i * 3 + i / UF_PAGE_SIZE);

	CHECK_RET(uf_mmap_ops(c.mm, (NPAGES + 1) * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&map), 0);
	for (pg = 0; pg < NPAGES; pg++) {
		size_t base = pg * UF_PAGE_SIZE;

		if (pg == 1)
			map[base + 9] = (unsigned char)(c.mem[base + 9]);	/* write first */
		for (i = 0; i < UF_PAGE_SIZE; i++)
			CHECK(map[base + i] == c.mem[base + i], "page %zu byte %zu = %#x want %#x",
			      pg, i, map[base + i], c.mem[base + i]);
	}
	/* copied at install time: the device memory may change freely */
	memset(c.mem, 0xAA, NPAGES * UF_PAGE_SIZE);
	for (pg = 0; pg < NPAGES; pg++)
		CHECK(map[pg * UF_PAGE_SIZE + 100] == (unsigned char)(100 * 3 + pg),
		      "page %zu follows kaddr after install", pg);
	/* and the mapping's writes do not reach it */
	map[UF_PAGE_SIZE + 1] = 0x55;
	CHECK(c.mem[UF_PAGE_SIZE + 1] == 0xAA, "mapping write reached kaddr");
	CHECK(uf_vm_insert_pfn(NULL, (unsigned long)map, c.mem) == -EINVAL, "insert NULL vma");

	/* The handler stores the results after its insert woke the faulting
	 * thread.  One handler thread: once the next fault has been served,
	 * the earlier fault() calls have returned; read them after that. */
	CHECK(map[NPAGES * UF_PAGE_SIZE] == 0, "last page");
	CHECK_RET(uf_munmap(c.mm, map, (NPAGES + 1) * UF_PAGE_SIZE), 0);
	for (pg = 0; pg < NPAGES; pg++) {
		int calls = __atomic_load_n(&c.calls[pg], __ATOMIC_ACQUIRE);
		int unaligned = __atomic_load_n(&c.ret_unaligned[pg], __ATOMIC_ACQUIRE);
		int first = __atomic_load_n(&c.ret_first[pg], __ATOMIC_ACQUIRE);
		int again = __atomic_load_n(&c.ret_again[pg], __ATOMIC_ACQUIRE);

		CHECK(calls == 1, "page %zu: %d calls", pg, calls);
		CHECK(unaligned == -EINVAL, "page %zu: unaligned insert returned %d", pg, unaligned);
		CHECK(first == 0, "page %zu: insert returned %d", pg, first);
		CHECK(again == -EEXIST, "page %zu: second insert returned %d", pg, again);
	}
	uf_mm_destroy(c.mm);
	munmap(c.mem, NPAGES * UF_PAGE_SIZE);
	return 0;
}
