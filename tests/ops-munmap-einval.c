/* Description: uf_munmap() of a range that is not a whole ufault mapping
 * (a plain mmap, a wrong or zero length, an address in the middle or
 * unaligned, memory never mapped, a NULL mm, another mm's mapping) returns
 * -EINVAL and changes nothing: the mapping still faults and keeps its
 * bytes.  A length rounded up to the page is the mapping's length. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <sys/mman.h>

#define NPAGES 4

struct ctx {
	struct uf_mm *mm;
	int closes;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	if (page)
		memset(uf_page_address(page), 0x20 + (int)fd->pgoff, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static void vm_close(struct uf_vma *vma)
{
	struct ctx *c = uf_vma_private(vma);

	c->closes++;
}

static const struct uf_vm_operations ops = { .fault = fault, .close = vm_close };

int main(void)
{
	struct ctx c = { 0 }, c2 = { 0 };
	unsigned char *map, *plain, *other;
	size_t len = NPAGES * UF_PAGE_SIZE, pg;
	struct {
		const char *what;
		struct uf_mm *mm;
		void *addr;
		size_t len;
	} bad[8];
	size_t i, n = 0;

	c.mm = ut_mm_create(NULL);
	c2.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, len, PROT_READ | PROT_WRITE, &ops, &c, (void **)&map), 0);
	CHECK_RET(uf_mmap_ops(c2.mm, len, PROT_READ, &ops, &c2, (void **)&other), 0);
	plain = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(plain != MAP_FAILED, "mmap");
	plain[0] = 0x77;
	map[0] = 0x99;			/* page 0 faulted in and written */

	bad[n++] = (typeof(bad[0])){ "a plain mmap", c.mm, plain, len };
	bad[n++] = (typeof(bad[0])){ "length one page short", c.mm, map, len - UF_PAGE_SIZE };
	bad[n++] = (typeof(bad[0])){ "length one page long", c.mm, map, len + UF_PAGE_SIZE };
	bad[n++] = (typeof(bad[0])){ "length 0", c.mm, map, 0 };
	bad[n++] = (typeof(bad[0])){ "address in the middle", c.mm, map + UF_PAGE_SIZE, len - UF_PAGE_SIZE };
	bad[n++] = (typeof(bad[0])){ "unaligned address", c.mm, map + 1, len };
	bad[n++] = (typeof(bad[0])){ "NULL mm", NULL, map, len };
	bad[n++] = (typeof(bad[0])){ "another mm's mapping", c.mm, other, len };
	for (i = 0; i < n; i++) {
		int ret = uf_munmap(bad[i].mm, bad[i].addr, bad[i].len);

		CHECK(ret == -EINVAL, "%s: returned %d, want -EINVAL", bad[i].what, ret);
		CHECK(uf_find_vma(c.mm, map) != NULL, "%s: the mapping is gone", bad[i].what);
		CHECK(map[0] == 0x99, "%s: page 0 lost its write", bad[i].what);
	}
	CHECK(c.closes == 0, "->close called");
	CHECK(plain[0] == 0x77, "the plain mapping changed");
	CHECK(other[0] == 0x20, "the other mm's mapping");

	/* still a working mapping: untouched pages fault */
	for (pg = 1; pg < NPAGES; pg++)
		CHECK(map[pg * UF_PAGE_SIZE + 1] == 0x20 + pg, "page %zu after the bad calls", pg);

	/* the length is rounded up to a page */
	CHECK_RET(uf_munmap(c.mm, map, len - UF_PAGE_SIZE + 1), 0);
	CHECK(c.closes == 1, "->close calls %d", c.closes);
	CHECK(uf_find_vma(c.mm, map) == NULL, "still found");
	CHECK_RET(uf_munmap(c.mm, map, len), -EINVAL);	/* twice */
	munmap(plain, len);
	uf_mm_destroy(c2.mm);
	uf_mm_destroy(c.mm);
	return 0;
}
