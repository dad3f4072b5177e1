/* Description: uf_mmap_ops() with bad input (NULL mm, ops or addrp, zero
 * length, ops with neither fault nor nopage, prot without
 * PROT_READ or with unknown bits) returns -EINVAL and changes nothing: no
 * new mapping, no VMA, *addrp untouched, fault() never called; good input
 * with every allowed prot still works. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

/* Sanitizer runtimes map memory of their own at any time: there the count
 * of mappings is not compared. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UT_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UT_SANITIZER 1
#endif
#endif

struct ctx {
	struct uf_mm *mm;
	int calls;
	int opens;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
	if (page)
		memset(uf_page_address(page), 0x11, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static void vm_open(struct uf_vma *vma)
{
	struct ctx *c = uf_vma_private(vma);

	c->opens++;
}

static const struct uf_vm_operations ops = { .fault = fault, .open = vm_open };
static const struct uf_vm_operations no_method_ops = { .open = vm_open };

/* Lines of /proc/self/maps, read without allocating (stdio's buffer could
 * itself add a mapping). */
static int count_maps(void)
{
	char buf[4096];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t len, i;

	CHECK(fd >= 0, "open maps");
	while ((len = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < len; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

int main(void)
{
	static const struct {
		const char *what;
		bool null_mm, null_addrp;
		size_t len;
		int prot;
		const struct uf_vm_operations *ops;
	} bad[] = {
		{ "NULL mm", true, false, UF_PAGE_SIZE, PROT_READ, &ops },
		{ "NULL addrp", false, true, UF_PAGE_SIZE, PROT_READ, &ops },
		{ "NULL ops", false, false, UF_PAGE_SIZE, PROT_READ, NULL },
		{ "no fault, no nopage", false, false, UF_PAGE_SIZE, PROT_READ, &no_method_ops },
		{ "length 0", false, false, 0, PROT_READ, &ops },
		{ "prot 0", false, false, UF_PAGE_SIZE, 0, &ops },
		{ "prot PROT_WRITE", false, false, UF_PAGE_SIZE, PROT_WRITE, &ops },
		{ "prot PROT_EXEC", false, false, UF_PAGE_SIZE, PROT_EXEC, &ops },
		{ "prot unknown bit", false, false, UF_PAGE_SIZE, PROT_READ | 0x100, &ops },
		{ "prot PROT_GROWSDOWN", false, false, UF_PAGE_SIZE, PROT_READ | PROT_GROWSDOWN, &ops },
		{ "prot -1", false, false, UF_PAGE_SIZE, -1, &ops },
	};
	static const int good_prot[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC,
		PROT_READ | PROT_WRITE | PROT_EXEC,
	};
	struct ctx c = { 0 };
	struct uf_stats st;
	void *addr, *sentinel = (void *)0x1234;
	int maps, ret;
	size_t i;

	c.mm = ut_mm_create(NULL);
	maps = count_maps();
	(void)maps;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		addr = sentinel;
		ret = uf_mmap_ops(bad[i].null_mm ? NULL : c.mm, bad[i].len, bad[i].prot, bad[i].ops,
				  &c, bad[i].null_addrp ? NULL : &addr);
		CHECK(ret == -EINVAL, "%s: returned %d, want -EINVAL", bad[i].what, ret);
		CHECK(addr == sentinel, "%s: *addrp changed to %p", bad[i].what, addr);
#ifndef UT_SANITIZER
		CHECK(count_maps() == maps, "%s: the process gained a mapping", bad[i].what);
#endif
		CHECK(uf_find_vma(c.mm, (void *)sentinel) == NULL, "%s: a VMA appeared", bad[i].what);
	}
	CHECK(c.opens == 0, "->open called %d times for refused mappings", c.opens);
	CHECK_RET(uf_mm_stats(c.mm, &st), 0);
	CHECK(st.minor_faults + st.major_faults + st.sigbus + st.oom == 0, "faults counted");

	/* the mm is untouched: good calls work, with each allowed prot */
	for (i = 0; i < sizeof(good_prot) / sizeof(good_prot[0]); i++) {
		unsigned char *p;

		CHECK_RET(uf_mmap_ops(c.mm, 2 * UF_PAGE_SIZE, good_prot[i], &ops, &c, &addr), 0);
		p = addr;
		CHECK(uf_find_vma(c.mm, p) != NULL, "prot %#x: no VMA", good_prot[i]);
		CHECK(p[UF_PAGE_SIZE] == 0x11, "prot %#x: byte %#x", good_prot[i], p[UF_PAGE_SIZE]);
		if (good_prot[i] & PROT_WRITE) {
			p[7] = 0x99;
			CHECK(p[7] == 0x99, "prot %#x: write lost", good_prot[i]);
		}
		CHECK_RET(uf_munmap(c.mm, addr, 2 * UF_PAGE_SIZE), 0);
	}
	CHECK(c.opens == (int)(sizeof(good_prot) / sizeof(good_prot[0])), "->open calls %d", c.opens);
	uf_mm_destroy(c.mm);
	return 0;
}
