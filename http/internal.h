/* SPDX-License-Identifier: MIT */
/*
 * libufault-http internals: the I/O thread that runs every range GET of a
 * store on one curl multi handle (io.c), and the store with its version
 * pinning, retries and open (store.c).
 *
 * Lock order: hstore.lock is a leaf (no other lock is taken under it, and
 * no curl call is made under it except curl_multi_wakeup()).
 */
#ifndef UF_HTTP_INTERNAL_H
#define UF_HTTP_INTERNAL_H

#include "../src/lib/lockdep.h"	/* the lock order: src/lib/lockorder.h */

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ufault.h>
#include <ufault-http.h>

#define HS_EXPORT	__attribute__((visibility("default")))

#define HS_ETAG_MAX	256
#define HS_DATE_MAX	64

/* What one answer said (reset at each status line: a redirect's answer
 * comes before the last one). */
struct hresp {
	long status;
	char etag[HS_ETAG_MAX];
	char lastmod[HS_DATE_MAX];
	bool cr_seen;		/* a Content-Range was seen */
	bool cr_total_known;	/* T is a number, not '*' */
	uint64_t cr_start, cr_end, cr_total;
	bool clen_seen;
	uint64_t clen;
};

/*
 * One range GET: a contiguous run [off, off + len) whose bytes go into
 * @seg (extents in offset order that cover the run exactly).  Filled by
 * the I/O thread; the submitting thread waits for it in hio_run().
 */
struct hreq {
	struct hreq *next;		/* in hstore.queue */
	struct hstore *st;
	const struct uf_store_iov *seg;
	size_t nseg;
	uint64_t off;
	size_t len;
	bool probe;			/* the open's GET of byte 0: no version yet */
	/* progress, kept across attempts */
	size_t done;			/* bytes delivered into @seg */
	size_t seg_i, seg_off;		/* where the next byte goes */
	/* one attempt */
	long timeout_ms;
	bool finished;
	bool body_ok;			/* the answer was checked: bytes may land */
	int cres;			/* its CURLcode */
	int err;			/* set when a callback stopped it: -errno */
	long connects;			/* connections it opened */
	size_t got;			/* bytes it delivered */
	struct hresp resp;
};

struct hstore {
	char *url;
	struct curl_slist *hdrs;	/* authentication and the caller's */
	struct curl_slist *rd_hdrs;	/* those and the version's precondition */
	uint64_t size;
	char etag[HS_ETAG_MAX];		/* "": none pinned (or a weak one) */
	char lastmod[HS_DATE_MAX];
	unsigned int deadline_ms;
	unsigned int conns;

	/* the I/O thread (io.c) */
	pthread_t thread;
	bool running;
	CURLM *multi;
	CURL **idle;			/* easy handles not in use (I/O thread) */
	size_t nidle;

	pthread_mutex_t lock;		/* queue, stop, finished, stats */
	pthread_cond_t done_cond;
	struct hreq *queue;		/* submitted, not yet given to curl */
	bool stop;
	struct uf_http_stats stats;
};

/* io.c */
int hio_start(struct hstore *st);
void hio_stop(struct hstore *st);
/* One attempt of each of @n requests, concurrently; returns when all have
 * finished (see hreq's attempt fields). */
void hio_run(struct hstore *st, struct hreq **r, size_t n);

/* store.c: may the body of @r's answer land in its pages?  0, or -errno
 * (the version or the range is not the one asked for).  I/O thread. */
int hs_check_answer(const struct hstore *st, const struct hreq *r);

#endif /* UF_HTTP_INTERNAL_H */
