// SPDX-License-Identifier: MIT
/*
 * porting-nopfn - from ->nopfn() to ->fault() + uf_vm_insert_pfn().
 * See docs/porting.md.
 *
 * A "device" owns a block of memory that is not made of struct pages (in
 * the kernel: I/O memory, a frame buffer; here: memory the program
 * allocated itself).  The old driver answered nopfn(vma, address) with a
 * page frame number; ufault has no ->nopfn: the driver's ->fault installs
 * the memory itself with uf_vm_insert_pfn() and returns NULL.
 *
 * The mapping is one page longer than the device: that page gets SIGBUS,
 * which the program catches.  Exit 0 on success, 1 on failure.
 */
#define _GNU_SOURCE
#include <ufault.h>

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define DEV_PAGES	16

struct mydev {
	unsigned char *mem;		/* DEV_PAGES pages, page aligned */
	size_t pages;
};

/*
 * before (Linux 2.6.19; there is no ->nopfn in ufault):
 *
 *	static unsigned long mydev_nopfn(struct vm_area_struct *vma,
 *					 unsigned long address)
 *	{
 *		struct mydev *dev = vma->vm_private_data;
 *		unsigned long n = (address - vma->vm_start) >> PAGE_SHIFT;
 *
 *		if (n >= dev->pages)
 *			return NOPFN_SIGBUS;
 *		return (dev->phys >> PAGE_SHIFT) + n;
 *	}
 */

/* after */
static struct uf_page *mydev_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct mydev *dev = uf_vma_private(vma);
	int ret;

	if (fdata->pgoff >= dev->pages) {
		fdata->type = UF_FAULT_SIGBUS;		/* was NOPFN_SIGBUS */
		return NULL;
	}
	ret = uf_vm_insert_pfn(vma, fdata->address,
			       dev->mem + fdata->pgoff * UF_PAGE_SIZE);
	if (ret == -ENOMEM) {
		fdata->type = UF_FAULT_OOM;		/* was NOPFN_OOM */
		return NULL;
	}
	if (ret && ret != -EEXIST) {		/* -EEXIST: another thread won */
		fdata->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	fdata->type = UF_FAULT_MINOR;
	return NULL;				/* installed: nothing to return */
}

static const struct uf_vm_operations mydev_vm_ops = {
	.fault	= mydev_fault,
};

/* ------------------------------------------------------------------ */

static sigjmp_buf jump;
static void *volatile sigbus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sigbus_addr = si->si_addr;
	siglongjmp(jump, 1);
}

int main(void)
{
	size_t len = (DEV_PAGES + 1) * UF_PAGE_SIZE, n;
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	struct mydev dev = { .pages = DEV_PAGES };
	volatile unsigned char *map;
	struct uf_mm *mm;
	volatile int bad = 0;
	int ret;

	dev.mem = aligned_alloc(UF_PAGE_SIZE, DEV_PAGES * UF_PAGE_SIZE);
	if (!dev.mem)
		return 1;
	for (n = 0; n < DEV_PAGES * UF_PAGE_SIZE; n++)
		dev.mem[n] = (unsigned char)(n / UF_PAGE_SIZE * 3 + n);

	ret = uf_mm_create(NULL, &mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	ret = uf_mmap_ops(mm, len, PROT_READ, &mydev_vm_ops, &dev, (void **)&map);
	if (ret) {
		fprintf(stderr, "uf_mmap_ops: %s\n", strerror(-ret));
		return 1;
	}

	/* every device page reads through the mapping */
	for (n = 0; n < DEV_PAGES * UF_PAGE_SIZE; n++)
		if (map[n] != dev.mem[n]) {
			fprintf(stderr, "byte %zu: %u, device has %u\n", n, map[n], dev.mem[n]);
			bad = 1;
			break;
		}

	/*
	 * Unlike a real nopfn mapping, the bytes were copied when the page
	 * was installed: the device changing them later is not seen.
	 */
	dev.mem[0] ^= 0xff;
	if (map[0] == dev.mem[0]) {
		fprintf(stderr, "the mapping follows the device memory?\n");
		bad = 1;
	}

	/* past the device: fault() says SIGBUS, the access gets it */
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(jump, 1) == 0) {
		(void)map[DEV_PAGES * UF_PAGE_SIZE + 10];
		fprintf(stderr, "no SIGBUS past the device\n");
		bad = 1;
	} else if (sigbus_addr != (void *)(map + DEV_PAGES * UF_PAGE_SIZE + 10) &&
		   sigbus_addr != (void *)(map + DEV_PAGES * UF_PAGE_SIZE)) {
		fprintf(stderr, "SIGBUS at %p, not at the access\n", sigbus_addr);
		bad = 1;
	}
	signal(SIGBUS, SIG_DFL);

	printf("%d device pages mapped by fault() + uf_vm_insert_pfn(), SIGBUS past them: %s\n",
	       DEV_PAGES, bad ? "FAILED" : "ok");
	uf_munmap(mm, (void *)map, len);
	uf_mm_destroy(mm);
	free(dev.mem);
	return bad;
}
