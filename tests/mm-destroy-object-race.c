/* Description: uf_mm_destroy() while other threads are inside
 * uf_object_pread/pwrite/truncate/punch_hole/sync/size on its objects:
 * every call returns a result or an error, none crashes; once destroy has
 * returned, pread/pwrite/truncate/punch are -EINVAL, while sync and put
 * still work (the objects' dirty pages reach the store).
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define SIZE	(32 * UF_PAGE_SIZE)
#define THREADS	4
#define ROUNDS	12

struct slow_store {
	struct os_store s;
};

/* a slow read widens the window in which destroy runs under a call */
static ssize_t slow_read(void *store, void *buf, size_t len, uint64_t off)
{
	usleep(300);
	return os_read(store, buf, len, off);
}

static const struct uf_store_ops slow_ops = {
	.read = slow_read,
	.write = os_write,
	.truncate = os_truncate,
	.sync = os_sync,
};

struct ctx {
	struct uf_object *obj[2];
	int stop;
	int destroyed;			/* destroy has returned */
	unsigned long calls, errors;
};

struct worker {
	struct ctx *c;
	unsigned int id;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct ctx *c = w->c;
	uint64_t rng = 1234 + w->id;
	unsigned char buf[3 * UF_PAGE_SIZE];
	unsigned long calls = 0, errors = 0;

	memset(buf, 0x5a, sizeof(buf));
	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		struct uf_object *obj = c->obj[os_rand(&rng) % 2];
		uint64_t off = os_rand(&rng) % (SIZE - 100);
		int after = __atomic_load_n(&c->destroyed, __ATOMIC_ACQUIRE);
		long r = 0;

		switch (os_rand(&rng) % 6) {
		case 0:
			r = uf_object_pread(obj, buf, sizeof(buf), off);
			CHECK(r >= 0 || r == -EINVAL, "pread: %ld", r);
			break;
		case 1:
			r = uf_object_pwrite(obj, buf, 100, off);
			CHECK(r >= 0 || r == -EINVAL, "pwrite: %ld", r);
			break;
		case 2:
			r = uf_object_truncate(obj, SIZE - os_rand(&rng) % (2 * UF_PAGE_SIZE));
			CHECK(r == 0 || r == -EINVAL, "truncate: %ld", r);
			break;
		case 3:
			r = uf_object_punch_hole(obj, off, UF_PAGE_SIZE);
			CHECK(r == 0 || r == -EINVAL, "punch: %ld", r);
			break;
		case 4:
			r = uf_object_sync(obj);
			CHECK(r == 0, "sync: %ld", r);
			break;
		case 5:
			CHECK(uf_object_size(obj) <= SIZE, "size %lu", (unsigned long)uf_object_size(obj));
			break;
		}
		if (after && r > 0)
			CHECK(0, "a call after destroy returned %ld", r);
		calls++;
		errors += r < 0;
	}
	__atomic_add_fetch(&c->calls, calls, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->errors, errors, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	struct slow_store st;
	unsigned long calls = 0, errors = 0;
	int round;

	os_watchdog(120);
	for (round = 0; round < ROUNDS; round++) {
		struct uf_mm *mm = ut_mm_create(NULL);
		struct worker w[THREADS];
		pthread_t t[THREADS];
		struct ctx c = { 0 };
		unsigned char b[8];
		int i;

		os_init(&st.s, SIZE);
		CHECK_RET(uf_object_create(mm, &slow_ops, &st, SIZE, &c.obj[0]), 0);
		CHECK_RET(uf_object_create_mem(mm, SIZE, &c.obj[1]), 0);
		for (i = 0; i < THREADS; i++) {
			w[i] = (struct worker){ &c, (unsigned int)i };
			CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0, "pthread_create");
		}
		usleep(20000 + 3000 * round);
		uf_mm_destroy(mm);
		__atomic_store_n(&c.destroyed, 1, __ATOMIC_RELEASE);
		usleep(5000);
		__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
		for (i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);

		/* after destroy: the documented errors, and sync still works */
		CHECK_RET(uf_object_pread(c.obj[0], b, sizeof(b), 0), -EINVAL);
		CHECK_RET(uf_object_pwrite(c.obj[0], b, sizeof(b), 0), -EINVAL);
		CHECK_RET(uf_object_truncate(c.obj[0], 0), -EINVAL);
		CHECK_RET(uf_object_punch_hole(c.obj[0], 0, 1), -EINVAL);
		CHECK_RET(uf_object_sync(c.obj[0]), 0);
		CHECK_RET(uf_object_sync(c.obj[1]), 0);
		uf_object_put(c.obj[0]);
		uf_object_put(c.obj[1]);
		os_fini(&st.s);
		calls += c.calls;
		errors += c.errors;
	}
	printf("%d rounds: %lu calls, %lu returned an error\n", ROUNDS, calls, errors);
	return 0;
}
