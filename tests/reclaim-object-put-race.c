/* Description: reclaim running in another thread while the last reference
 * to an object is being dropped must not take a new reference to that
 * object: the store is released exactly once and the object is freed once
 * (uf_reclaim() snapshots mm->objects with uf_object_get() even for an
 * object whose count already reached zero). */
#define _GNU_SOURCE
#include "helpers.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUDGET		(1ULL << 20)
#define A_SIZE		(4ULL << 20)
#define B_SIZE		(64ULL << 10)

struct bstore {
	int releases;
	int in_release;		/* atomic */
};

static ssize_t b_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store; (void)off;
	memset(buf, 0x5a, len);
	return (ssize_t)len;
}

static int b_write(void *store, const void *buf, size_t len, uint64_t off)
{
	(void)store; (void)buf; (void)len; (void)off;
	return 0;
}

static void b_release(void *store)
{
	struct bstore *b = store;
	int n = __atomic_add_fetch(&b->releases, 1, __ATOMIC_SEQ_CST);

	if (n > 1) {
		fprintf(stderr, "store released %d times: reclaim resurrected a dying object\n", n);
		_exit(UT_FAIL);
	}
	__atomic_store_n(&b->in_release, 1, __ATOMIC_SEQ_CST);
	usleep(1000 * 1000);	/* the last put is slow here: reclaim runs meanwhile */
}

static const struct uf_store_ops b_ops = {
	.read = b_read, .write = b_write, .release = b_release,
};

struct ctx {
	struct uf_object *a;
	struct bstore *b;
	char *buf;
};

static void *reclaimer(void *arg)
{
	struct ctx *c = arg;

	while (!__atomic_load_n(&c->b->in_release, __ATOMIC_SEQ_CST))
		usleep(100);
	/* over the budget: uf_object_pread() ends in uf_reclaim() */
	if (uf_object_pread(c->a, c->buf, A_SIZE, 0) != (ssize_t)A_SIZE)
		fprintf(stderr, "pread of A failed\n");
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET };
	struct bstore bs = { 0 };
	struct ctx c = { .b = &bs };
	struct uf_object *b;
	struct uf_mm *mm;
	pthread_t t;
	char *bbuf = malloc(B_SIZE);

	mm = ut_mm_create(&cfg);
	CHECK_RET(uf_object_create_mem(mm, A_SIZE, &c.a), 0);
	CHECK_RET(uf_object_create(mm, &b_ops, &bs, B_SIZE, &b), 0);
	c.buf = malloc(A_SIZE);
	CHECK(c.buf && bbuf, "malloc");
	/* B has pages in the cache, so reclaim wants some of them */
	CHECK_RET(uf_object_pread(b, bbuf, B_SIZE, 0), B_SIZE);

	CHECK_RET(pthread_create(&t, NULL, reclaimer, &c), 0);
	uf_object_put(b);		/* the last reference */
	pthread_join(t, NULL);
	CHECK(bs.releases == 1, "store released %d times", bs.releases);

	uf_object_put(c.a);
	uf_mm_destroy(mm);
	free(c.buf);
	free(bbuf);
	return UT_PASS;
}
