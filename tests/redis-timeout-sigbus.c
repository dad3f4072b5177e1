/* Description: a Redis master that stops answering (SIGSTOP) makes a read
 * of its pages fail after the URL's timeout_ms, not hang: the access gets
 * SIGBUS, and the same page reads right once the master answers again. */
#define _GNU_SOURCE
#include "redis-test.h"

#define NPAGES	512

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The port of the master holding @key. */
static int master_of(struct rt_cluster *c, const char *key)
{
	for (int i = 0; i < c->nports; i++) {
		char cmd[600], out[256] = "";
		FILE *f;

		snprintf(cmd, sizeof(cmd),
			 "REDISCLI_AUTH=\"$UFAULT_REDIS_PASSWORD\" redis-cli -h 127.0.0.1 -p %d exists '%s' 2>&1",
			 c->ports[i], key);
		f = popen(cmd, "r");
		CHECK(f, "popen");
		if (!fgets(out, sizeof(out), f))
			out[0] = 0;
		pclose(f);
		if (!strncmp(out, "1", 1))
			return c->ports[i];
	}
	return 0;
}

int main(void)
{
	struct rt_cluster c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *buf, *p, b[16];
	char url[512], fast[512], key[300], path[512];
	struct ut_fault f;
	double t;
	int ret, port, pid = 0, sig;
	FILE *pf;

	rt_cluster(&c, "timeout");
	CHECK(c.dir && c.nports == 6, "the cluster's environment is incomplete");
	alarm(120);
	ut_catch_signals();
	rt_url(&c, url, sizeof(url), "obj", "");
	rt_url(&c, fast, sizeof(fast), "obj", "?timeout_ms=1000");
	snprintf(key, sizeof(key), "uf:{%s-obj:0}:x", c.prefix);

	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "open: %s", strerror(-ret));
	CHECK_RET(uf_object_truncate(obj, (uint64_t)NPAGES * UF_PAGE_SIZE), 0);
	buf = malloc((size_t)NPAGES * UF_PAGE_SIZE);
	CHECK(buf, "malloc");
	for (uint64_t i = 0; i < (uint64_t)NPAGES * UF_PAGE_SIZE; i++)
		buf[i] = (unsigned char)(ut_pattern(i) | 1);
	CHECK_RET(uf_object_pwrite(obj, buf, (size_t)NPAGES * UF_PAGE_SIZE, 0), (long)NPAGES * UF_PAGE_SIZE);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);

	ret = uf_redis_open(mm, fast, O_RDONLY, &obj);
	CHECK(ret == 0, "reader open: %s", strerror(-ret));
	ret = uf_mmap(mm, (size_t)NPAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "mmap: %s", strerror(-ret));

	port = master_of(&c, key);
	CHECK(port, "no master holds %s", key);
	snprintf(path, sizeof(path), "%s/%d/pid", c.dir, port);
	pf = fopen(path, "r");
	CHECK(pf && fscanf(pf, "%d", &pid) == 1 && pid > 0, "no pid in %s", path);
	fclose(pf);

	/* the master stops answering: the read fails after about a second */
	CHECK(kill(pid, SIGSTOP) == 0, "SIGSTOP: %s", strerror(errno));
	t = now();
	sig = ut_copy_from(b, p + 100 * UF_PAGE_SIZE, sizeof(b), &f);
	t = now() - t;
	CHECK(kill(pid, SIGCONT) == 0, "SIGCONT: %s", strerror(errno));
	CHECK(sig == SIGBUS, "reading a page of a stopped master: signal %d after %.1f s", sig, t);
	CHECK(t >= 0.9 && t < 20, "SIGBUS after %.1f s (timeout_ms=1000)", t);
	printf("SIGBUS after %.2f s\n", t);

	/* the master answers again (or its replica took over): the page reads
	 * (after a failed access the page stays poisoned until the thread has
	 * retried -- milliseconds on a loaded machine: see ufault(7) Signals) */
	for (int i = 0; ; i++) {
		struct timespec ms = { 0, 1000 * 1000 };

		sig = ut_copy_from(b, p + 100 * UF_PAGE_SIZE, sizeof(b), &f);
		if (!sig)
			break;
		CHECK(i < 3000, "page 100 still gives signal %d", sig);
		nanosleep(&ms, NULL);
	}
	CHECK(!memcmp(b, buf + 100 * UF_PAGE_SIZE, sizeof(b)), "page 100 read wrong after the stop");
	uf_munmap(mm, p, (size_t)NPAGES * UF_PAGE_SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* a failover may have happened: let the cluster settle for the next test */
	{
		char cmd[800];
		const char *script = getenv("UFAULT_TEST_REDIS_SCRIPT");

		if (script) {
			snprintf(cmd, sizeof(cmd), "'%s' wait '%s' >/dev/null", script, c.dir);
			CHECK(system(cmd) == 0, "the cluster did not settle");
		}
	}
	CHECK_RET(uf_redis_remove(url), 0);
	free(buf);
	printf("ok: a stopped master gave SIGBUS after timeout_ms, then the page read right\n");
	return UT_PASS;
}
