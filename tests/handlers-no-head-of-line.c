/* Description: an idle handler thread takes a pending fault: with two
 * handler threads, fast faults queued behind a slow fault() are served
 * by the other handler while the slow one is still running.
 */
#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#define NSLOW	3		/* pages 0..2: fault() waits to be released */
#define NFAST	4		/* pages 3..6: fault() returns at once */
#define NPAGES	(NSLOW + NFAST)

struct ctx {
	struct uf_mm *mm;
	unsigned char *map;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int entered[NSLOW];	/* a slow fault() has started */
	int released[NSLOW];
	int fast_done;		/* fast accesses completed */
};

static struct uf_page *hol_fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	if (fd->pgoff < NSLOW) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 20;
		pthread_mutex_lock(&c->lock);
		c->entered[fd->pgoff] = 1;
		pthread_cond_broadcast(&c->cond);
		while (!c->released[fd->pgoff])
			if (pthread_cond_timedwait(&c->cond, &c->lock, &until))
				break;
		pthread_mutex_unlock(&c->lock);
	}
	page = uf_page_alloc(c->mm);
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), (int)fd->pgoff + 1, UF_PAGE_SIZE);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations hol_ops = { .fault = hol_fault };

struct toucher {
	struct ctx *c;
	unsigned int page;
	pthread_t t;
};

static void *touch(void *arg)
{
	struct toucher *t = arg;
	unsigned char v = *(volatile unsigned char *)(t->c->map + t->page * UF_PAGE_SIZE);

	if (t->page >= NSLOW) {
		pthread_mutex_lock(&t->c->lock);
		t->c->fast_done++;
		pthread_cond_broadcast(&t->c->cond);
		pthread_mutex_unlock(&t->c->lock);
	}
	return (void *)(uintptr_t)v;
}

static void wait_entered(struct ctx *c, unsigned int page)
{
	pthread_mutex_lock(&c->lock);
	while (!c->entered[page])
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

static void release(struct ctx *c, unsigned int page)
{
	pthread_mutex_lock(&c->lock);
	c->released[page] = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	static struct ctx c;
	struct toucher t[NPAGES];
	struct timespec until;
	unsigned int i;
	int fast;

	ut_watchdog(60);
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	c.mm = ut_mm_create(&cfg);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ, &hol_ops, &c,
			      (void **)&c.map), 0);
	for (i = 0; i < NPAGES; i++)
		t[i] = (struct toucher){ .c = &c, .page = i };

	/* both handlers busy with slow faults 0 and 1 */
	for (i = 0; i < 2; i++) {
		CHECK(pthread_create(&t[i].t, NULL, touch, &t[i]) == 0, "pthread_create");
		wait_entered(&c, i);
	}
	/* queued behind them: slow fault 2, then the fast ones */
	CHECK(pthread_create(&t[2].t, NULL, touch, &t[2]) == 0, "pthread_create");
	nap_ms(100);
	for (i = NSLOW; i < NPAGES; i++)
		CHECK(pthread_create(&t[i].t, NULL, touch, &t[i]) == 0, "pthread_create");
	nap_ms(100);
	/* both handlers free: one takes slow fault 2, the other the fast ones */
	release(&c, 0);
	release(&c, 1);

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&c.lock);
	while (c.fast_done < NFAST)
		if (pthread_cond_timedwait(&c.cond, &c.lock, &until))
			break;
	fast = c.fast_done;
	pthread_mutex_unlock(&c.lock);
	release(&c, 2);
	CHECK(fast == NFAST, "%d of %d fast faults served while a slow fault() ran", fast, NFAST);

	for (i = 0; i < NPAGES; i++) {
		void *v;

		pthread_join(t[i].t, &v);
		CHECK((uintptr_t)v == i + 1, "page %u read %lu", i, (unsigned long)(uintptr_t)v);
	}
	CHECK_RET(uf_munmap(c.mm, c.map, NPAGES * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c.mm);
	return 0;
}
