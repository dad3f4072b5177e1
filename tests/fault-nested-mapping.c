/* Description: a fault() that reads another ufault mapping of the same mm
 * (an object mapping, and an operation mapping whose own fault() reads the
 * object: two levels) is served with one handler thread: every page reads
 * the bytes fault() made of the other mapping, and nothing hangs.
 */
#define _GNU_SOURCE
#include "object-store.h"
#include "watchdog.h"

#include <sys/mman.h>

#define NPAGES	16
#define SIZE	(NPAGES * UF_PAGE_SIZE)

struct ctx {
	struct uf_mm *mm;
	unsigned char *below;	/* the mapping fault() reads */
};

/* Page pgoff holds, in every byte, byte 7 of page pgoff of ->below, plus 1. */
static struct uf_page *copy_fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);
	unsigned char v;

	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	v = *(volatile unsigned char *)(c->below + fd->pgoff * UF_PAGE_SIZE + 7);
	memset(uf_page_address(page), v + 1, UF_PAGE_SIZE);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations copy_ops = { .fault = copy_fault };

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);	/* one handler thread */
	struct ctx one, two;
	unsigned char *obj_map, *a, *b;
	struct uf_object *obj;
	struct os_store st;
	uint64_t p;

	ut_watchdog(30);	/* the bug: the handler waits for itself */
	os_init(&st, SIZE);
	obj = os_object(mm, &st);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&obj_map), 0);
	one = (struct ctx){ mm, obj_map };
	CHECK_RET(uf_mmap_ops(mm, SIZE, PROT_READ, &copy_ops, &one, (void **)&a), 0);
	two = (struct ctx){ mm, a };
	CHECK_RET(uf_mmap_ops(mm, SIZE, PROT_READ, &copy_ops, &two, (void **)&b), 0);

	/* odd pages: b -> a -> the object, two nested faults; even: a -> object */
	for (p = 0; p < NPAGES; p++) {
		unsigned char want = (unsigned char)(ut_pattern(p * UF_PAGE_SIZE + 7) + 1);

		if (p % 2)
			CHECK(b[p * UF_PAGE_SIZE + 9] == (unsigned char)(want + 1),
			      "page %lu through two levels: %u", (unsigned long)p, b[p * UF_PAGE_SIZE + 9]);
		CHECK(a[p * UF_PAGE_SIZE + 3] == want, "page %lu through one level: %u",
		      (unsigned long)p, a[p * UF_PAGE_SIZE + 3]);
	}
	CHECK_RET(uf_munmap(mm, b, SIZE), 0);
	CHECK_RET(uf_munmap(mm, a, SIZE), 0);
	CHECK_RET(uf_munmap(mm, obj_map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	return 0;
}
