/* Description: a fill that copies pages straight into the faulting mapping
 * never lands in what the program moved there meanwhile: a fault's store
 * read is held while the program mremap()s another mapping of the object
 * over the faulting one, and the events of that move are read but not yet
 * applied (a truncate of another object holds the mappings' lock) when
 * the read returns.  The page the moved mapping shows is the object's
 * own (not the faulting page's bytes), and the faulting page reads right
 * through uf_object_pread() and a new mapping (not a hole the page state
 * takes for cached).
 */
#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	64
#define WIN	16		/* pages per mapping */

static unsigned char byte_at(uint64_t off)
{
	return (unsigned char)((off / PG) * 3 + 1 + (off % PG) % 7);
}

/* A store whose first read of page 0, or first truncate, waits for a go. */
struct gate_store {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold_read, read_waiting, hold_trunc, trunc_waiting;
};

static void gate_wait(struct gate_store *g, bool *hold, bool *waiting)
{
	pthread_mutex_lock(&g->lock);
	if (*hold) {
		*waiting = true;
		pthread_cond_broadcast(&g->cond);
		while (*hold)
			pthread_cond_wait(&g->cond, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
}

static void gate_until(struct gate_store *g, bool *flag)
{
	pthread_mutex_lock(&g->lock);
	while (!*flag)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static void gate_open(struct gate_store *g, bool *hold)
{
	pthread_mutex_lock(&g->lock);
	*hold = false;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static ssize_t g_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct gate_store *g = store;
	size_t i;

	if (off == 0)
		gate_wait(g, &g->hold_read, &g->read_waiting);
	for (i = 0; i < len; i++)
		((unsigned char *)buf)[i] = byte_at(off + i);
	return (ssize_t)len;
}

static int g_write(void *store, const void *buf, size_t len, uint64_t off)
{
	(void)store, (void)buf, (void)len, (void)off;
	return 0;
}

static int g_truncate(void *store, uint64_t size)
{
	struct gate_store *g = store;

	(void)size;
	gate_wait(g, &g->hold_trunc, &g->trunc_waiting);
	return 0;
}

static const struct uf_store_ops gate_ops = {
	.read = g_read, .write = g_write, .truncate = g_truncate,
};

struct ctx {
	struct gate_store g1, g2;
	struct uf_object *o1, *o2;
	unsigned char *m1, *m2;
	unsigned char seen;
	int ret;
};

static void *toucher(void *arg)
{
	struct ctx *c = arg;

	c->seen = *(volatile unsigned char *)c->m1;	/* page 0: its read is held */
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
	struct ctx c = { 0 };
	struct uf_stats st;
	pthread_t t1, t2;
	unsigned char b, *m3;
	struct uf_mm *mm;
	void *p;
	size_t i;

	ut_watchdog(60);
	mm = ut_mm_create(&cfg);
	pthread_mutex_init(&c.g1.lock, NULL);
	pthread_cond_init(&c.g1.cond, NULL);
	pthread_mutex_init(&c.g2.lock, NULL);
	pthread_cond_init(&c.g2.cond, NULL);
	c.g1.hold_read = true;
	c.g2.hold_trunc = true;
	CHECK_RET(uf_object_create(mm, &gate_ops, &c.g1, NPAGES * PG, &c.o1), 0);
	CHECK_RET(uf_object_create(mm, &gate_ops, &c.g2, 4 * PG, &c.o2), 0);
	CHECK_RET(uf_mmap(mm, WIN * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.o1, 0,
			  (void **)&c.m1), 0);
	CHECK_RET(uf_mmap(mm, WIN * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.o1, WIN * PG,
			  (void **)&c.m2), 0);

	/* a fault on page 0, its store read held */
	CHECK(pthread_create(&t1, NULL, toucher, &c) == 0, "thread");
	gate_until(&c.g1, &c.g1.read_waiting);
	/* the mappings' lock held by a truncate of another object */
	CHECK(pthread_create(&t2, NULL, truncater, &c) == 0, "thread");
	gate_until(&c.g2, &c.g2.trunc_waiting);
	/* the second mapping (pages 16..31) moved over the first: the kernel
	 * unmaps the first; the events are read, not applied */
	p = mremap(c.m2, WIN * PG, WIN * PG, MREMAP_MAYMOVE | MREMAP_FIXED, c.m1);
	CHECK(p == c.m1, "mremap: %m");
	/* the fill of pages 0.. goes on and the fault is answered; then the
	 * lock is let go (the faulting thread's retry, in the moved mapping,
	 * is served once the table shows the move) */
	gate_open(&c.g1, &c.g1.hold_read);
	do {
		struct timespec ms = { 0, 1000 * 1000 };

		CHECK_RET(uf_mm_stats(mm, &st), 0);
		nanosleep(&ms, NULL);
	} while (!st.major_faults);
	gate_open(&c.g2, &c.g2.hold_trunc);
	pthread_join(t2, NULL);
	pthread_join(t1, NULL);
	CHECK_RET(c.ret, 0);

	/* the access ended in the moved mapping: object page 16 */
	CHECK(c.seen == byte_at(WIN * PG), "the faulting thread read %#x, want %#x", c.seen,
	      byte_at(WIN * PG));
	for (i = 0; i < WIN; i++)
		CHECK(c.m1[i * PG + 5] == byte_at((WIN + i) * PG + 5),
		      "moved mapping, page %zu: %#x, want %#x (the fill's bytes?)", i,
		      c.m1[i * PG + 5], byte_at((WIN + i) * PG + 5));
	for (i = 0; i < WIN; i++) {
		CHECK_RET(uf_object_pread(c.o1, &b, 1, i * PG + 3), 1);
		CHECK(b == byte_at(i * PG + 3), "pread of page %zu: %#x, want %#x", i, b,
		      byte_at(i * PG + 3));
	}
	CHECK_RET(uf_mmap(mm, WIN * PG, PROT_READ, UF_MAP_SHARED, c.o1, 0, (void **)&m3), 0);
	for (i = 0; i < WIN; i++)
		CHECK(m3[i * PG + 6] == byte_at(i * PG + 6), "new mapping, page %zu: %#x", i,
		      m3[i * PG + 6]);
	CHECK_RET(uf_munmap(mm, m3, WIN * PG), 0);
	CHECK_RET(uf_munmap(mm, c.m1, WIN * PG), 0);
	uf_object_put(c.o1);
	uf_object_put(c.o2);
	uf_mm_destroy(mm);
	return 0;
}
