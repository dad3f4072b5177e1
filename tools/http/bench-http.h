/* SPDX-License-Identifier: MIT */
/*
 * ufault-bench --only serve, row serve-restore-http: an nginx of the
 * bench's own on a free 127.0.0.1 port serving a directory, and objects
 * opened from it with uf_http_open() (tools/http/bench-http.c).  Without
 * libcurl, tools/http/no-http.c stands in and the row is skipped.
 */
#ifndef UFAULT_BENCH_HTTP_H
#define UFAULT_BENCH_HTTP_H

#include <stddef.h>
#include <ufault.h>

/* Start nginx serving @dir (its config, pid and logs go there too);
 * "http://127.0.0.1:PORT" into @base.  0, or -errno with the reason in
 * @why.  It dies with this process (PR_SET_PDEATHSIG) if not stopped. */
int bench_http_start(const char *dir, char *base, size_t blen, char *why, size_t wlen);
/* Stop it (by its pid). */
void bench_http_stop(void);
/* uf_http_open(@mm, @url, defaults); -ENOTSUP without libcurl. */
int bench_http_open(struct uf_mm *mm, const char *url, struct uf_object **objp);
/* The packed snapshot at @url served as its original bytes, as
 * ufault-serve does it: uf_http_store_open(), uf_pack_create_readv(). */
int bench_http_open_packed(struct uf_mm *mm, const char *url, struct uf_object **objp);

/* ufault-bench --store http(s)://URL (tools/bench/http-store.c): cold reads
 * of the object at the URL (read-only: nothing is written there) beside a
 * tmpfs copy and one range GET per page.  The options of --store
 * redis://; returns ufault-bench's exit status (2 for --only layout or ws,
 * which write to the store). */
struct bench_redis_opts;
int bench_http_store_main(const struct bench_redis_opts *o);

#endif
