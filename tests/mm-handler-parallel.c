/* Description: with handler_threads = 2, faults on different pages are
 * served in parallel: fault() for page A waits (up to a few seconds) until
 * fault() for page B, touched by another thread while A is still being
 * served, has started; with one handler B could only start after A ends. */
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
	bool a_started, b_started;
	bool a_timed_out;
	pthread_t a_handler, b_handler;
};

/* Wait under c->lock for *flag, up to WAIT_SEC; false on timeout. */
static bool wait_for(struct ctx *c, const bool *flag)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_SEC;
	while (!*flag && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&c->cond, &c->lock, &dl);
	return *flag;
}

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	pthread_mutex_lock(&c->lock);
	if (fd->pgoff == 0) {
		c->a_handler = pthread_self();
		c->a_started = true;
		pthread_cond_broadcast(&c->cond);
		/* hold page A until B's fault() has begun */
		c->a_timed_out = !wait_for(c, &c->b_started);
	} else {
		c->b_handler = pthread_self();
		c->b_started = true;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	if (page)
		memset(uf_page_address(page), 0xA0 + (int)fd->pgoff, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

static void *touch_a(void *arg)
{
	struct ctx *c = arg;

	return (void *)(uintptr_t)c->map[0];
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct ctx c = { 0 };
	pthread_t ta;
	void *ra;
	bool started;

	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	c.mm = ut_mm_create(&cfg);
	CHECK_RET(uf_mmap_ops(c.mm, 2 * UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&c.map), 0);

	CHECK(pthread_create(&ta, NULL, touch_a, &c) == 0, "pthread_create");
	pthread_mutex_lock(&c.lock);
	started = wait_for(&c, &c.a_started);
	pthread_mutex_unlock(&c.lock);
	CHECK(started, "fault() for page A never started");

	/* A is in fault(), its handler busy: B needs the other handler */
	CHECK(c.map[UF_PAGE_SIZE] == 0xA1, "page B: %#x", c.map[UF_PAGE_SIZE]);
	pthread_join(ta, &ra);
	CHECK((uintptr_t)ra == 0xA0, "page A: %#lx", (unsigned long)(uintptr_t)ra);

	pthread_mutex_lock(&c.lock);
	CHECK(!c.a_timed_out, "fault() for page B did not start while page A was being "
	      "served: faults are not handled in parallel");
	CHECK(!pthread_equal(c.a_handler, c.b_handler), "both faults ran on one thread");
	pthread_mutex_unlock(&c.lock);

	CHECK_RET(uf_munmap(c.mm, c.map, 2 * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c.mm);
	pthread_cond_destroy(&c.cond);
	pthread_mutex_destroy(&c.lock);
	return 0;
}
