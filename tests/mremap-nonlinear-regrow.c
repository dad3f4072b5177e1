/* Description: the program's mremap() shrinking a mapping that has a
 * nonlinear window near its end, then growing it in place again before
 * ufault has applied the shrink's unmap event (a truncate of another
 * object holds the mappings' lock meanwhile): the grown part is the
 * kernel's plain linear mapping, and faults there read the object pages
 * the kernel maps -- never a window the table kept from before, whose
 * faults would be served again and again for ever.
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
#define NPAGES	32

static unsigned char byte_at(uint64_t off)
{
	return (unsigned char)((off / PG) * 5 + 3 + (off % PG) % 11);
}

/* A store whose first truncate waits for a go. */
struct gate_store {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold, waiting;
};

static ssize_t g_read(void *store, void *buf, size_t len, uint64_t off)
{
	size_t i;

	(void)store;
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
	pthread_mutex_lock(&g->lock);
	if (g->hold) {
		g->waiting = true;
		pthread_cond_broadcast(&g->cond);
		while (g->hold)
			pthread_cond_wait(&g->cond, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return 0;
}

static const struct uf_store_ops gate_ops = {
	.read = g_read, .write = g_write, .truncate = g_truncate,
};

struct ctx {
	struct gate_store g;
	struct uf_object *o2;
	int ret;
};

static void *truncater(void *arg)
{
	struct ctx *c = arg;

	c->ret = uf_object_truncate(c->o2, PG);	/* held, under the mappings' lock */
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct ctx c = { 0 };
	struct uf_object *o1;
	struct uf_mm *mm;
	unsigned char *m;
	pthread_t t;
	size_t i;

	ut_watchdog(60);
	mm = ut_mm_create(&cfg);
	pthread_mutex_init(&c.g.lock, NULL);
	pthread_cond_init(&c.g.cond, NULL);
	c.g.hold = true;
	CHECK_RET(uf_object_create(mm, &gate_ops, &c.g, NPAGES * PG, &o1), 0);
	CHECK_RET(uf_object_create(mm, &gate_ops, &c.g, 4 * PG, &c.o2), 0);
	CHECK_RET(uf_mmap(mm, NPAGES * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, o1, 0,
			  (void **)&m), 0);
	/* pages 26..29 of the mapping show object pages 2..5 */
	CHECK_RET(uf_remap_file_pages(mm, m + 26 * PG, 4 * PG, 0, 2, 0), 0);
	CHECK(m[27 * PG + 1] == byte_at(3 * PG + 1), "window");
	CHECK(m[10 * PG] == byte_at(10 * PG), "linear part");

	CHECK(pthread_create(&t, NULL, truncater, &c) == 0, "thread");
	pthread_mutex_lock(&c.g.lock);
	while (!c.g.waiting)
		pthread_cond_wait(&c.g.cond, &c.g.lock);
	pthread_mutex_unlock(&c.g.lock);
	/* shrink to 20 pages (the window goes), grow back in place */
	CHECK(mremap(m, NPAGES * PG, 20 * PG, 0) == m, "mremap shrink: %m");
	CHECK(mremap(m, 20 * PG, NPAGES * PG, 0) == m, "mremap grow in place: %m");
	pthread_mutex_lock(&c.g.lock);
	c.g.hold = false;
	pthread_cond_broadcast(&c.g.cond);
	pthread_mutex_unlock(&c.g.lock);
	pthread_join(t, NULL);
	CHECK_RET(c.ret, 0);

	/* the old window's pages first (no readahead stream reaches them) */
	for (i = 29; i >= 26; i--)
		CHECK(m[i * PG + 7] == byte_at(i * PG + 7), "page %zu: %#x, want %#x", i,
		      m[i * PG + 7], byte_at(i * PG + 7));
	for (i = 0; i < NPAGES; i++)
		CHECK(m[i * PG + 7] == byte_at(i * PG + 7), "page %zu: %#x, want %#x", i,
		      m[i * PG + 7], byte_at(i * PG + 7));
	m[27 * PG] = 0x77;
	CHECK_RET(uf_munmap(mm, m, NPAGES * PG), 0);
	uf_object_put(o1);
	uf_object_put(c.o2);
	uf_mm_destroy(mm);
	return 0;
}
