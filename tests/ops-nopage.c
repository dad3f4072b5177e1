/* Description: the deprecated nopage(vma, address, &type) still serves an
 * operation mapping through the core's adapter when ->fault is NULL: it is
 * told the page-aligned address, its page is installed, its MINOR/MAJOR
 * type is counted, and NULL means SIGBUS; with both set, ->fault is used. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>

#define NPAGES 6

struct ctx {
	struct uf_mm *mm;
	unsigned char *map;
	int nopage_calls[NPAGES];
	int fault_calls;
	int bad_address;		/* nopage was told an address off the page */
};

/* pages 0-3: served (even MINOR, odd MAJOR); 4: NULL, type untouched
 * (NOPAGE_SIGBUS); 5: NULL with MINOR set, yet nothing installed */
static struct uf_page *nopage(struct uf_vma *vma, unsigned long address, int *type)
{
	struct ctx *c = uf_vma_private(vma);
	unsigned long start = (unsigned long)uf_vma_start(vma);
	size_t pg = (address - start) / UF_PAGE_SIZE;
	struct uf_page *page;

	if (address % UF_PAGE_SIZE || address < start || pg >= NPAGES ||
	    uf_find_vma(c->mm, (void *)address) != vma) {
		__atomic_store_n(&c->bad_address, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	__atomic_add_fetch(&c->nopage_calls[pg], 1, __ATOMIC_RELAXED);
	if (pg == 4)
		return NULL;
	if (pg == 5) {
		*type = UF_FAULT_MINOR;
		return NULL;
	}
	page = uf_page_alloc(c->mm);
	if (!page)
		return NULL;
	memset(uf_page_address(page), 0x60 + (int)pg, UF_PAGE_SIZE);
	*type = pg % 2 ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
	return page;
}

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	__atomic_add_fetch(&c->fault_calls, 1, __ATOMIC_RELAXED);
	if (page)
		memset(uf_page_address(page), 0x70, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static const struct uf_vm_operations nopage_ops = { .nopage = nopage };
static const struct uf_vm_operations both_ops = { .fault = fault, .nopage = nopage };

static int write_byte(void *p, unsigned char val, struct ut_fault *f)
{
	return ut_copy_from(p, &val, 1, f);	/* see ops-fault-sigbus.c */
}

int main(void)
{
	struct ctx c = { 0 };
	struct uf_stats st;
	struct ut_fault f;
	unsigned char v;
	size_t pg, i;

	ut_catch_signals();
	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &nopage_ops,
			      &c, (void **)&c.map), 0);
	for (pg = 0; pg < 4; pg++) {
		unsigned char *p = c.map + pg * UF_PAGE_SIZE;

		if (pg == 2)
			CHECK(write_byte(p + 77, 0x62, &f) == 0, "page 2 write: signal %d", f.sig);
		for (i = 0; i < UF_PAGE_SIZE; i += 97)
			CHECK(p[i + 3] == 0x60 + pg, "page %zu byte %zu = %#x", pg, i + 3, p[i + 3]);
		CHECK(__atomic_load_n(&c.nopage_calls[pg], __ATOMIC_RELAXED) == 1,
		      "page %zu: nopage calls", pg);
	}
	for (pg = 4; pg < NPAGES; pg++) {
		unsigned char *p = c.map + pg * UF_PAGE_SIZE;

		CHECK(ut_read(p + 5, &v, &f) == SIGBUS, "page %zu: signal %d, want SIGBUS", pg, f.sig);
		CHECK((unsigned char *)f.addr >= p && (unsigned char *)f.addr < p + UF_PAGE_SIZE,
		      "page %zu: si_addr %p", pg, f.addr);
		CHECK(write_byte(p, 1, &f) == SIGBUS, "page %zu: again: signal %d", pg, f.sig);
	}
	CHECK(c.map[0] == 0x60, "page 0 after the refusals");
	CHECK(!__atomic_load_n(&c.bad_address, __ATOMIC_RELAXED), "nopage told a bad address");
	CHECK(__atomic_load_n(&c.fault_calls, __ATOMIC_RELAXED) == 0, "fault() called");
	CHECK_RET(uf_munmap(c.mm, c.map, NPAGES * UF_PAGE_SIZE), 0);
	CHECK_RET(uf_mm_stats(c.mm, &st), 0);
	CHECK(st.minor_faults == 2 && st.major_faults == 2, "minor %lu major %lu",
	      (unsigned long)st.minor_faults, (unsigned long)st.major_faults);
	{
		uint64_t refused = (uint64_t)__atomic_load_n(&c.nopage_calls[4], __ATOMIC_RELAXED) +
				   (uint64_t)__atomic_load_n(&c.nopage_calls[5], __ATOMIC_RELAXED);

		CHECK(st.sigbus == refused && st.oom == 0, "sigbus %lu oom %lu, refused %lu",
		      (unsigned long)st.sigbus, (unsigned long)st.oom, (unsigned long)refused);
	}

	/* ->fault wins over ->nopage */
	memset(c.nopage_calls, 0, sizeof(c.nopage_calls));
	CHECK_RET(uf_mmap_ops(c.mm, 2 * UF_PAGE_SIZE, PROT_READ, &both_ops, &c, (void **)&c.map), 0);
	CHECK(c.map[0] == 0x70 && c.map[UF_PAGE_SIZE] == 0x70, "both: bytes %#x %#x",
	      c.map[0], c.map[UF_PAGE_SIZE]);
	CHECK(__atomic_load_n(&c.fault_calls, __ATOMIC_RELAXED) == 2, "both: fault() calls");
	CHECK(__atomic_load_n(&c.nopage_calls[0], __ATOMIC_RELAXED) == 0, "both: nopage called");
	CHECK_RET(uf_munmap(c.mm, c.map, 2 * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c.mm);
	return 0;
}
