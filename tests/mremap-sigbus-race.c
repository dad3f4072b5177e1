/* Description: a store error's SIGBUS never lands in what the program
 * moved over the faulting mapping meanwhile: a fault's store read is held
 * while the program mremap()s another mapping of the object over the
 * faulting one, and the move's events are read but not yet applied (a
 * truncate of another object holds the mappings' lock) when the read
 * fails.  The faulting thread's access ends in the moved mapping and reads
 * its page (no SIGBUS), and that page is not left poisoned.
 */
#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	64
#define WIN	16		/* pages per mapping */

static unsigned char byte_at(uint64_t off)
{
	return (unsigned char)((off / PG) * 3 + 1 + (off % PG) % 7);
}

struct ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* reads of page 0 fail, the first after a wait; the first truncate waits */
	bool hold_read, read_waiting, hold_trunc, trunc_waiting, touched;
	struct uf_object *o1, *o2;
	unsigned char *m1, seen;
	int sig, ret;
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

static ssize_t s_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct ctx *c = store;
	size_t i;

	if (off == 0) {			/* page 0 always fails, once late */
		gate(c, &c->hold_read, &c->read_waiting);
		return -EIO;
	}
	for (i = 0; i < len; i++)
		((unsigned char *)buf)[i] = byte_at(off + i);
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
	struct ut_fault f;

	c->sig = ut_read(c->m1, &c->seen, &f);		/* page 0: its read is held */
	set_flag(c, &c->touched, true);
	return NULL;
}

static void *truncater(void *arg)
{
	struct ctx *c = arg;

	c->ret = uf_object_truncate(c->o2, 2 * PG);	/* held, under the mappings' lock */
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 4 };
	struct ctx c = { .hold_read = true, .hold_trunc = true };
	unsigned char *m2, v;
	struct timespec dl;
	struct ut_fault f;
	pthread_t t1, t2;
	struct uf_mm *mm;
	void *p;

	ut_watchdog(60);
	ut_catch_signals();
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	mm = ut_mm_create(&cfg);
	CHECK_RET(uf_object_create(mm, &store_ops, &c, NPAGES * PG, &c.o1), 0);
	CHECK_RET(uf_object_create(mm, &store_ops, &c, 4 * PG, &c.o2), 0);
	CHECK_RET(uf_mmap(mm, WIN * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.o1, 0,
			  (void **)&c.m1), 0);
	CHECK_RET(uf_mmap(mm, WIN * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.o1, WIN * PG,
			  (void **)&m2), 0);

	CHECK(pthread_create(&t1, NULL, toucher, &c) == 0, "thread");
	until(&c, &c.read_waiting);
	CHECK(pthread_create(&t2, NULL, truncater, &c) == 0, "thread");
	until(&c, &c.trunc_waiting);
	p = mremap(m2, WIN * PG, WIN * PG, MREMAP_MAYMOVE | MREMAP_FIXED, c.m1);
	CHECK(p == c.m1, "mremap: %m");
	/* the read fails; the table is let catch up once the faulting thread
	 * is through -- or after a while, as ufault may wait for that */
	set_flag(&c, &c.hold_read, false);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 300 * 1000 * 1000;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c.lock);
	while (!c.touched && pthread_cond_timedwait(&c.cond, &c.lock, &dl) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&c.lock);
	set_flag(&c, &c.hold_trunc, false);
	pthread_join(t2, NULL);
	pthread_join(t1, NULL);
	CHECK_RET(c.ret, 0);

	CHECK(c.sig == 0, "the faulting thread took signal %d in the moved mapping", c.sig);
	CHECK(c.seen == byte_at(WIN * PG), "the faulting thread read %#x, want %#x", c.seen,
	      byte_at(WIN * PG));
	CHECK(ut_read(c.m1 + 9, &v, &f) == 0 && v == byte_at(WIN * PG + 9),
	      "moved mapping's page 0 afterwards: signal %d, %#x", f.sig, v);
	CHECK_RET(uf_munmap(mm, c.m1, WIN * PG), 0);
	uf_object_put(c.o1);
	uf_object_put(c.o2);
	uf_mm_destroy(mm);
	return 0;
}
