// SPDX-License-Identifier: MIT
/*
 * porting-nopage - from ->nopage() to ->fault().  See docs/porting.md.
 *
 * Two conversions, each run before and after:
 *
 *  1. A driver whose memory is an array of pages it owns ("ringbuf"):
 *     nopage(vma, address, &type) becomes fault(vma, fdata).
 *  2. A file system that wraps the generic file fault: a ->nopage that
 *     ends in uf_filemap_nopage() becomes a ->fault that ends in
 *     uf_filemap_fault().
 *
 * The "before" code is deprecated and compiles with warnings; this
 * program runs it on purpose, so those warnings are silenced around it.
 * Exit 0 when both versions of both conversions give the same bytes.
 */
#include <ufault.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RB_PAGES	8

struct ringbuf {
	struct uf_mm *mm;
	struct uf_page *pages[RB_PAGES];	/* the driver's own pages */
	unsigned int faults;
};

/* ------------------------------------------------------------------ */
/* 1. A driver                                                         */
/* ------------------------------------------------------------------ */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* before: the page is found from the address */
static struct uf_page *ringbuf_nopage(struct uf_vma *vma, unsigned long address,
				      int *type)
{
	struct ringbuf *rb = uf_vma_private(vma);
	unsigned long n = (address - (unsigned long)uf_vma_start(vma)) / UF_PAGE_SIZE;

	if (n >= RB_PAGES)
		return NULL;		/* NOPAGE_SIGBUS */
	__atomic_add_fetch(&rb->faults, 1, __ATOMIC_RELAXED);
	uf_page_get(rb->pages[n]);	/* the caller puts it */
	if (type)
		*type = UF_FAULT_MINOR;
	return rb->pages[n];
}

static const struct uf_vm_operations ringbuf_old_ops = {
	.nopage	= ringbuf_nopage,
};
#pragma GCC diagnostic pop

/* after: the core computed the offset; errors are a fault type */
static struct uf_page *ringbuf_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct ringbuf *rb = uf_vma_private(vma);

	if (fdata->pgoff >= RB_PAGES) {
		fdata->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	__atomic_add_fetch(&rb->faults, 1, __ATOMIC_RELAXED);
	uf_page_get(rb->pages[fdata->pgoff]);	/* the caller puts it */
	fdata->type = UF_FAULT_MINOR;
	return rb->pages[fdata->pgoff];
}

static const struct uf_vm_operations ringbuf_ops = {
	.fault	= ringbuf_fault,
};

/* Map the ring buffer with @ops and check every page; 0 if all is well. */
static int run_ringbuf(struct ringbuf *rb, const struct uf_vm_operations *ops,
		       const char *name)
{
	size_t len = RB_PAGES * UF_PAGE_SIZE, n;
	unsigned int faults;
	unsigned char *map;
	int ret, bad = 0;

	__atomic_store_n(&rb->faults, 0, __ATOMIC_RELAXED);
	ret = uf_mmap_ops(rb->mm, len, PROT_READ, ops, rb, (void **)&map);
	if (ret) {
		fprintf(stderr, "%s: uf_mmap_ops: %s\n", name, strerror(-ret));
		return 1;
	}
	for (n = 0; n < RB_PAGES; n++)
		if (memcmp(map + n * UF_PAGE_SIZE, uf_page_address(rb->pages[n]), UF_PAGE_SIZE))
			bad = 1;
	faults = __atomic_load_n(&rb->faults, __ATOMIC_RELAXED);
	if (faults != RB_PAGES)
		bad = 1;
	printf("driver, %-8s faults: %u, bytes %s\n", name, faults, bad ? "WRONG" : "ok");
	uf_munmap(rb->mm, map, len);
	return bad;
}

/* ------------------------------------------------------------------ */
/* 2. A file system wrapping the generic file fault                    */
/* ------------------------------------------------------------------ */

/* the file system's state for one mapping (uf_vma_set_private) */
struct myfs {
	unsigned int faults;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* before */
static struct uf_page *myfs_nopage(struct uf_vma *vma, unsigned long address, int *type)
{
	struct myfs *fs = uf_vma_private(vma);

	__atomic_add_fetch(&fs->faults, 1, __ATOMIC_RELAXED);
	return uf_filemap_nopage(vma, address, type);
}

static const struct uf_vm_operations myfs_old_vm_ops = {
	.nopage	= myfs_nopage,
};
#pragma GCC diagnostic pop

/* after */
static struct uf_page *myfs_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct myfs *fs = uf_vma_private(vma);

	__atomic_add_fetch(&fs->faults, 1, __ATOMIC_RELAXED);
	return uf_filemap_fault(vma, fdata);
}

static const struct uf_vm_operations myfs_vm_ops = {
	.fault	= myfs_fault,
};

/* A file of RB_PAGES pages, page n full of 'a' + n; its path in @path. */
static int make_file(char *path)
{
	unsigned char page[UF_PAGE_SIZE];
	int fd = mkstemp(path), n;

	if (fd < 0)
		return -1;
	for (n = 0; n < RB_PAGES; n++) {
		memset(page, 'a' + n, sizeof(page));
		if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
			close(fd);
			return -1;
		}
	}
	return close(fd);
}

/* Map the file with @ops and check it; 0 if all is well. */
static int run_myfs(struct uf_mm *mm, const char *path,
		    const struct uf_vm_operations *ops, const char *name)
{
	size_t len = RB_PAGES * UF_PAGE_SIZE, n;
	struct myfs fs = { 0 };
	struct uf_object *obj;
	unsigned int faults;
	unsigned char *map;
	int ret, bad = 0;

	/* a fresh object: its cache is empty, every page comes by a fault */
	ret = uf_object_open(mm, path, O_RDONLY, &obj);
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, strerror(-ret));
		return 1;
	}
	ret = uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map);
	uf_object_put(obj);		/* the mapping holds its own reference */
	if (ret) {
		fprintf(stderr, "%s: uf_mmap: %s\n", name, strerror(-ret));
		return 1;
	}
	/* what a file system's ->mmap does: vma->vm_ops = &myfs_vm_ops,
	 * vma->vm_private_data = fs */
	ret = uf_vma_set_private(uf_find_vma(mm, map), &fs);
	if (!ret)
		ret = uf_vma_set_ops(uf_find_vma(mm, map), ops);
	if (ret) {
		fprintf(stderr, "%s: uf_vma_set_ops: %s\n", name, strerror(-ret));
		bad = 1;
	}
	for (n = 0; n < RB_PAGES; n++)
		if (map[n * UF_PAGE_SIZE + 100] != 'a' + n)
			bad = 1;
	/* fault() ran on a handler thread; readahead may bring several
	 * pages with one fault */
	faults = __atomic_load_n(&fs.faults, __ATOMIC_RELAXED);
	if (faults < 1)
		bad = 1;
	printf("fs,     %-8s faults: %u, bytes %s\n", name, faults, bad ? "WRONG" : "ok");
	uf_munmap(mm, map, len);
	return bad;
}

int main(void)
{
	char path[] = "/tmp/ufault-porting-XXXXXX";
	struct ringbuf rb = { 0 };
	int ret, bad = 0;
	size_t n;

	ret = uf_mm_create(NULL, &rb.mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	for (n = 0; n < RB_PAGES; n++) {
		rb.pages[n] = uf_page_alloc(rb.mm);
		if (!rb.pages[n])
			return 1;
		memset(uf_page_address(rb.pages[n]), 'A' + (int)n, UF_PAGE_SIZE);
	}

	bad |= run_ringbuf(&rb, &ringbuf_old_ops, "nopage:");
	bad |= run_ringbuf(&rb, &ringbuf_ops, "fault:");
	if (make_file(path)) {
		perror(path);
		bad = 1;
	} else {
		bad |= run_myfs(rb.mm, path, &myfs_old_vm_ops, "nopage:");
		bad |= run_myfs(rb.mm, path, &myfs_vm_ops, "fault:");
		unlink(path);
	}

	for (n = 0; n < RB_PAGES; n++)
		uf_page_put(rb.pages[n]);
	uf_mm_destroy(rb.mm);
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad;
}
