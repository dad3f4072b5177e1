// SPDX-License-Identifier: MIT
/*
 * io.c - the I/O thread of an HTTP store: every range GET of the store runs
 * on its one curl multi handle, whose connection cache keeps connections
 * alive between requests (at most hstore.conns of them, the rest wait
 * their turn in curl), so any number of ufault threads can read at once.
 *
 * A reading thread queues its requests (hio_run()) and wakes the I/O
 * thread with curl_multi_wakeup(); the I/O thread hands them to curl,
 * parses each answer's headers and copies its body into the request's
 * pages, and marks it finished.  Bytes land only once the answer was
 * checked (hs_check_answer(): the status, the version and the range).
 *
 * Locking: hstore.lock (a leaf) guards the queue, stop, each request's
 * finished flag and the statistics.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

/* ------------------------------------------------------------------ */
/* Callbacks (I/O thread)                                              */
/* ------------------------------------------------------------------ */

/* Copy a header's value, trimmed, into @dst. */
static void header_value(char *dst, size_t dlen, const char *v, size_t vlen)
{
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && isspace((unsigned char)v[vlen - 1]))
		vlen--;
	if (vlen >= dlen)
		vlen = dlen - 1;	/* (too long to be a version we pin: differs) */
	memcpy(dst, v, vlen);
	dst[vlen] = 0;
}

/* "bytes A-B/T", "bytes * /T" (no space) or "bytes A-B/ *". */
static void parse_content_range(struct hresp *a, const char *v)
{
	char *end;

	while (*v == ' ')
		v++;
	if (strncasecmp(v, "bytes ", 6))
		return;
	v += 6;
	if (*v == '*') {
		v++;
	} else {
		a->cr_start = strtoull(v, &end, 10);
		if (end == v || *end != '-')
			return;
		v = end + 1;
		a->cr_end = strtoull(v, &end, 10);
		if (end == v)
			return;
		v = end;
	}
	if (*v++ != '/')
		return;
	a->cr_seen = true;
	if (*v != '*') {
		a->cr_total = strtoull(v, &end, 10);
		a->cr_total_known = end != v;
	}
}

static size_t header_cb(char *line, size_t size, size_t nitems, void *arg)
{
	struct hreq *r = arg;
	struct hresp *a = &r->resp;
	size_t n = size * nitems;
	char val[HS_ETAG_MAX];
	const char *colon = memchr(line, ':', n);

	if (n > 5 && !strncmp(line, "HTTP/", 5)) {
		const char *sp = memchr(line, ' ', n);

		memset(a, 0, sizeof(*a));
		if (sp)
			a->status = strtol(sp + 1, NULL, 10);
		return n;
	}
	if (!colon)
		return n;
	header_value(val, sizeof(val), colon + 1, n - (size_t)(colon + 1 - line));
	if ((size_t)(colon - line) == 4 && !strncasecmp(line, "etag", 4))
		memcpy(a->etag, val, sizeof(a->etag));
	else if ((size_t)(colon - line) == 13 && !strncasecmp(line, "last-modified", 13))
		header_value(a->lastmod, sizeof(a->lastmod), colon + 1, n - (size_t)(colon + 1 - line));
	else if ((size_t)(colon - line) == 13 && !strncasecmp(line, "content-range", 13))
		parse_content_range(a, val);
	else if ((size_t)(colon - line) == 14 && !strncasecmp(line, "content-length", 14)) {
		a->clen = strtoull(val, NULL, 10);
		a->clen_seen = true;
	}
	return n;
}

/* Copy @n body bytes into the request's pages, in order. */
static void deliver(struct hreq *r, const char *p, size_t n)
{
	while (n) {
		const struct uf_store_iov *s = &r->seg[r->seg_i];
		size_t k = s->len - r->seg_off;

		if (k > n)
			k = n;
		memcpy((char *)s->buf + r->seg_off, p, k);
		p += k;
		n -= k;
		r->seg_off += k;
		if (r->seg_off == s->len) {
			r->seg_i++;
			r->seg_off = 0;
		}
	}
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct hreq *r = arg;
	size_t n = size * nmemb;

	if (r->resp.status != 206) {
		/* an error page is dropped; a whole object (200) is not read */
		return r->resp.status == 200 ? 0 : n;
	}
	if (!r->body_ok) {
		r->err = hs_check_answer(r->st, r);
		if (r->err)
			return 0;
		r->body_ok = true;
	}
	if (r->probe)
		return n;
	if (n > r->len - r->done) {
		r->err = -EPROTO;	/* more than asked for */
		return 0;
	}
	deliver(r, p, n);
	r->done += n;
	r->got += n;
	return n;
}

/* ------------------------------------------------------------------ */
/* The I/O thread                                                      */
/* ------------------------------------------------------------------ */

static CURL *easy_get(struct hstore *st)
{
	CURL *e;

	if (st->nidle)
		return st->idle[--st->nidle];
	e = curl_easy_init();
	if (!e)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, st->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	return e;
}

/* Hand @r to curl; 0, or -ENOMEM (then @r is finished with that error). */
static int start_one(struct hstore *st, struct hreq *r)
{
	char range[64];
	CURL *e = easy_get(st);

	if (!e)
		return -ENOMEM;
	if (r->probe)
		snprintf(range, sizeof(range), "0-0");
	else
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64,
			 r->off + r->done, r->off + r->len - 1);
	curl_easy_setopt(e, CURLOPT_RANGE, range);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->probe ? st->hdrs : st->rd_hdrs);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
	if (curl_multi_add_handle(st->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		return -ENOMEM;
	}
	return 0;
}

static void finish(struct hstore *st, struct hreq *r)
{
	pthread_mutex_lock(&st->lock);
	r->finished = true;
	st->stats.requests++;
	st->stats.connects += (uint64_t)r->connects;
	st->stats.bytes += r->got;
	pthread_cond_broadcast(&st->done_cond);
	pthread_mutex_unlock(&st->lock);
}

/* Give curl what was queued since the last turn. */
static void take_queue(struct hstore *st)
{
	struct hreq *q, *next, *fifo = NULL;

	pthread_mutex_lock(&st->lock);
	q = st->queue;
	st->queue = NULL;
	pthread_mutex_unlock(&st->lock);
	for (; q; q = next) {		/* the queue is newest first */
		next = q->next;
		q->next = fifo;
		fifo = q;
	}
	for (q = fifo; q; q = next) {
		next = q->next;
		if (start_one(st, q)) {
			q->err = -ENOMEM;
			finish(st, q);
		}
	}
}

/* Collect the transfers curl has completed. */
static void reap(struct hstore *st)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(st->multi, &left))) {
		CURL *e = m->easy_handle;
		struct hreq *r = NULL;
		long nc = 0;

		if (m->msg != CURLMSG_DONE)
			continue;
		r = NULL;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
		r->cres = (int)m->data.result;
		curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &nc);
		r->connects = nc;
		curl_multi_remove_handle(st->multi, e);
		if (st->nidle < st->conns * 4)
			st->idle[st->nidle++] = e;
		else
			curl_easy_cleanup(e);
		finish(st, r);
	}
}

static void *io_thread(void *arg)
{
	struct hstore *st = arg;
	int running = 0;

	for (;;) {
		bool stop;

		pthread_mutex_lock(&st->lock);
		stop = st->stop;
		pthread_mutex_unlock(&st->lock);
		if (stop && !running)
			break;
		take_queue(st);
		curl_multi_perform(st->multi, &running);
		reap(st);
		curl_multi_poll(st->multi, NULL, 0, 1000, NULL);
	}
	return NULL;
}

int hio_start(struct hstore *st)
{
	int ret;

	st->idle = calloc((size_t)st->conns * 4, sizeof(*st->idle));
	st->multi = curl_multi_init();
	if (!st->idle || !st->multi)
		return -ENOMEM;
	curl_multi_setopt(st->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)st->conns);
	curl_multi_setopt(st->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)st->conns);
	curl_multi_setopt(st->multi, CURLMOPT_MAXCONNECTS, (long)st->conns);
	ret = -pthread_create(&st->thread, NULL, io_thread, st);
	if (ret)
		return ret;
	st->running = true;
	return 0;
}

void hio_stop(struct hstore *st)
{
	if (st->running) {
		pthread_mutex_lock(&st->lock);
		st->stop = true;
		pthread_mutex_unlock(&st->lock);
		curl_multi_wakeup(st->multi);
		pthread_join(st->thread, NULL);
		st->running = false;
	}
	while (st->nidle)
		curl_easy_cleanup(st->idle[--st->nidle]);
	if (st->multi)
		curl_multi_cleanup(st->multi);
	st->multi = NULL;
	free(st->idle);
	st->idle = NULL;
}

void hio_run(struct hstore *st, struct hreq **r, size_t n)
{
	size_t i;

	pthread_mutex_lock(&st->lock);
	for (i = 0; i < n; i++) {
		r[i]->st = st;
		r[i]->finished = false;
		r[i]->body_ok = false;
		r[i]->cres = CURLE_OK;
		r[i]->err = 0;
		r[i]->connects = 0;
		r[i]->got = 0;
		memset(&r[i]->resp, 0, sizeof(r[i]->resp));
		r[i]->next = st->queue;
		st->queue = r[i];
	}
	pthread_mutex_unlock(&st->lock);
	curl_multi_wakeup(st->multi);
	pthread_mutex_lock(&st->lock);
	for (i = 0; i < n; i++)
		while (!r[i]->finished)
			pthread_cond_wait(&st->done_cond, &st->lock);
	pthread_mutex_unlock(&st->lock);
}
