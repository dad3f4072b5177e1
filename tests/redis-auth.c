/* Description: a wrong password is -EACCES at open, at once (never a hang
 * or a retry until the timeout); no password at all is -EACCES too; the
 * right one from the URL works as well as from UFAULT_REDIS_PASSWORD; an
 * ACL user works, and one not allowed to write gets -EACCES for O_RDWR but
 * reads; a bad URL is -EINVAL; a seed that refuses is -ECONNREFUSED. */
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

	/* ACL users (per node: set on every one) */
	for (int n = 0; n < c.nports; n++) {
		char out[256], cmd[2048];
		FILE *f;

		snprintf(cmd, sizeof(cmd),
			 "REDISCLI_AUTH='%s' redis-cli -h 127.0.0.1 -p %d acl setuser uf-rw on '>rw-%s' '~*' '&*' +@all 2>&1 &&"
			 "REDISCLI_AUTH='%s' redis-cli -h 127.0.0.1 -p %d acl setuser uf-ro on '>ro-%s' '~*' '&*' "
			 "-@all +hmget +hget +get +cluster +wait +auth +ping 2>&1",
			 pw, c.ports[n], pw, pw, c.ports[n], pw);
		f = popen(cmd, "r");
		CHECK(f, "popen");
		while (fgets(out, sizeof(out), f))
			CHECK(!strncmp(out, "OK", 2), "acl setuser: %s", out);
		pclose(f);
	}
	unsetenv("UFAULT_REDIS_PASSWORD");
	snprintf(url, sizeof(url), "redis://uf-rw:rw-%s@%s/%s-obj", pw, hosts, c.prefix);
	ret = uf_redis_open(mm, url, O_RDWR, &obj);
	CHECK(ret == 0, "ACL user uf-rw: %s", strerror(-ret));
	CHECK_RET(uf_object_truncate(obj, 4096), 0);
	CHECK_RET(uf_object_pwrite(obj, "acl", 3, 0), 3);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	snprintf(url, sizeof(url), "redis://uf-ro:ro-%s@%s/%s-obj", pw, hosts, c.prefix);
	t = now();
	CHECK_RET(uf_redis_open(mm, url, O_RDWR, &obj), -EACCES);
	CHECK(now() - t < 30, "-EACCES took %.1f s", now() - t);
	ret = uf_redis_open(mm, url, O_RDONLY, &obj);
	CHECK(ret == 0, "ACL user uf-ro reading: %s", strerror(-ret));
	{
		char b[4] = "";

		CHECK_RET(uf_object_pread(obj, b, 3, 0), 3);
		CHECK(!memcmp(b, "acl", 3), "uf-ro read '%.3s'", b);
	}
	uf_object_put(obj);
	/* the user from the URL, its password from the environment */
	snprintf(url, sizeof(url), "redis://uf-ro@%s/%s-obj", hosts, c.prefix);
	{
		char ropw[300];

		snprintf(ropw, sizeof(ropw), "ro-%s", pw);
		setenv("UFAULT_REDIS_PASSWORD", ropw, 1);
	}
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), 0);
	uf_object_put(obj);
	setenv("UFAULT_REDIS_PASSWORD", pw, 1);
	snprintf(url, sizeof(url), "%s/%s-obj", c.base, c.prefix);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(uf_redis_open(mm, bad[i], O_RDONLY, &obj) == -EINVAL, "%s: not -EINVAL", bad[i]);
	CHECK_RET(uf_redis_open(mm, url, O_WRONLY, &obj), -EINVAL);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY | O_TRUNC, &obj), -EINVAL);
	CHECK_RET(uf_redis_open(NULL, url, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_redis_open(mm, NULL, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_redis_remove(NULL), -EINVAL);
	/* a port where nothing listens (a cluster bus port + 1 is unlikely) */
	CHECK_RET(uf_redis_open(mm, "redis://127.0.0.1:1/x?timeout_ms=300", O_RDONLY, &obj), -ECONNREFUSED);

	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	printf("ok: -EACCES for wrong or missing passwords, -EINVAL for bad URLs\n");
	return UT_PASS;
}
