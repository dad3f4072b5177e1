/* Description: a wrong password is -EACCES at open, at once (never a hang
 * or a retry until the timeout); no password at all is -EACCES too; the
 * right one from the URL works as well as from UFAULT_REDIS_PASSWORD; a
 * bad URL is -EINVAL; no reachable seed is -EHOSTUNREACH. */
#define _GNU_SOURCE
#include "redis-test.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	struct rt_cluster c;
	struct uf_mm *mm;
	struct uf_object *obj;
	char url[700], pw[256];
	const char *hosts;
	double t;
	int ret;
	static const char *const bad[] = {
		"http://127.0.0.1:1/x", "redis://127.0.0.1:1", "redis://127.0.0.1/x",
		"redis://127.0.0.1:0/x", "redis://127.0.0.1:70000/x", "redis://@127.0.0.1:1/x",
		"redis://127.0.0.1:1,/x", "redis://127.0.0.1:1/", "redis://127.0.0.1:1/a{b}",
		"redis://127.0.0.1:1/a b", "redis://127.0.0.1:1/x?replicas=99",
		"redis://127.0.0.1:1/x?bogus=1", "redis://127.0.0.1:1/x?timeout_ms=",
	};
	unsigned int i;

	rt_cluster(&c, "auth");
	alarm(120);
	snprintf(pw, sizeof(pw), "%s", getenv("UFAULT_REDIS_PASSWORD") ? getenv("UFAULT_REDIS_PASSWORD") : "");
	CHECK(pw[0], "the test cluster has a password");
	hosts = c.base + strlen("redis://");
	mm = ut_mm_create(NULL);

	/* the right password in the URL, none in the environment */
	unsetenv("UFAULT_REDIS_PASSWORD");
	snprintf(url, sizeof(url), "redis://:%s@%s/%s-obj", pw, hosts, c.prefix);
	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "password in the URL: %s", strerror(-ret));
	uf_object_put(obj);

	/* wrong password: -EACCES at once, with a long timeout */
	snprintf(url, sizeof(url), "redis://:wrong%s@%s/%s-obj?timeout_ms=60000", pw, hosts, c.prefix);
	t = now();
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -EACCES);
	CHECK_RET(uf_redis_remove(url), -EACCES);
	CHECK(now() - t < 30, "-EACCES took %.1f s", now() - t);
	/* an ACL user that does not exist */
	snprintf(url, sizeof(url), "redis://nobody:%s@%s/%s-obj", pw, hosts, c.prefix);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -EACCES);
	/* no password at all */
	snprintf(url, sizeof(url), "%s/%s-obj?timeout_ms=60000", c.base, c.prefix);
	t = now();
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -EACCES);
	CHECK(now() - t < 30, "-EACCES took %.1f s", now() - t);
	/* a wrong one in the environment */
	setenv("UFAULT_REDIS_PASSWORD", "not-it", 1);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -EACCES);
	/* the right one in the environment */
	setenv("UFAULT_REDIS_PASSWORD", pw, 1);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), 0);
	uf_object_put(obj);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(uf_redis_open(mm, bad[i], O_RDONLY, &obj) == -EINVAL, "%s: not -EINVAL", bad[i]);
	CHECK_RET(uf_redis_open(mm, url, O_WRONLY, &obj), -EINVAL);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY | O_TRUNC, &obj), -EINVAL);
	CHECK_RET(uf_redis_open(NULL, url, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_redis_open(mm, NULL, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_redis_remove(NULL), -EINVAL);
	/* a port where nothing listens (a cluster bus port + 1 is unlikely) */
	CHECK_RET(uf_redis_open(mm, "redis://127.0.0.1:1/x?timeout_ms=300", O_RDONLY, &obj), -EHOSTUNREACH);

	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	printf("ok: -EACCES for wrong or missing passwords, -EINVAL for bad URLs\n");
	return UT_PASS;
}
