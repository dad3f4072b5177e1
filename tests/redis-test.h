/* SPDX-License-Identifier: MIT */
/*
 * For the redis-* tests: the cluster tests/redis-cluster started (its
 * environment), object URLs unique to one run, and redis-cli to look at
 * what reached the cluster without going through the library.
 * Not a test program itself.
 */
#ifndef UT_REDIS_TEST_H
#define UT_REDIS_TEST_H

#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ufault-redis.h>

#define RT_UNUSED __attribute__((unused))

struct rt_cluster {
	const char *base;	/* redis://host:port,... */
	const char *dir;	/* where tests/redis-cluster keeps its servers */
	int ports[6];
	int nports;
	char prefix[64];	/* object names start with it: one run's own */
};

/* The cluster from the environment, or exit 77 when there is none. */
static RT_UNUSED void rt_cluster(struct rt_cluster *c, const char *test)
{
	const char *ports = getenv("UFAULT_TEST_REDIS_PORTS");
	char *end;

	memset(c, 0, sizeof(*c));
	c->base = getenv("UFAULT_TEST_REDIS");
	c->dir = getenv("UFAULT_TEST_REDIS_DIR");
	if (!c->base || !*c->base) {
		printf("skip: no cluster (UFAULT_TEST_REDIS unset; make test starts one)\n");
		exit(UT_SKIP);
	}
	while (ports && *ports && c->nports < 6) {
		c->ports[c->nports++] = (int)strtol(ports, &end, 10);
		ports = end;
	}
	snprintf(c->prefix, sizeof(c->prefix), "%s-%d-%ld", test, (int)getpid(), (long)time(NULL));
}

/* The URL of object @name of this run, with @params ("" or "?k=v..."). */
static RT_UNUSED void rt_url(const struct rt_cluster *c, char *buf, size_t len, const char *name,
			     const char *params)
{
	snprintf(buf, len, "%s/%s-%s%s", c->base, c->prefix, name, params);
}

/* Run redis-cli in cluster mode against the first node; its output's first
 * line into @out.  Return its exit status. */
static RT_UNUSED int rt_cli(const struct rt_cluster *c, char *out, size_t outlen, const char *fmt, ...)
{
	char args[1024], cmd[1200];
	va_list ap;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "REDISCLI_AUTH=\"$UFAULT_REDIS_PASSWORD\" redis-cli -c -h 127.0.0.1 -p %d %s 2>&1",
		 c->ports[0], args);
	f = popen(cmd, "r");
	CHECK(f, "popen: %s", strerror(errno));
	if (!fgets(out, (int)outlen, f))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The integer redis-cli prints for a command (HLEN, EXISTS, ...). */
static RT_UNUSED long rt_cli_int(const struct rt_cluster *c, const char *fmt, const char *arg)
{
	char out[256], args[512];

	snprintf(args, sizeof(args), fmt, arg);
	CHECK(rt_cli(c, out, sizeof(out), "%s", args) == 0, "redis-cli %s: %s", args, out);
	return strtol(out, NULL, 10);
}

/* The sum over the cluster's nodes of the number after @key in the lines
 * of INFO @section that begin with @line. */
static RT_UNUSED long rt_info_sum_at(const struct rt_cluster *c, const char *section,
				     const char *line_, const char *key)
{
	long total = 0;
	int i;

	for (i = 0; i < c->nports; i++) {
		char sh[300], line[1024];
		const char *at;
		FILE *f;
		int st;

		snprintf(sh, sizeof(sh), "REDISCLI_AUTH=\"$UFAULT_REDIS_PASSWORD\" redis-cli "
			 "-h 127.0.0.1 -p %d INFO %s 2>&1", c->ports[i], section);
		f = popen(sh, "r");
		CHECK(f, "popen: %s", strerror(errno));
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, line_, strlen(line_)) && (at = strstr(line, key)))
				total += strtol(at + strlen(key), NULL, 10);
		st = pclose(f);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "redis-cli -p %d INFO %s",
		      c->ports[i], section);
	}
	return total;
}

/* @cmd (lower case: "hmget") commands the cluster's nodes have run,
 * summed (INFO commandstats of each). */
static RT_UNUSED long rt_cmd_calls(const struct rt_cluster *c, const char *cmd)
{
	char want[64];

	snprintf(want, sizeof(want), "cmdstat_%s:", cmd);
	return rt_info_sum_at(c, "commandstats", want, "calls=");
}

static RT_UNUSED long rt_hmget_calls(const struct rt_cluster *c)
{
	return rt_cmd_calls(c, "hmget");
}

/* The sum over the cluster's nodes of the number after "@field:" in INFO
 * @section (total_net_output_bytes in stats: what they sent). */
static RT_UNUSED long rt_info_sum(const struct rt_cluster *c, const char *section,
				  const char *field)
{
	char want[128];

	snprintf(want, sizeof(want), "%s:", field);
	return rt_info_sum_at(c, section, want, want);
}

/* The Redis object at @url, @size bytes: pages @pages (@n of them)
 * written, each byte at offset off as @want(off), the rest never
 * written (no field); synced. */
static RT_UNUSED void rt_make_object(const char *url, uint64_t size, const uint64_t *pages,
				     size_t n, unsigned char (*want)(uint64_t))
{
	unsigned char buf[UF_PAGE_SIZE];
	struct uf_object *obj;
	struct uf_mm *mm = ut_mm_create(NULL);
	size_t i, k;

	CHECK_RET(uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj), 0);
	CHECK_RET(uf_object_truncate(obj, size), 0);
	for (i = 0; i < n; i++) {
		uint64_t off = pages[i] * UF_PAGE_SIZE;

		for (k = 0; k < UF_PAGE_SIZE; k++)
			buf[k] = want(off + k);
		CHECK_RET(uf_object_pwrite(obj, buf, UF_PAGE_SIZE, off), (long)UF_PAGE_SIZE);
	}
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

#endif
