/* Description: uf_vm_insert_page() from an operation mapping's fault()
 * never lands in what the program moved over the mapping meanwhile: while
 * fault() waits, the program mremap()s another operation mapping over the
 * faulting one, and the move's events are read but not yet applied (a
 * truncate of an object holds the mappings' lock).  The faulting thread's
 * access ends in the moved mapping and reads that mapping's own page.
 */
#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	4

struct ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold_fault, fault_waiting, inserted, hold_trunc, trunc_waiting;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *m1;
	unsigned char seen;
	int ret;
};

static void gate(struct ctx *c, bool *hold, bool *waiting)
{
	pthread_mutex_lock(&c->lock);
	*waiting = true;
	pthread_cond_broadcast(&c->cond);
	while (*hold)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

static void set_flag(struct ctx *c, bool *flag, bool v)
{
	pthread_mutex_lock(&c->lock);
	*flag = v;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void until(struct ctx *c, bool *flag)
{
	pthread_mutex_lock(&c->lock);
	while (!*flag)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

static struct uf_page *page_of(struct uf_mm *mm, int byte)
{
	struct uf_page *page = uf_page_alloc(mm);

	CHECK(page, "uf_page_alloc");
	memset(uf_page_address(page), byte, PG);
	return page;
}

/* the first mapping: waits, then inserts a page of 'A's itself */
static struct uf_page *fault_a(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	gate(c, &c->hold_fault, &c->fault_waiting);
	page = page_of(c->mm, 'A');
	uf_vm_insert_page(vma, fd->address, page);	/* refused once the move is seen */
	uf_page_put(page);
	set_flag(c, &c->inserted, true);
	fd->type = UF_FAULT_MINOR;
	return NULL;
}

/* the second mapping: pages of 'B's */
static struct uf_page *fault_b(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);

	fd->type = UF_FAULT_MINOR;
	return page_of(c->mm, 'B');
}

static const struct uf_vm_operations ops_a = { .fault = fault_a };
static const struct uf_vm_operations ops_b = { .fault = fault_b };

static ssize_t s_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store, (void)off;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static int s_write(void *store, const void *buf, size_t len, uint64_t off)
{
	(void)store, (void)buf, (void)len, (void)off;
	return 0;
}

static int s_truncate(void *store, uint64_t size)
{
	struct ctx *c = store;

	(void)size;
	gate(c, &c->hold_trunc, &c->trunc_waiting);
	return 0;
}

static const struct uf_store_ops store_ops = {
	.read = s_read, .write = s_write, .truncate = s_truncate,
};

static void *toucher(void *arg)
{
	struct ctx *c = arg;

	c->seen = *(volatile unsigned char *)c->m1;
	return NULL;
}

static void *truncater(void *arg)
{
	struct ctx *c = arg;

	c->ret = uf_object_truncate(c->obj, PG);
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 4 };
	struct ctx c = { .hold_fault = true, .hold_trunc = true };
	struct timespec dl;
	unsigned char *m2;
	pthread_t t1, t2;
	void *p;

	ut_watchdog(60);
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	c.mm = ut_mm_create(&cfg);
	CHECK_RET(uf_object_create(c.mm, &store_ops, &c, 4 * PG, &c.obj), 0);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * PG, PROT_READ | PROT_WRITE, &ops_a, &c,
			      (void **)&c.m1), 0);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * PG, PROT_READ | PROT_WRITE, &ops_b, &c,
			      (void **)&m2), 0);

	CHECK(pthread_create(&t1, NULL, toucher, &c) == 0, "thread");
	until(&c, &c.fault_waiting);
	CHECK(pthread_create(&t2, NULL, truncater, &c) == 0, "thread");
	until(&c, &c.trunc_waiting);
	p = mremap(m2, NPAGES * PG, NPAGES * PG, MREMAP_MAYMOVE | MREMAP_FIXED, c.m1);
	CHECK(p == c.m1, "mremap: %m");
	/* fault() goes on and inserts; the table is let catch up once the
	 * insert returned -- or after a while, as ufault may wait for that */
	set_flag(&c, &c.hold_fault, false);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 300 * 1000 * 1000;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c.lock);
	while (!c.inserted && pthread_cond_timedwait(&c.cond, &c.lock, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&c.lock);
	set_flag(&c, &c.hold_trunc, false);
	pthread_join(t2, NULL);
	pthread_join(t1, NULL);
	CHECK_RET(c.ret, 0);

	CHECK(c.seen == 'B', "the faulting thread read %#x in the moved mapping, want 'B'", c.seen);
	CHECK(c.m1[0] == 'B' && c.m1[PG] == 'B', "moved mapping: %#x %#x", c.m1[0], c.m1[PG]);
	CHECK_RET(uf_munmap(c.mm, c.m1, NPAGES * PG), 0);
	uf_object_put(c.obj);
	uf_mm_destroy(c.mm);
	return 0;
}
