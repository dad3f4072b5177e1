/* Description: fault() returning NULL with type UF_FAULT_SIGBUS or
 * UF_FAULT_OOM gives the faulting thread SIGBUS with si_addr inside the
 * page, on reads and writes, again on every later touch of that page, and
 * from any thread that touches it; the other pages of the mapping still
 * work, and the outcome is counted as sigbus or oom. */
#define _GNU_SOURCE
#include "helpers.h"

#include <pthread.h>
#include <sys/mman.h>

#define NPAGES 8
#define BAD(pg)	((pg) % 2 == 1)		/* pages fault() refuses */

struct ctx {
	struct uf_mm *mm;
	int bad_type;			/* UF_FAULT_SIGBUS or UF_FAULT_OOM */
	unsigned char *map;
	int calls[NPAGES];
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	if (fd->pgoff >= NPAGES || BAD(fd->pgoff)) {
		if (fd->pgoff < NPAGES)
			__atomic_add_fetch(&c->calls[fd->pgoff], 1, __ATOMIC_RELAXED);
		fd->type = c->bad_type;
		return NULL;
	}
	page = uf_page_alloc(c->mm);
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), 0x30 + (int)fd->pgoff, UF_PAGE_SIZE);
	fd->type = UF_FAULT_MINOR;
	return page;
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

static void expect_sigbus(int sig, const struct ut_fault *f, const unsigned char *page,
			  const char *what)
{
	CHECK(sig == SIGBUS, "%s: signal %d, want SIGBUS", what, sig);
	CHECK((const unsigned char *)f->addr >= page &&
	      (const unsigned char *)f->addr < page + UF_PAGE_SIZE,
	      "%s: si_addr %p outside page %p", what, f->addr, (const void *)page);
}

/* Another thread touching a refused page gets the SIGBUS itself. */
static void *other_thread(void *arg)
{
	struct ctx *c = arg;
	unsigned char *page = c->map + 5 * UF_PAGE_SIZE, v;
	struct ut_fault f;

	expect_sigbus(ut_read(page + 17, &v, &f), &f, page, "other thread read");
	expect_sigbus(write_byte(page, 1, &f), &f, page, "other thread write");
	CHECK(ut_read(c->map + 4 * UF_PAGE_SIZE, &v, &f) == 0 && v == 0x34,
	      "other thread: good page: signal %d, byte %#x", f.sig, v);
	return NULL;
}

static void run(int bad_type)
{
	struct ctx c = { .bad_type = bad_type };
	const char *name = bad_type == UF_FAULT_OOM ? "oom" : "sigbus";
	struct uf_stats st;
	struct ut_fault f;
	pthread_t t;
	size_t pg;
	unsigned char v;
	int round;

	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&c.map), 0);

	/* first touch: pages 1 and 3 by a read, 7 by a write (5: the thread) */
	for (round = 0; round < 3; round++) {
		for (pg = 0; pg < NPAGES; pg++) {
			unsigned char *p = c.map + pg * UF_PAGE_SIZE;
			size_t off = (pg * 1000 + (size_t)round * 7) % UF_PAGE_SIZE;

			if (pg == 5)
				continue;
			if (!BAD(pg)) {
				CHECK(ut_read(p + off, &v, &f) == 0, "%s: page %zu: signal %d",
				      name, pg, f.sig);
				CHECK(v == 0x30 + pg, "%s: page %zu: byte %#x", name, pg, v);
				continue;
			}
			if (pg == 7 || round == 2)
				expect_sigbus(write_byte(p + off, 9, &f), &f, p, name);
			else
				expect_sigbus(ut_read(p + off, &v, &f), &f, p, name);
		}
	}
	CHECK(pthread_create(&t, NULL, other_thread, &c) == 0, "pthread_create");
	pthread_join(t, NULL);

	/* the good pages kept their bytes and take writes */
	for (pg = 0; pg < NPAGES; pg += 2) {
		c.map[pg * UF_PAGE_SIZE + 1] = 0xAB;
		CHECK(c.map[pg * UF_PAGE_SIZE + 1] == 0xAB && c.map[pg * UF_PAGE_SIZE] == 0x30 + pg,
		      "%s: page %zu after the refusals", name, pg);
	}
	for (pg = 1; pg < NPAGES; pg += 2)
		CHECK(__atomic_load_n(&c.calls[pg], __ATOMIC_RELAXED) >= 1,
		      "%s: page %zu: fault() not called", name, pg);

	CHECK_RET(uf_munmap(c.mm, c.map, NPAGES * UF_PAGE_SIZE), 0);
	/* every refusal was counted as fault() typed it, once per call */
	CHECK_RET(uf_mm_stats(c.mm, &st), 0);
	{
		uint64_t refused = 0;

		for (pg = 1; pg < NPAGES; pg += 2)
			refused += (uint64_t)__atomic_load_n(&c.calls[pg], __ATOMIC_RELAXED);
		CHECK(st.minor_faults == NPAGES / 2 && st.major_faults == 0,
		      "%s: minor %lu major %lu", name, (unsigned long)st.minor_faults,
		      (unsigned long)st.major_faults);
		CHECK(bad_type == UF_FAULT_OOM ? st.oom == refused && st.sigbus == 0
					       : st.sigbus == refused && st.oom == 0,
		      "%s: sigbus %lu oom %lu, fault() refused %lu times", name,
		      (unsigned long)st.sigbus, (unsigned long)st.oom, (unsigned long)refused);
	}
	uf_mm_destroy(c.mm);
}

int main(void)
{
	ut_catch_signals();
	run(UF_FAULT_SIGBUS);
	run(UF_FAULT_OOM);
	return 0;
}
