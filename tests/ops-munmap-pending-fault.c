/* Description: uf_munmap() of a mapping while another thread is blocked in
 * a fault on it (fault() is slow) returns, and that thread is woken and
 * gets SIGSEGV (si_addr inside the page) or completes with the bytes, with
 * no stray signal afterwards; the cut-short fault is not counted as a
 * SIGBUS, and the mm's other mappings keep working. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#define WAIT_SEC 5
#define NPAGES 8

struct ctx {
	struct uf_mm *mm;
	unsigned char *map, *other;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool in_fault, unmapped, touched;
	int sig;
	void *fault_addr;
	unsigned char val;
	bool stray_sigbus, stray_sigsegv;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	struct uf_page *page;

	if (uf_vma_len(vma) == NPAGES * UF_PAGE_SIZE) {	/* the mapping to unmap */
		pthread_mutex_lock(&c->lock);
		c->in_fault = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		nanosleep(&ts, NULL);	/* main unmaps meanwhile */
	}
	page = uf_page_alloc(c->mm);
	if (page)
		memset(uf_page_address(page), 0x70 + (int)fd->pgoff, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

static bool wait_for(struct ctx *c, const bool *flag)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_SEC;
	pthread_mutex_lock(&c->lock);
	while (!*flag && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&c->cond, &c->lock, &dl);
	ret = *flag;
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static void *faulter(void *arg)
{
	struct ctx *c = arg;
	struct ut_fault f;
	sigset_t set, pending;

	c->sig = ut_read(c->map + 5 * UF_PAGE_SIZE + 9, &c->val, &f);
	c->fault_addr = f.addr;
	/* any SIGBUS/SIGSEGV from here on is stray: keep it pending */
	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	sigaddset(&set, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_mutex_lock(&c->lock);
	c->touched = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	CHECK(wait_for(c, &c->unmapped), "main never finished");
	sigpending(&pending);
	c->stray_sigbus = sigismember(&pending, SIGBUS);
	c->stray_sigsegv = sigismember(&pending, SIGSEGV);
	return NULL;
}

int main(void)
{
	struct ctx c = { 0 };
	struct uf_stats st;
	unsigned char *page, *again;
	pthread_t t;

	ut_catch_signals();
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&c.map), 0);
	CHECK_RET(uf_mmap_ops(c.mm, 2 * UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&c.other), 0);
	page = c.map + 5 * UF_PAGE_SIZE;
	CHECK(pthread_create(&t, NULL, faulter, &c) == 0, "pthread_create");
	CHECK(wait_for(&c, &c.in_fault), "fault() never called");

	CHECK_RET(uf_munmap(c.mm, c.map, NPAGES * UF_PAGE_SIZE), 0);
	CHECK(uf_find_vma(c.mm, page) == NULL, "the mapping is still found");
	/* uf_munmap() waited for the slow fault(): by now any signal for the
	 * faulting thread has been sent */
	CHECK(wait_for(&c, &c.touched), "the faulting thread is still blocked");
	pthread_mutex_lock(&c.lock);
	c.unmapped = true;
	pthread_cond_broadcast(&c.cond);
	pthread_mutex_unlock(&c.lock);
	pthread_join(t, NULL);

	if (c.sig == 0) {
		CHECK(c.val == 0x75, "completed with byte %#x", c.val);
	} else {
		CHECK(c.sig == SIGSEGV, "the faulting thread got signal %d, want SIGSEGV", c.sig);
		CHECK((unsigned char *)c.fault_addr >= page &&
		      (unsigned char *)c.fault_addr < page + UF_PAGE_SIZE,
		      "si_addr %p outside the page %p", c.fault_addr, (void *)page);
	}
	CHECK(!c.stray_sigbus, "a SIGBUS reached the thread after its access ended");
	CHECK(!c.stray_sigsegv, "a SIGSEGV reached the thread after its access ended");
	fprintf(stderr, "the blocked access %s\n", c.sig ? "got SIGSEGV" : "completed");

	/* the mm goes on: the other mapping, and a new one */
	CHECK(c.other[UF_PAGE_SIZE] == 0x71, "other mapping: %#x", c.other[UF_PAGE_SIZE]);
	CHECK_RET(uf_mmap_ops(c.mm, UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&again), 0);
	CHECK(again[0] == 0x70, "new mapping: %#x", again[0]);

	CHECK_RET(uf_mm_stats(c.mm, &st), 0);
	CHECK(st.sigbus == 0 && st.oom == 0, "the fault cut short by uf_munmap() was counted "
	      "as sigbus %lu / oom %lu, but no access got SIGBUS",
	      (unsigned long)st.sigbus, (unsigned long)st.oom);
	uf_mm_destroy(c.mm);
	pthread_cond_destroy(&c.cond);
	pthread_mutex_destroy(&c.lock);
	return 0;
}
