/* Description: a broken fault() that returns NULL with type MINOR or MAJOR
 * but installs nothing makes that access get SIGBUS (counted as sigbus),
 * not a fault that never ends; fault() that installed a neighbour page
 * but not the faulting one is just as broken. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>

#define NPAGES 6

struct ctx {
	struct uf_mm *mm;
	int calls[NPAGES];
};

/* pages 0, 1: nothing installed (MINOR, MAJOR); page 2: installs page 3
 * instead; pages 3.. : good */
static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	unsigned long start = (unsigned long)uf_vma_start(vma);
	struct uf_page *page;

	__atomic_add_fetch(&c->calls[fd->pgoff % NPAGES], 1, __ATOMIC_RELAXED);
	switch (fd->pgoff) {
	case 0:
		fd->type = UF_FAULT_MINOR;
		return NULL;
	case 1:
		fd->type = UF_FAULT_MAJOR;
		return NULL;
	case 2:
		page = uf_page_alloc(c->mm);
		if (page) {
			memset(uf_page_address(page), 0x33, UF_PAGE_SIZE);
			uf_vm_insert_page(vma, start + 3 * UF_PAGE_SIZE, page);
			uf_page_put(page);
		}
		fd->type = UF_FAULT_MINOR;
		return NULL;
	default:
		page = uf_page_alloc(c->mm);
		if (page)
			memset(uf_page_address(page), 0x30 + (int)fd->pgoff, UF_PAGE_SIZE);
		fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
		return page;
	}
}

static const struct uf_vm_operations ops = { .fault = fault };

/*
 * A write that catches SIGBUS/SIGSEGV.  Not ut_write(): the compiler drops
 * its store of the jump buffer (dead before the volatile write), so the
 * signal is not caught; ut_copy_from() into the mapping keeps it.
 */
static int write_byte(void *p, unsigned char val, struct ut_fault *f)
{
	return ut_copy_from(p, &val, 1, f);
}

int main(void)
{
	struct ctx c = { 0 };
	struct uf_stats st;
	struct ut_fault f;
	unsigned char *map, v;
	size_t pg;

	ut_catch_signals();
	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&map), 0);
	for (pg = 0; pg < 3; pg++) {
		unsigned char *p = map + pg * UF_PAGE_SIZE;

		CHECK(ut_read(p + 8, &v, &f) == SIGBUS, "page %zu: read got signal %d", pg, f.sig);
		CHECK((unsigned char *)f.addr >= p && (unsigned char *)f.addr < p + UF_PAGE_SIZE,
		      "page %zu: si_addr %p", pg, f.addr);
		CHECK(write_byte(p, 1, &f) == SIGBUS, "page %zu: write got signal %d", pg, f.sig);
	}
	CHECK(ut_read(map + 3 * UF_PAGE_SIZE, &v, &f) == 0 && v == 0x33, "page 3: %d %#x", f.sig, v);
	CHECK(ut_read(map + 4 * UF_PAGE_SIZE, &v, &f) == 0 && v == 0x34, "page 4: %d %#x", f.sig, v);
	CHECK(__atomic_load_n(&c.calls[3], __ATOMIC_RELAXED) == 0, "page 3 faulted after insert");

	CHECK_RET(uf_munmap(c.mm, map, NPAGES * UF_PAGE_SIZE), 0);
	CHECK_RET(uf_mm_stats(c.mm, &st), 0);
	{
		uint64_t broken = 0;

		for (pg = 0; pg < 3; pg++)
			broken += (uint64_t)__atomic_load_n(&c.calls[pg], __ATOMIC_RELAXED);
		CHECK(st.sigbus == broken && st.oom == 0, "sigbus %lu oom %lu, %lu broken calls",
		      (unsigned long)st.sigbus, (unsigned long)st.oom, (unsigned long)broken);
		CHECK(st.minor_faults == 1 && st.major_faults == 0, "minor %lu major %lu",
		      (unsigned long)st.minor_faults, (unsigned long)st.major_faults);
	}
	uf_mm_destroy(c.mm);
	return 0;
}
