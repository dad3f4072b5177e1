// SPDX-License-Identifier: MIT
/*
 * no-redis.c - linked into ufault-stress, ufault-bench and ufault-serve
 * in place of libufault-redis and tools/redis/bench-redis.c when hiredis is not
 * installed (see the Makefile), so the core tools build with the C library
 * alone.  Their --store option then stops the tool with a message that
 * says how to get the Redis store (exit 2, as for a bad option).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <ufault-redis.h>
#include "bench-redis.h"

static void say_missing(const char *tool)
{
	fflush(stdout);
	fprintf(stderr, "%s: built without the Redis store (hiredis was not found at build time):\n"
		"%s: install hiredis (Debian/Ubuntu: apt-get install libhiredis-dev) and run make again\n",
		tool, tool);
}

int uf_redis_open(struct uf_mm *mm, const char *url, int oflags, struct uf_object **objp)
{
	(void)mm;
	(void)url;
	(void)oflags;
	*objp = NULL;
	say_missing(program_invocation_short_name);
	exit(2);
}

int uf_redis_remove(const char *url)
{
	(void)url;
	return -ENOTSUP;
}

int bench_redis_main(const struct bench_redis_opts *o)
{
	(void)o;
	say_missing("ufault-bench");
	return 2;
}
