/* Description: a store's read holds no lock that mapping and unmapping
 * need: a read that itself reads another object (uf_object_pread, an
 * overlay) and touches a ufault mapping of it completes, and while a read
 * is slow, another thread maps and unmaps an unrelated object without
 * waiting for it.  (A read must not map, unmap or truncate itself: those
 * wait for the mapping table, which a truncate of the object being read
 * holds while it waits for the read; uf_object_create(3).)
 */
#define _GNU_SOURCE
#include "object-store.h"
#include "watchdog.h"

#include <sys/mman.h>
#include <time.h>

#define NPAGES	64
#define SLOWPG	40	/* far from page 0's readahead */
#define SIZE	(NPAGES * UF_PAGE_SIZE)

struct ctx {
	struct os_store st;		/* first member: the store os_read() sees */
	struct uf_mm *mm;
	struct uf_object *other;	/* an unrelated object */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int mode;			/* what the next read does */
	int in_read;			/* a slow read has started */
	int released;			/* the slow read may return */
	int timed_out;			/* the slow read gave up waiting */
	int calls_ret;			/* what the calls from the read returned */
	const volatile unsigned char *other_map;	/* a mapping of @other */
};

enum { PLAIN, CALLS, SLOW };

static ssize_t ctx_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct ctx *c = store;
	int mode;

	pthread_mutex_lock(&c->lock);
	mode = c->mode;
	pthread_mutex_unlock(&c->lock);
	if (mode == CALLS) {
		unsigned char b[2] = { 0 };
		long n = uf_object_pread(c->other, b, 1, 7);
		int ret = n == 1 ? 0 : n < 0 ? (int)n : -EIO;

		b[1] = c->other_map[3 * UF_PAGE_SIZE + 9];	/* a fault served meanwhile */
		if (!ret && (b[0] != 0x77 || b[1] != 0))
			ret = -EIO;
		pthread_mutex_lock(&c->lock);
		c->calls_ret = ret ? ret : 1;
		c->mode = PLAIN;
		pthread_mutex_unlock(&c->lock);
	} else if (mode == SLOW && off <= SLOWPG * UF_PAGE_SIZE && off + len > SLOWPG * UF_PAGE_SIZE) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10;
		pthread_mutex_lock(&c->lock);
		c->in_read = 1;
		pthread_cond_broadcast(&c->cond);
		while (!c->released && !c->timed_out)
			if (pthread_cond_timedwait(&c->cond, &c->lock, &until))
				c->timed_out = 1;
		pthread_mutex_unlock(&c->lock);
	}
	return os_read(&c->st, buf, len, off);
}

static const struct uf_store_ops ctx_ops = { .read = ctx_read };

static void *toucher(void *arg)
{
	const volatile unsigned char *p = arg;

	return (void *)(uintptr_t)*p;
}

int main(void)
{
	static struct ctx c;
	static unsigned char page[UF_PAGE_SIZE];
	struct uf_object *obj, *third;
	unsigned char *map;
	void *m = NULL, *om = NULL;
	unsigned long i;
	pthread_t t;
	void *res;

	ut_watchdog(30);	/* the bug: the read waits for the lock it holds */
	c.mm = ut_mm_create(NULL);
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.cond, NULL);
	os_init(&c.st, SIZE);
	CHECK_RET(uf_object_create(c.mm, &ctx_ops, &c, SIZE, &obj), 0);
	CHECK_RET(uf_object_create_mem(c.mm, SIZE, &c.other), 0);
	CHECK_RET(uf_object_create_mem(c.mm, SIZE, &third), 0);
	CHECK_RET(uf_mmap(c.mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	memset(page, 0x77, UF_PAGE_SIZE);
	for (i = 0; i < NPAGES; i++)	/* page 3 left a hole: a fault fills it */
		if (i != 3)
			CHECK_RET(uf_object_pwrite(c.other, page, UF_PAGE_SIZE, i * UF_PAGE_SIZE),
				  (long)UF_PAGE_SIZE);
	CHECK_RET(uf_mmap(c.mm, SIZE, PROT_READ, UF_MAP_SHARED, c.other, 0, &om), 0);
	c.other_map = om;

	/* a read that reads another object, and faults on a mapping of it */
	pthread_mutex_lock(&c.lock);
	c.mode = CALLS;
	pthread_mutex_unlock(&c.lock);
	CHECK(map[5] == ut_pattern(5), "page 0 byte 5 = %u", map[5]);
	pthread_mutex_lock(&c.lock);
	CHECK(c.calls_ret == 1, "calls from the read returned %d", c.calls_ret);
	pthread_mutex_unlock(&c.lock);

	/* a slow read: another thread maps an unrelated object meanwhile */
	pthread_mutex_lock(&c.lock);
	c.mode = SLOW;
	pthread_mutex_unlock(&c.lock);
	CHECK(pthread_create(&t, NULL, toucher, map + SLOWPG * UF_PAGE_SIZE) == 0, "pthread_create");
	pthread_mutex_lock(&c.lock);
	while (!c.in_read)
		pthread_cond_wait(&c.cond, &c.lock);
	pthread_mutex_unlock(&c.lock);
	CHECK_RET(uf_mmap(c.mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, third, 0, &m), 0);
	((unsigned char *)m)[1] = 1;
	CHECK_RET(uf_munmap(c.mm, m, SIZE), 0);
	pthread_mutex_lock(&c.lock);
	CHECK(!c.timed_out, "uf_mmap/uf_munmap waited for the store's read to end");
	c.released = 1;
	pthread_cond_broadcast(&c.cond);
	pthread_mutex_unlock(&c.lock);
	pthread_join(t, &res);
	CHECK((uintptr_t)res == ut_pattern(SLOWPG * UF_PAGE_SIZE), "slow page read %lu", (unsigned long)(uintptr_t)res);

	CHECK_RET(uf_munmap(c.mm, map, SIZE), 0);
	CHECK_RET(uf_munmap(c.mm, om, SIZE), 0);
	uf_object_put(third);
	uf_object_put(c.other);
	uf_object_put(obj);
	uf_mm_destroy(c.mm);
	os_fini(&c.st);
	return 0;
}
