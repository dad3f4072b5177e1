/* Description: with two handler threads, two threads that fault on one
 * object page while the store's first read of it fails are served in turn:
 * the fill that fails gives its thread SIGBUS inside that access, the other
 * thread's fill reads the page, and no SIGBUS arrives after an access has
 * completed. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NPAGES 8

struct ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int reads_in_flight, reads, overlapped;
	unsigned char *map;
};

struct reader {
	struct ctx *c;
	int sig;
	unsigned char val;
	bool stray;
};

/* The first read of the object waits (up to a second) for a second read
 * to start beside it, then fails; later reads succeed. */
static ssize_t slow_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct ctx *c = store;
	struct timespec dl;
	int first;

	pthread_mutex_lock(&c->lock);
	first = c->reads++ == 0;
	c->reads_in_flight++;
	if (c->reads_in_flight > 1)
		c->overlapped = 1;
	pthread_cond_broadcast(&c->cond);
	if (first) {
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 1;
		while (c->reads_in_flight < 2 &&
		       pthread_cond_timedwait(&c->cond, &c->lock, &dl) != ETIMEDOUT)
			;
	}
	c->reads_in_flight--;
	pthread_mutex_unlock(&c->lock);
	if (first)
		return -EIO;
	memset(buf, 0x5a, len);
	(void)off;
	return (ssize_t)len;
}

static const struct uf_store_ops ops = { .read = slow_read };

static void *reader(void *arg)
{
	struct reader *r = arg;
	sigset_t set, pending;
	struct ut_fault f;

	r->sig = ut_read(r->c->map + 3 * UF_PAGE_SIZE + 7, &r->val, &f);
	/* a SIGBUS from now on would be stray: keep it pending */
	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	usleep(200 * 1000);
	sigpending(&pending);
	r->stray = sigismember(&pending, SIGBUS);
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct ctx c = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct reader r[2] = { { .c = &c }, { .c = &c } };
	struct uf_mm *mm = ut_mm_create(&cfg);
	struct uf_object *obj;
	pthread_t t[2];
	int i, sigbus = 0, ok = 0, reads, overlapped;

	ut_catch_signals();
	CHECK_RET(uf_object_create(mm, &ops, &c, NPAGES * UF_PAGE_SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, NPAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0,
			  (void **)&c.map), 0);
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, reader, &r[i]);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	for (i = 0; i < 2; i++) {
		CHECK(!r[i].stray, "reader %d: a SIGBUS arrived after its access", i);
		if (r[i].sig == SIGBUS)
			sigbus++;
		else if (r[i].sig == 0 && r[i].val == 0x5a)
			ok++;
	}
	pthread_mutex_lock(&c.lock);
	reads = c.reads;
	overlapped = c.overlapped;
	pthread_mutex_unlock(&c.lock);
	printf("store reads %d, overlapped %d, readers: %d SIGBUS, %d read the page\n",
	       reads, overlapped, sigbus, ok);
	CHECK(!overlapped, "two fills of one page ran at once");
	CHECK(sigbus + ok == 2, "a reader saw neither the page nor SIGBUS");
	CHECK(sigbus <= 1, "both readers got SIGBUS though the second read succeeds");
	CHECK_RET(uf_munmap(mm, c.map, NPAGES * UF_PAGE_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return 0;
}
