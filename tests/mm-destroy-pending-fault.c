/* Description: uf_mm_destroy() while a thread is blocked in a fault whose
 * fault() is slow returns, and the blocked thread is woken and gets SIGSEGV
 * (si_addr inside the page) or completes with the page's bytes; no stray
 * signal reaches it afterwards and nothing hangs. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#define WAIT_SEC 5

struct ctx {
	struct uf_mm *mm;
	unsigned char *map;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool in_fault;			/* fault() has begun */
	bool destroyed;			/* main: uf_mm_destroy() returned */
	bool touched;			/* the faulting thread's access ended */
	int closes;
	/* the faulting thread's results */
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

	pthread_mutex_lock(&c->lock);
	c->in_fault = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	nanosleep(&ts, NULL);		/* main destroys the mm meanwhile */
	page = uf_page_alloc(c->mm);
	if (page)
		memset(uf_page_address(page), 0x5A, UF_PAGE_SIZE);
	(void)fd;
	return page;
}

static void vm_close(struct uf_vma *vma)
{
	struct ctx *c = uf_vma_private(vma);

	__atomic_add_fetch(&c->closes, 1, __ATOMIC_RELAXED);
}

static const struct uf_vm_operations ops = { .fault = fault, .close = vm_close };

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

	c->sig = ut_read(c->map + 3 * UF_PAGE_SIZE + 123, &c->val, &f);
	c->fault_addr = f.addr;
	/* from now on any SIGBUS/SIGSEGV for this thread would be stray:
	 * hold it pending, and look once the mm is gone */
	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	sigaddset(&set, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_mutex_lock(&c->lock);
	c->touched = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	CHECK(wait_for(c, &c->destroyed), "main never finished uf_mm_destroy()");
	sigpending(&pending);
	c->stray_sigbus = sigismember(&pending, SIGBUS);
	c->stray_sigsegv = sigismember(&pending, SIGSEGV);
	return NULL;
}

int main(void)
{
	struct ctx c = { 0 };
	unsigned char *page;
	pthread_t t;

	ut_catch_signals();
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	c.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mmap_ops(c.mm, 8 * UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&c.map), 0);
	page = c.map + 3 * UF_PAGE_SIZE;
	CHECK(pthread_create(&t, NULL, faulter, &c) == 0, "pthread_create");
	CHECK(wait_for(&c, &c.in_fault), "fault() never called");

	uf_mm_destroy(c.mm);
	CHECK(wait_for(&c, &c.touched), "the faulting thread is still blocked after "
	      "uf_mm_destroy() returned");
	pthread_mutex_lock(&c.lock);
	c.destroyed = true;
	pthread_cond_broadcast(&c.cond);
	pthread_mutex_unlock(&c.lock);
	pthread_join(t, NULL);

	CHECK(__atomic_load_n(&c.closes, __ATOMIC_RELAXED) == 1, "->close called %d times", c.closes);
	if (c.sig == 0) {
		CHECK(c.val == 0x5A, "completed with byte %#x", c.val);
	} else {
		CHECK(c.sig == SIGSEGV, "the faulting thread got signal %d, want SIGSEGV", c.sig);
		CHECK((unsigned char *)c.fault_addr >= page && (unsigned char *)c.fault_addr < page + UF_PAGE_SIZE,
		      "si_addr %p outside the page %p", c.fault_addr, (void *)page);
	}
	CHECK(!c.stray_sigbus, "a SIGBUS reached the thread after its access ended");
	CHECK(!c.stray_sigsegv, "a SIGSEGV reached the thread after its access ended");
	fprintf(stderr, "the blocked access %s\n", c.sig ? "got SIGSEGV" : "completed");
	pthread_cond_destroy(&c.cond);
	pthread_mutex_destroy(&c.lock);
	return 0;
}
