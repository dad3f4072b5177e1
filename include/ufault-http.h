/* SPDX-License-Identifier: MIT */
/*
 * ufault-http - read-only ufault objects whose bytes are an object served
 * over HTTP or HTTPS (object storage: S3, GCS, a presigned URL, nginx).
 *
 * A separate library (libufault-http, which links libcurl) so the core
 * keeps no dependency:  cc prog.c $(pkg-config --cflags --libs ufault-http)
 *
 * Pages are read with range GETs ("Range: bytes=A-B", one per contiguous
 * run) over kept-alive connections, many in flight at once.  The object's
 * version is pinned when it is opened (its ETag, or else its Last-Modified
 * and size) and every read asks for that version (If-Match, or
 * If-Unmodified-Since): an object changed on the server reads -ESTALE,
 * never bytes of two versions.
 */
#ifndef UFAULT_HTTP_H
#define UFAULT_HTTP_H

#include <ufault.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UF_HTTP_DEADLINE_MS	10000	/* default uf_http_opts.deadline_ms */
#define UF_HTTP_CONNECTIONS	8	/* default uf_http_opts.connections */

/**
 * struct uf_http_opts - options of uf_http_open(); zero means default.
 * @bearer: a token sent as "Authorization: Bearer TOKEN" with every
 *	request.  NULL: the environment variable UFAULT_HTTP_BEARER, when
 *	set and not empty.  A presigned URL needs nothing here.
 * @headers: NULL, or a NULL-terminated array of "Name: value" header
 *	lines sent with every request (copied at open).
 * @deadline_ms: how long one read (or the open) may retry transient
 *	errors -- a refused or lost connection, a timeout, HTTP 408, 429 or
 *	5xx -- with backoff (50 ms doubling to 1 s) before it fails.  0: the
 *	environment variable UFAULT_HTTP_DEADLINE_MS when set, else
 *	UF_HTTP_DEADLINE_MS (10 s).  At most 86400000.
 * @connections: most connections kept open to the server, and so most
 *	range GETs in flight at once (0: UF_HTTP_CONNECTIONS; at most 64).
 */
struct uf_http_opts {
	const char *bearer;
	const char *const *headers;
	unsigned int deadline_ms;
	unsigned int connections;
};

/**
 * struct uf_http_stats - what a store has done since it was opened.
 * @requests: range GETs sent (each retry is one more).
 * @retries: of those, the ones sent again after a transient error.
 * @connects: connections opened (fewer than @requests: kept alive).
 * @bytes: body bytes received into pages.
 * @failures: reads that failed (the faults they served got SIGBUS).
 * @last_error: the -errno of the last failed read, or 0.
 * @last_status: the HTTP status of the last failed request, or 0 (no
 *	response: see @last_cause).
 * @last_cause: the last failed request's cause in words, or "".
 */
struct uf_http_stats {
	uint64_t requests;
	uint64_t retries;
	uint64_t connects;
	uint64_t bytes;
	uint64_t failures;
	int last_error;
	int last_status;
	char last_cause[128];
};

/**
 * uf_http_open - a read-only object holding the bytes at @url.
 * @mm: the mm whose cache holds the object's pages.
 * @url: http://HOST[:PORT]/PATH[?QUERY] or https://...; sent as given
 *	(a presigned URL works as it is).  Redirects are followed (at most
 *	5, to http or https only).
 * @opts: options, or NULL for the defaults.
 * @objp: on success, the object with one reference.
 *
 * The open sends one range GET for the first byte and takes the object's
 * size from its Content-Range (or, for an empty object, from the 416
 * answer), and its version from ETag, or else Last-Modified.  Every read
 * then names that version (If-Match: ETAG; or If-Unmodified-Since with
 * the size checked).  A read that finds the object changed (HTTP 412, 404,
 * 416, another ETag or size in the answer) fails with -ESTALE, and the
 * access it served gets SIGBUS; it never returns bytes of another version.
 * A read that meets only transient errors until the deadline fails with
 * -EIO, and its access gets SIGBUS.  A working-set prefetch
 * (uf_object_prefetch()) sends its runs concurrently, one range GET per
 * contiguous run (uf_object_set_readv() is set).
 *
 * The store is read-only (no ->write): uf_object_pwrite(),
 * uf_object_truncate(), uf_object_punch_hole() and uf_object_sync() fail
 * with -EROFS; a shared writable mapping is refused with -EACCES by
 * uf_mmap() and uf_mprotect(), as for any read-only object.  A private
 * mapping may be written (copy-on-write), and so may a shared one the
 * program makes writable with mprotect(2): what is written stays in that
 * mapping and reaches neither the cache, nor other mappings, nor the
 * server (uf_msync() of it has nothing to write: 0).
 *
 * Return: 0, or -EINVAL (NULL @mm, @url or @objp; @url not http:// or
 * https://, or holding spaces or control characters; a header line
 * without ':'; @opts out of range), -ENOENT (HTTP 404 or 410), -EACCES
 * (HTTP 401 or 403), -EPROTO (the server ignores Range: an answer 200
 * with the whole object, or no size in its answer), -ECONNREFUSED (no
 * connection until the deadline), -ETIMEDOUT (no answer until the
 * deadline), -EHOSTUNREACH (the host name did not resolve), -EIO (HTTP
 * 5xx until the deadline, another HTTP error, or a TLS failure), -ENOMEM,
 * or an error of uf_object_create().
 */
int uf_http_open(struct uf_mm *mm, const char *url, const struct uf_http_opts *opts,
		 struct uf_object **objp);

/**
 * uf_http_stats - copy the statistics of an object of uf_http_open().
 * @obj: the object (a reference held by the caller).
 * @st: filled on success.
 *
 * Return: 0, or -EINVAL (NULL argument, or @obj not of uf_http_open()).
 */
int uf_http_stats(struct uf_object *obj, struct uf_http_stats *st);

/**
 * uf_http_store_open - the store of uf_http_open() without an object, for
 * a layer that wraps it (a packed snapshot's reader, for example).
 * @url, @opts: as for uf_http_open().
 * @opsp: on success, the store's methods: ->read and ->release only (a
 *	read-only store).
 * @storep: on success, the store, passed to each method.
 * @sizep: on success, the object's size in bytes.
 *
 * The caller owns the store: pass it to uf_object_create(), which calls
 * ->release when the object goes, or call (*opsp)->release(*storep)
 * itself.  ->read and uf_http_store_readv() may be called from any
 * thread, concurrently.
 *
 * Return: as uf_http_open().
 */
int uf_http_store_open(const char *url, const struct uf_http_opts *opts,
		       const struct uf_store_ops **opsp, void **storep, uint64_t *sizep);

/**
 * uf_http_store_readv - read many extents of a store of
 * uf_http_store_open() at once: one range GET per contiguous run of
 * extents, sent concurrently; the readv method for uf_object_set_readv().
 * @store: the store.
 * @iov: @n extents, not overlapping, in any order; bytes past the
 *	object's end read as zero.
 *
 * Return: 0, or -ESTALE (the object changed), -EIO (transient errors
 * until the deadline, or another HTTP error), -EACCES (HTTP 401 or 403:
 * a presigned URL expired), -EPROTO, -ENOMEM, -EINVAL (NULL @store, or
 * NULL @iov with @n not 0).
 */
int uf_http_store_readv(void *store, const struct uf_store_iov *iov, size_t n);

/**
 * uf_http_store_stats - uf_http_stats() for a store of
 * uf_http_store_open().
 * Return: 0, or -EINVAL (NULL argument).
 */
int uf_http_store_stats(void *store, struct uf_http_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* UFAULT_HTTP_H */
