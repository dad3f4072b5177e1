// SPDX-License-Identifier: MIT
/*
 * porting-populate - from ->populate() to ->fault() with
 * UF_FAULT_FLAG_NONLINEAR.  See docs/porting.md.
 *
 * A shared mapping of a 16-page file is turned into nonlinear windows that
 * show the file's pages 8..15 in reverse order.
 *
 * before: remap_file_pages() called the VMA's ->populate, which for files
 *	was filemap_populate(): it set up the window and read every page at
 *	once.  Here: uf_filemap_populate() on a mapping.
 * after:	uf_remap_file_pages() only records the window; each page is
 *	brought in by the ordinary ->fault, which is told the window's pgoff
 *	and UF_FAULT_FLAG_NONLINEAR.  A mapping whose methods have only the
 *	old ->nopage cannot have windows at all.
 *
 * Then the file is truncated under the windows: the pages that are gone
 * get SIGBUS, through the windows too.  Exit 0 on success, 1 on failure.
 */
#define _GNU_SOURCE
#include <ufault.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FILE_PAGES	16
#define MAP_PAGES	8
#define FIRST		8		/* the windows show pages 8..15 */

/* What ->fault saw, per page of the mapping (object mappings carry no
 * private data, so this lives at file scope). */
static struct {
	int calls[MAP_PAGES];
	unsigned long pgoff[MAP_PAGES];
	unsigned int flags[MAP_PAGES];
	unsigned long start;
} seen;

/* after: one method for linear and nonlinear pages alike */
static struct uf_page *myfs_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	size_t i = (fdata->address - seen.start) / UF_PAGE_SIZE;

	if (i < MAP_PAGES) {
		__atomic_add_fetch(&seen.calls[i], 1, __ATOMIC_RELAXED);
		__atomic_store_n(&seen.pgoff[i], fdata->pgoff, __ATOMIC_RELAXED);
		__atomic_store_n(&seen.flags[i], fdata->flags, __ATOMIC_RELAXED);
	}
	/* fdata->pgoff is the window's page when UF_FAULT_FLAG_NONLINEAR */
	return uf_filemap_fault(vma, fdata);
}

static const struct uf_vm_operations myfs_vm_ops = {
	.fault	= myfs_fault,
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static struct uf_page *myfs_nopage(struct uf_vma *vma, unsigned long address, int *type)
{
	return uf_filemap_nopage(vma, address, type);
}

static const struct uf_vm_operations myfs_old_vm_ops = {
	.nopage	= myfs_nopage,
};
#pragma GCC diagnostic pop

/* ------------------------------------------------------------------ */

static sigjmp_buf jump;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(jump, 1);
}

/* Read one byte; -1 if the access got SIGBUS. */
static int peek(const volatile unsigned char *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	volatile int val = -1;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(jump, 1) == 0)
		val = *p;
	sigaction(SIGBUS, &old, NULL);
	return val;
}

static unsigned char file_byte(size_t page)
{
	return (unsigned char)('A' + page);
}

static int make_file(char *path)
{
	unsigned char page[UF_PAGE_SIZE];
	int fd = mkstemp(path);
	size_t n;

	if (fd < 0)
		return -1;
	for (n = 0; n < FILE_PAGES; n++) {
		memset(page, file_byte(n), sizeof(page));
		if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
			close(fd);
			return -1;
		}
	}
	return close(fd);
}

/* A shared read-only mapping of a fresh object for @path. */
static unsigned char *map_file(struct uf_mm *mm, const char *path, int oflags,
			       struct uf_object **objp)
{
	struct uf_object *obj;
	void *map;
	int ret;

	ret = uf_object_open(mm, path, oflags, &obj);
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, strerror(-ret));
		return NULL;
	}
	ret = uf_mmap(mm, MAP_PAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &map);
	if (ret) {
		fprintf(stderr, "uf_mmap: %s\n", strerror(-ret));
		uf_object_put(obj);
		return NULL;
	}
	*objp = obj;		/* the caller's reference; the mapping has one */
	return map;
}

static int before(struct uf_mm *mm, const char *path)
{
	struct uf_object *obj;
	unsigned char *map;
	struct uf_vma *vma;
	struct uf_stats st;
	int bad = 0;
	size_t i;

	map = map_file(mm, path, O_RDONLY, &obj);
	if (!map)
		return 1;
	vma = uf_find_vma(mm, map);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	for (i = 0; i < MAP_PAGES; i++)
		if (uf_filemap_populate(vma, (unsigned long)map + i * UF_PAGE_SIZE, UF_PAGE_SIZE,
					0, FILE_PAGES - 1 - i, 0))
			bad = 1;
#pragma GCC diagnostic pop
	for (i = 0; i < MAP_PAGES; i++)
		if (peek(map + i * UF_PAGE_SIZE) != file_byte(FILE_PAGES - 1 - i))
			bad = 1;
	/* populate read every page up front: no fault was needed */
	if (uf_vma_stats(vma, &st) || st.minor_faults + st.major_faults != 0)
		bad = 1;
	printf("before: uf_filemap_populate, %llu faults: %s\n",
	       (unsigned long long)(st.minor_faults + st.major_faults), bad ? "WRONG" : "ok");
	uf_munmap(mm, map, MAP_PAGES * UF_PAGE_SIZE);
	uf_object_put(obj);
	return bad;
}

static int after(struct uf_mm *mm, const char *path)
{
	struct uf_object *obj;
	unsigned char *map;
	struct uf_vma *vma;
	int bad = 0, ret;
	size_t i;

	map = map_file(mm, path, O_RDWR, &obj);
	if (!map)
		return 1;
	vma = uf_find_vma(mm, map);

	/* a mapping served by the old ->nopage cannot have windows */
	uf_vma_set_ops(vma, &myfs_old_vm_ops);
	ret = uf_remap_file_pages(mm, map, UF_PAGE_SIZE, 0, FIRST, 0);
	if (ret != -EINVAL) {
		fprintf(stderr, "nopage mapping: uf_remap_file_pages gave %d\n", ret);
		bad = 1;
	}

	/* with ->fault it can: page i of the mapping shows file page 15 - i */
	seen.start = (unsigned long)map;
	uf_vma_set_ops(vma, &myfs_vm_ops);
	for (i = 0; i < MAP_PAGES; i++) {
		ret = uf_remap_file_pages(mm, map + i * UF_PAGE_SIZE, UF_PAGE_SIZE, 0,
					  FILE_PAGES - 1 - i, 0);
		if (ret) {
			fprintf(stderr, "uf_remap_file_pages: %s\n", strerror(-ret));
			bad = 1;
		}
	}
	for (i = 0; i < MAP_PAGES; i++) {
		size_t want = FILE_PAGES - 1 - i;

		if (peek(map + i * UF_PAGE_SIZE) != file_byte(want))
			bad = 1;
		if (__atomic_load_n(&seen.calls[i], __ATOMIC_RELAXED) != 1 ||
		    __atomic_load_n(&seen.pgoff[i], __ATOMIC_RELAXED) != want ||
		    !(__atomic_load_n(&seen.flags[i], __ATOMIC_RELAXED) & UF_FAULT_FLAG_NONLINEAR)) {
			fprintf(stderr, "page %zu: %d calls, pgoff %lu, flags %#x\n", i,
				seen.calls[i], seen.pgoff[i], seen.flags[i]);
			bad = 1;
		}
	}
	printf("after:  uf_remap_file_pages + fault(NONLINEAR): %s\n", bad ? "WRONG" : "ok");

	/* truncate to 12 pages: the windows onto pages 12..15 (mapping pages
	 * 0..3) must now get SIGBUS, the others still read */
	ret = uf_object_truncate(obj, 12 * UF_PAGE_SIZE);
	if (ret) {
		fprintf(stderr, "uf_object_truncate: %s\n", strerror(-ret));
		bad = 1;
	}
	for (i = 0; i < MAP_PAGES; i++) {
		size_t page = FILE_PAGES - 1 - i;
		int want = page >= 12 ? -1 : file_byte(page);

		if (peek(map + i * UF_PAGE_SIZE + 1) != want) {
			fprintf(stderr, "after truncate: window onto page %zu\n", page);
			bad = 1;
		}
	}
	printf("after:  truncate reaches the windows: %s\n", bad ? "WRONG" : "ok");
	uf_munmap(mm, map, MAP_PAGES * UF_PAGE_SIZE);
	uf_object_put(obj);
	return bad;
}

int main(void)
{
	/* one page per fault, so that every window page reaches fault() */
	struct uf_mm_config cfg = { .readahead_max = UF_PAGE_SIZE };
	char path[] = "/tmp/ufault-populate-XXXXXX";
	struct uf_mm *mm;
	int ret, bad = 0;

	ret = uf_mm_create(&cfg, &mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	if (make_file(path)) {
		perror(path);
		uf_mm_destroy(mm);
		return 1;
	}
	bad |= before(mm, path);
	bad |= after(mm, path);		/* truncates the file: last */
	unlink(path);
	uf_mm_destroy(mm);
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad;
}
