/* Description: uf_munmap() called from fault() on the mapping being
 * faulted returns -EDEADLK and changes nothing (the fault is served, the
 * mapping stays); from fault() on another mapping of the same mm it
 * succeeds. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <sys/mman.h>

struct ctx {
	struct uf_mm *mm;
	void *victim;			/* the other mapping, unmapped from fault() */
	size_t victim_len;
	int ret_self, ret_other, ret_bad;
	int calls;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	if (__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED) == 1) {
		int ret;

		ret = uf_munmap(c->mm, uf_vma_start(vma), uf_vma_len(vma));
		__atomic_store_n(&c->ret_self, ret, __ATOMIC_RELEASE);
		/* bad arguments are still -EINVAL, not -EDEADLK */
		ret = uf_munmap(c->mm, uf_vma_start(vma), uf_vma_len(vma) + UF_PAGE_SIZE);
		__atomic_store_n(&c->ret_bad, ret, __ATOMIC_RELEASE);
		ret = uf_munmap(c->mm, c->victim, c->victim_len);
		__atomic_store_n(&c->ret_other, ret, __ATOMIC_RELEASE);
	}
	page = uf_page_alloc(c->mm);
	if (page)
		memset(uf_page_address(page), 0x42, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };
static const struct uf_vm_operations victim_ops = { .fault = fault };

int main(void)
{
	struct ctx c = { 0 };
	unsigned char *map;

	c.mm = ut_mm_create(NULL);
	c.victim_len = 3 * UF_PAGE_SIZE;
	CHECK_RET(uf_mmap_ops(c.mm, c.victim_len, PROT_READ, &victim_ops, &c, &c.victim), 0);
	CHECK_RET(uf_mmap_ops(c.mm, 4 * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&map), 0);
	CHECK(map[UF_PAGE_SIZE] == 0x42, "faulting page: %#x", map[UF_PAGE_SIZE]);
	/* the next fault is served after the first fault() returned */
	CHECK(map[2 * UF_PAGE_SIZE] == 0x42, "second page");
	CHECK(__atomic_load_n(&c.calls, __ATOMIC_RELAXED) == 2, "fault() calls");
	CHECK_RET(__atomic_load_n(&c.ret_self, __ATOMIC_ACQUIRE), -EDEADLK);
	CHECK_RET(__atomic_load_n(&c.ret_bad, __ATOMIC_ACQUIRE), -EINVAL);
	CHECK_RET(__atomic_load_n(&c.ret_other, __ATOMIC_ACQUIRE), 0);
	CHECK(uf_find_vma(c.mm, map) != NULL, "the mapping is gone");
	CHECK(uf_find_vma(c.mm, c.victim) == NULL, "the other mapping is still there");
	map[3 * UF_PAGE_SIZE] = 1;
	CHECK(map[3 * UF_PAGE_SIZE] == 1, "write");
	CHECK_RET(uf_munmap(c.mm, map, 4 * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c.mm);
	return 0;
}
