// SPDX-License-Identifier: MIT
/*
 * ops-counter - an operation mapping (driver style, no backing object):
 * fault() fills each page with its page number.
 *
 * Every first touch of a page is a real page fault that reaches fault()
 * with fdata->pgoff, the page's index in the mapping.  The program touches
 * the pages in a scrambled order, checks every word, and checks that
 * fault() ran exactly once per page.  Exit 0 on success, 1 on failure.
 */
#include <ufault.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define NPAGES	64
#define WORDS	(UF_PAGE_SIZE / sizeof(uint64_t))

struct counter {
	struct uf_mm *mm;
	unsigned int calls[NPAGES];	/* fault() calls per page */
};

static struct uf_page *counter_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct counter *c = uf_vma_private(vma);
	struct uf_page *page;
	uint64_t *words;
	size_t i;

	if (fdata->pgoff >= NPAGES) {
		fdata->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	page = uf_page_alloc(c->mm);
	if (!page) {
		fdata->type = UF_FAULT_OOM;
		return NULL;
	}
	words = uf_page_address(page);
	for (i = 0; i < WORDS; i++)
		words[i] = fdata->pgoff;
	__atomic_add_fetch(&c->calls[fdata->pgoff], 1, __ATOMIC_RELAXED);
	fdata->type = UF_FAULT_MINOR;	/* no I/O was needed */
	return page;			/* ufault installs a copy and puts it */
}

static const struct uf_vm_operations counter_ops = {
	.fault	= counter_fault,
};

int main(void)
{
	struct counter c = { 0 };
	struct uf_stats st;
	unsigned int calls;
	uint64_t *map;
	size_t n, i;
	int ret, bad = 0;

	ret = uf_mm_create(NULL, &c.mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	ret = uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE,
			  &counter_ops, &c, (void **)&map);
	if (ret) {
		fprintf(stderr, "uf_mmap_ops: %s\n", strerror(-ret));
		uf_mm_destroy(c.mm);
		return 1;
	}

	/* 37 is prime to NPAGES: every page once, out of order */
	for (i = 0; i < NPAGES; i++) {
		n = (i * 37) % NPAGES;
		if (map[n * WORDS + WORDS / 2] != n) {
			fprintf(stderr, "page %zu reads %llu\n", n,
				(unsigned long long)map[n * WORDS + WORDS / 2]);
			bad = 1;
		}
	}
	for (n = 0; n < NPAGES; n++) {
		for (i = 0; i < WORDS; i++)
			if (map[n * WORDS + i] != n)
				bad = 1;
		/* fault() runs on a handler thread */
		calls = __atomic_load_n(&c.calls[n], __ATOMIC_RELAXED);
		if (calls != 1) {
			fprintf(stderr, "page %zu: fault() ran %u times\n", n, calls);
			bad = 1;
		}
	}
	/* the page is the program's now: writes stay, no new fault */
	map[5 * WORDS] = 555;
	if (map[5 * WORDS] != 555 || __atomic_load_n(&c.calls[5], __ATOMIC_RELAXED) != 1)
		bad = 1;

	/*
	 * A fault is counted just after the faulting thread was woken;
	 * uf_munmap() waits for every fault on the mapping to finish, so
	 * the mm's totals are complete after it.
	 */
	uf_munmap(c.mm, map, NPAGES * UF_PAGE_SIZE);
	ret = uf_mm_stats(c.mm, &st);
	if (ret || st.minor_faults != NPAGES || st.major_faults || st.sigbus) {
		fprintf(stderr, "stats: %d, minor %llu major %llu sigbus %llu\n", ret,
			(unsigned long long)st.minor_faults,
			(unsigned long long)st.major_faults,
			(unsigned long long)st.sigbus);
		bad = 1;
	}
	printf("%d pages, each filled by fault() with its page number: %s\n",
	       NPAGES, bad ? "FAILED" : "ok");
	uf_mm_destroy(c.mm);
	return bad;
}
