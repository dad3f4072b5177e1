// SPDX-License-Identifier: MIT
/*
 * no-http.c - linked into ufault-serve, ufault-cp and ufault-bench in place of
 * libufault-http when libcurl is not installed (see the Makefile), so the
 * core tools build with the C library alone.  An http(s):// SOURCE then
 * stops the tool with a message that says how to get the HTTP store
 * (exit 2, as for a bad argument); ufault-bench skips its HTTP row.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ufault-http.h>
#include "bench-http.h"

int uf_http_open(struct uf_mm *mm, const char *url, const struct uf_http_opts *opts,
		 struct uf_object **objp)
{
	(void)mm;
	(void)url;
	(void)opts;
	*objp = NULL;
	fflush(stdout);
	fprintf(stderr, "%s: built without the HTTP store (libcurl was not found at build time):\n"
		"%s: install libcurl (Debian/Ubuntu: apt-get install libcurl4-openssl-dev) and run make again\n",
		program_invocation_short_name, program_invocation_short_name);
	exit(2);
}

int uf_http_store_open(const char *url, const struct uf_http_opts *opts,
		       const struct uf_store_ops **opsp, void **storep, uint64_t *sizep)
{
	struct uf_object *obj;

	(void)opsp;
	(void)storep;
	(void)sizep;
	return uf_http_open(NULL, url, opts, &obj);	/* (says so, exits) */
}

int uf_http_store_readv(void *store, const struct uf_store_iov *iov, size_t n)
{
	(void)store;
	(void)iov;
	(void)n;
	return -ENOTSUP;
}

int uf_http_store_stats(void *store, struct uf_http_stats *st)
{
	(void)store;
	(void)st;
	return -ENOTSUP;
}

int uf_http_stats(struct uf_object *obj, struct uf_http_stats *st)
{
	(void)obj;
	(void)st;
	return -ENOTSUP;
}

int bench_http_start(const char *dir, char *base, size_t blen, char *why, size_t wlen)
{
	(void)dir;
	(void)base;
	(void)blen;
	snprintf(why, wlen, "built without libcurl (apt-get install libcurl4-openssl-dev)");
	return -ENOTSUP;
}

void bench_http_stop(void)
{
}

int bench_http_open(struct uf_mm *mm, const char *url, struct uf_object **objp)
{
	(void)mm;
	(void)url;
	*objp = NULL;
	return -ENOTSUP;
}

int bench_http_open_packed(struct uf_mm *mm, const char *url, struct uf_object **objp)
{
	return bench_http_open(mm, url, objp);
}
