/* Description: one writer, many readers: a second O_RDWR open of a Redis
 * object gets -EBUSY (from another process too) while readers open freely;
 * after the writer's last put the lease is free again, and a writer that
 * dies without releasing it loses it when it expires. */
#define _GNU_SOURCE
#include "redis-test.h"

#include <spawn.h>

extern char **environ;

/* The child (the test run again: a threaded process may not go on after
 * fork() under ThreadSanitizer): open @url O_RDWR, exit with -errno. */
static int child(const char *url, bool die_holding)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	int ret = uf_redis_open(mm, url, O_RDWR, &obj);

	if (die_holding && ret == 0)
		_exit(0);	/* no put: the lease stays until it expires */
	if (ret == 0)
		uf_object_put(obj);
	uf_mm_destroy(mm);
	return -ret;
}

/* Open @url O_RDWR in another process; return what it got (as -errno). */
static int open_in_child(const char *url, bool die_holding)
{
	char *argv[] = { "redis-writer-lease", "child", (char *)url, die_holding ? "die" : "put", NULL };
	pid_t pid;
	int st;

	CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) == 0, "posix_spawn");
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st), "child died");
	return -WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	struct rt_cluster c;
	struct uf_mm *mm;
	struct uf_object *w, *w2, *r1, *r2;
	char url[512], fast[512];
	int ret, i;

	if (argc == 4 && !strcmp(argv[1], "child"))
		return child(argv[2], !strcmp(argv[3], "die"));
	rt_cluster(&c, "lease");
	alarm(120);
	rt_url(&c, url, sizeof(url), "obj", "");
	rt_url(&c, fast, sizeof(fast), "obj", "?lease_ms=1500");
	mm = ut_mm_create(NULL);

	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &w);
	CHECK(ret == 0, "first writer: %s", strerror(-ret));
	CHECK_RET(uf_redis_open(mm, url, O_RDWR, &w2), -EBUSY);
	CHECK_RET(uf_redis_open(mm, url, O_RDWR | O_CREAT, &w2), -EBUSY);
	CHECK_RET(open_in_child(url, false), -EBUSY);
	CHECK_RET(uf_redis_remove(url), -EBUSY);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &r1), 0);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &r2), 0);
	/* a reader cannot write */
	CHECK_RET(uf_object_truncate(r1, 4096), -EROFS);
	uf_object_put(r1);
	uf_object_put(r2);

	/* the lease is renewed past its expiry while the writer lives */
	uf_object_put(w);
	ret = uf_redis_open(mm, fast, O_RDWR, &w);
	CHECK(ret == 0, "writer after the first put: %s", strerror(-ret));
	for (i = 0; i < 4; i++) {
		usleep(1000 * 1000);
		CHECK_RET(open_in_child(fast, false), -EBUSY);
	}
	CHECK_RET(uf_object_truncate(w, 8192), 0);
	CHECK_RET(uf_object_sync(w), 0);
	uf_object_put(w);

	/* a writer that dies holding the lease loses it at its expiry */
	CHECK_RET(open_in_child(fast, true), 0);
	CHECK_RET(uf_redis_open(mm, fast, O_RDWR, &w), -EBUSY);
	for (i = 0; i < 100; i++) {
		usleep(100 * 1000);
		ret = uf_redis_open(mm, fast, O_RDWR, &w);
		if (ret != -EBUSY)
			break;
	}
	CHECK(ret == 0, "the dead writer's lease did not expire: %s", strerror(-ret));
	uf_object_put(w);
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	printf("ok: -EBUSY for a second writer, leases renewed, released and expired\n");
	return UT_PASS;
}
