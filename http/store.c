// SPDX-License-Identifier: MIT
/*
 * store.c - the HTTP store: an object's bytes read with range GETs, its
 * version pinned at open and named in every read, transient errors retried
 * with backoff until a deadline (see include/ufault-http.h).
 *
 * A read is one or more requests (hreq, one per contiguous run) that the
 * I/O thread (io.c) runs concurrently; hs_fetch() sends them again, from
 * where each stopped, while they fail with transient errors and the
 * deadline allows.  Locking: hstore.lock (a leaf) guards the statistics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "internal.h"

#define BACKOFF_FIRST_MS	50
#define BACKOFF_MAX_MS		1000
#define DEADLINE_MAX_MS		86400000u
#define CONNS_MAX		64u

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* Answers                                                             */
/* ------------------------------------------------------------------ */

int hs_check_answer(const struct hstore *st, const struct hreq *r)
{
	const struct hresp *a = &r->resp;

	if (!a->cr_seen)
		return -EPROTO;		/* 206 without a Content-Range */
	if (r->probe)
		return a->cr_total_known ? 0 : -EPROTO;
	if (st->etag[0] && a->etag[0] && strcmp(st->etag, a->etag))
		return -ESTALE;
	if (!st->etag[0] && st->lastmod[0] && a->lastmod[0] && strcmp(st->lastmod, a->lastmod))
		return -ESTALE;
	if (a->cr_total_known && a->cr_total != st->size)
		return -ESTALE;
	if (a->cr_start != r->off + r->done || a->cr_end < a->cr_start)
		return -EPROTO;
	return 0;
}

/* A transfer error worth trying again, and the errno an open reports for
 * it when the deadline passes. */
static int transient_errno(int cres)
{
	switch (cres) {
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return EHOSTUNREACH;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return EIO;
	default:
		return 0;
	}
}

/* An HTTP error status: -errno, or positive EIO for a transient one. */
static int status_errno(long status, bool probe)
{
	switch (status) {
	case 401:
	case 403:
		return -EACCES;
	case 404:
	case 410:
		return probe ? -ENOENT : -ESTALE;	/* the pinned version went */
	case 412:
	case 416:
		return -ESTALE;
	case 200:
		return -EPROTO;				/* Range not honoured */
	case 408:
	case 429:
		return EIO;
	default:
		return status >= 500 && status <= 599 ? EIO : -EIO;
	}
}

/*
 * What the last attempt of @r came to: 0 (done), a positive errno (a
 * transient error: send it again), or -errno.  A failed attempt's cause
 * goes to @cause.
 */
static int classify(const struct hreq *r, char *cause, size_t clen)
{
	int e;

	if (r->err) {
		snprintf(cause, clen, "%s", r->err == -ESTALE ? "the object changed (another version answered)"
			 : strerror(-r->err));
		return r->err;
	}
	if (r->cres == CURLE_WRITE_ERROR && r->resp.status == 200) {
		snprintf(cause, clen, "HTTP 200: the server does not honour Range");
		return -EPROTO;
	}
	if (r->cres != CURLE_OK) {
		e = transient_errno(r->cres);
		snprintf(cause, clen, "%s", curl_easy_strerror((CURLcode)r->cres));
		return e ? e : -EIO;
	}
	if (r->resp.status == 206 || (r->probe && r->resp.status == 416) ||
	    (r->probe && r->resp.status == 200 && r->resp.clen_seen && !r->resp.clen)) {
		if (r->probe || r->done == r->len)
			return 0;
		snprintf(cause, clen, "HTTP 206: the answer ended early");
		return EIO;
	}
	e = status_errno(r->resp.status, r->probe);
	snprintf(cause, clen, "HTTP %ld%s", r->resp.status,
		 e == -ESTALE ? ": the object changed" : "");
	return e;
}

static void note_cause(struct hstore *st, long status, const char *cause)
{
	pthread_mutex_lock(&st->lock);
	st->stats.last_status = (int)status;
	snprintf(st->stats.last_cause, sizeof(st->stats.last_cause), "%s", cause);
	pthread_mutex_unlock(&st->lock);
}

static int failed(struct hstore *st, int err)
{
	pthread_mutex_lock(&st->lock);
	st->stats.failures++;
	st->stats.last_error = err;
	pthread_mutex_unlock(&st->lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Reads                                                               */
/* ------------------------------------------------------------------ */

/*
 * Run the @n requests of @r until each is complete, sending those that
 * meet a transient error again (from where they stopped) with backoff
 * until the deadline.  Return 0, or the first lasting error; at the
 * deadline -EIO (a read) or the transient error's errno (the open's
 * probe).  Reorders @r.
 */
static int hs_fetch(struct hstore *st, struct hreq **r, size_t n)
{
	uint64_t deadline = now_ms() + st->deadline_ms, backoff = BACKOFF_FIRST_MS;
	int last = EIO;

	for (bool first = true; ; first = false) {
		uint64_t t = now_ms();
		size_t i, keep = 0;
		bool progress = false;

		if (t >= deadline)
			return failed(st, r[0]->probe ? -last : -EIO);
		for (i = 0; i < n; i++)
			r[i]->timeout_ms = (long)(deadline - t);
		if (!first) {
			pthread_mutex_lock(&st->lock);
			st->stats.retries += n;
			pthread_mutex_unlock(&st->lock);
		}
		hio_run(st, r, n);
		for (i = 0; i < n; i++) {
			char cause[128];
			int e = classify(r[i], cause, sizeof(cause));

			if (!e)
				continue;
			note_cause(st, r[i]->resp.status, cause);
			if (e < 0)
				return failed(st, e);
			last = e;
			progress |= r[i]->got > 0;
			r[keep++] = r[i];
		}
		if (!keep)
			return 0;
		n = keep;
		if (!progress) {
			t = now_ms();
			sleep_ms(t + backoff < deadline ? backoff : deadline > t ? deadline - t : 0);
			backoff = backoff * 2 < BACKOFF_MAX_MS ? backoff * 2 : BACKOFF_MAX_MS;
		}
	}
}

static ssize_t hs_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct hstore *st = store;
	struct uf_store_iov seg = { buf, len, off };
	struct hreq r = { .seg = &seg, .nseg = 1, .off = off, .len = len };
	struct hreq *rp = &r;
	int ret;

	if (off >= st->size || !len)
		return 0;
	if (len > st->size - off)
		seg.len = r.len = (size_t)(st->size - off);
	ret = hs_fetch(st, &rp, 1);
	return ret ? ret : (ssize_t)r.len;
}

static int iov_cmp(const void *a, const void *b)
{
	const struct uf_store_iov *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* @seg sorted, clipped to the object (the rest zeroed): one request per
 * contiguous run into @r, pointers into @rp.  Returns the runs. */
static size_t make_runs(const struct hstore *st, struct uf_store_iov *seg, size_t n,
			struct hreq *r, struct hreq **rp)
{
	size_t i, nr = 0;

	for (i = 0; i < n; i++) {
		uint64_t end = seg[i].off < st->size ? st->size : seg[i].off;

		if (seg[i].len > end - seg[i].off) {
			memset((char *)seg[i].buf + (end - seg[i].off), 0,
			       seg[i].len - (size_t)(end - seg[i].off));
			seg[i].len = (size_t)(end - seg[i].off);
		}
		if (!seg[i].len)
			continue;
		if (nr && r[nr - 1].off + r[nr - 1].len == seg[i].off) {
			r[nr - 1].nseg++;
			r[nr - 1].len += seg[i].len;
			continue;
		}
		memset(&r[nr], 0, sizeof(r[nr]));
		r[nr].seg = &seg[i];
		r[nr].nseg = 1;
		r[nr].off = seg[i].off;
		r[nr].len = seg[i].len;
		rp[nr] = &r[nr];
		nr++;
	}
	return nr;
}

HS_EXPORT int uf_http_store_readv(void *store, const struct uf_store_iov *iov, size_t n)
{
	struct hstore *st = store;
	struct uf_store_iov *seg;
	struct hreq *r, **rp;
	size_t nr;
	int ret = -ENOMEM;

	if (!st || (!iov && n))
		return -EINVAL;
	if (!n)
		return 0;
	seg = malloc(n * sizeof(*seg));
	r = malloc(n * sizeof(*r));
	rp = malloc(n * sizeof(*rp));
	if (seg && r && rp) {
		memcpy(seg, iov, n * sizeof(*seg));
		qsort(seg, n, sizeof(*seg), iov_cmp);
		nr = make_runs(st, seg, n, r, rp);
		ret = nr ? hs_fetch(st, rp, nr) : 0;
	}
	free(rp);
	free(r);
	free(seg);
	return ret;
}

static int hs_readv(void *store, const struct uf_store_iov *iov, size_t n)
{
	return uf_http_store_readv(store, iov, n);
}

/* ------------------------------------------------------------------ */
/* Open and release                                                    */
/* ------------------------------------------------------------------ */

static void store_free(struct hstore *st)
{
	hio_stop(st);
	curl_slist_free_all(st->hdrs);
	curl_slist_free_all(st->rd_hdrs);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->done_cond);
	free(st->url);
	free(st);
}

/* Objects of uf_http_open(), for uf_http_stats(). */
static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;
struct hobj {
	struct hobj *next;
	struct uf_object *obj;
	struct hstore *st;
};
static struct hobj *objects;
static pthread_once_t objects_once = PTHREAD_ONCE_INIT;

static void objects_init(void)
{
	uf_lockdep_class(&objects_lock, UF_LK_STORE);
}

/* objects_lock, with its lock class (lockorder.h: STORE) */
static void objects_lock_take(void)
{
	pthread_once(&objects_once, objects_init);
	pthread_mutex_lock(&objects_lock);
}

static void hs_release(void *store)
{
	struct hobj **pp, *o;

	objects_lock_take();
	for (pp = &objects; (o = *pp); pp = &o->next)
		if (o->st == store) {
			*pp = o->next;
			free(o);
			break;
		}
	pthread_mutex_unlock(&objects_lock);
	store_free(store);
}

/* Read-only: no ->write, so objects are read-only (-EROFS). */
static const struct uf_store_ops http_ops = {
	.read		= hs_read,
	.release	= hs_release,
};

static bool bad_chars(const char *s, bool space_ok)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || (*s == ' ' && !space_ok))
			return true;
	return false;
}

/* The headers sent with every request, into st->hdrs.  0 or -errno. */
static int build_headers(struct hstore *st, const struct uf_http_opts *o)
{
	const char *bearer = o && o->bearer ? o->bearer : getenv("UFAULT_HTTP_BEARER");
	struct curl_slist *l;
	char *line;

	if (bearer && *bearer) {
		if (bad_chars(bearer, false) || asprintf(&line, "Authorization: Bearer %s", bearer) < 0)
			return bad_chars(bearer, false) ? -EINVAL : -ENOMEM;
		l = curl_slist_append(st->hdrs, line);
		free(line);
		if (!l)
			return -ENOMEM;
		st->hdrs = l;
	}
	for (size_t i = 0; o && o->headers && o->headers[i]; i++) {
		const char *h = o->headers[i];

		if (!strchr(h, ':') || h[0] == ':' || bad_chars(h, true))
			return -EINVAL;
		l = curl_slist_append(st->hdrs, h);
		if (!l)
			return -ENOMEM;
		st->hdrs = l;
	}
	return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_ret;

static void curl_init(void)
{
	curl_init_ret = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* A store for @url, its I/O thread started; no request sent yet. */
static int store_new(const char *url, const struct uf_http_opts *o, struct hstore **stp)
{
	const char *env = getenv("UFAULT_HTTP_DEADLINE_MS");
	struct hstore *st;
	int ret;

	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return -EINVAL;
	if (bad_chars(url, false) || strlen(url) > 16384)
		return -EINVAL;
	if (o && (o->deadline_ms > DEADLINE_MAX_MS || o->connections > CONNS_MAX))
		return -EINVAL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_ret != CURLE_OK)
		return -ENOMEM;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	uf_lockdep_class(&st->lock, UF_LK_STORE);
	pthread_cond_init(&st->done_cond, NULL);
	st->deadline_ms = o && o->deadline_ms ? o->deadline_ms : UF_HTTP_DEADLINE_MS;
	if ((!o || !o->deadline_ms) && env && *env) {
		unsigned long v = strtoul(env, NULL, 10);

		if (v && v <= DEADLINE_MAX_MS)
			st->deadline_ms = (unsigned int)v;
	}
	st->conns = o && o->connections ? o->connections : UF_HTTP_CONNECTIONS;
	st->url = strdup(url);
	ret = st->url ? build_headers(st, o) : -ENOMEM;
	if (!ret)
		ret = hio_start(st);
	if (ret) {
		store_free(st);
		return ret;
	}
	*stp = st;
	return 0;
}

/* The precondition every read sends: the pinned version, in st->rd_hdrs. */
static int pin_version(struct hstore *st)
{
	char line[HS_ETAG_MAX + 32];
	struct curl_slist *h, *l = NULL;

	if (st->etag[0] && strncmp(st->etag, "W/", 2))
		snprintf(line, sizeof(line), "If-Match: %s", st->etag);
	else if (st->lastmod[0])
		snprintf(line, sizeof(line), "If-Unmodified-Since: %s", st->lastmod);
	else
		line[0] = 0;
	for (h = st->hdrs; h; h = h->next) {
		struct curl_slist *n = curl_slist_append(l, h->data);

		if (!n)
			goto nomem;
		l = n;
	}
	if (line[0]) {
		struct curl_slist *n = curl_slist_append(l, line);

		if (!n)
			goto nomem;
		l = n;
	}
	st->rd_hdrs = l;
	return 0;
nomem:
	curl_slist_free_all(l);
	return -ENOMEM;
}

/* GET byte 0: the size, from Content-Range, and the version. */
static int probe(struct hstore *st)
{
	struct hreq r = { .probe = true };
	struct hreq *rp = &r;
	int ret = hs_fetch(st, &rp, 1);

	if (ret)
		return ret;
	if (r.resp.status == 200)
		st->size = 0;		/* an empty object, whole */
	else if (r.resp.cr_seen && r.resp.cr_total_known)
		st->size = r.resp.cr_total;
	else
		return -EPROTO;
	if (st->size > (1ULL << 62))
		return -EFBIG;
	memcpy(st->etag, r.resp.etag, sizeof(st->etag));
	memcpy(st->lastmod, r.resp.lastmod, sizeof(st->lastmod));
	return pin_version(st);
}

HS_EXPORT int uf_http_store_open(const char *url, const struct uf_http_opts *opts,
				 const struct uf_store_ops **opsp, void **storep, uint64_t *sizep)
{
	struct hstore *st;
	int ret;

	if (!url || !opsp || !storep || !sizep)
		return -EINVAL;
	ret = store_new(url, opts, &st);
	if (ret)
		return ret;
	ret = probe(st);
	if (ret) {
		store_free(st);
		return ret;
	}
	*opsp = &http_ops;
	*storep = st;
	*sizep = st->size;
	return 0;
}

HS_EXPORT int uf_http_open(struct uf_mm *mm, const char *url, const struct uf_http_opts *opts,
			   struct uf_object **objp)
{
	const struct uf_store_ops *ops;
	struct hobj *o;
	uint64_t size;
	void *st = NULL;
	int ret;

	if (!mm || !url || !objp)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	ret = uf_http_store_open(url, opts, &ops, &st, &size);
	if (!ret)
		ret = uf_object_create(mm, ops, st, size, objp);
	if (ret) {
		if (st)
			store_free(st);
		free(o);
		return ret;
	}
	uf_object_set_readv(*objp, hs_readv);	/* (cannot fail here) */
	o->obj = *objp;
	o->st = st;
	objects_lock_take();
	o->next = objects;
	objects = o;
	pthread_mutex_unlock(&objects_lock);
	return 0;
}

HS_EXPORT int uf_http_store_stats(void *store, struct uf_http_stats *stats)
{
	struct hstore *st = store;

	if (!st || !stats)
		return -EINVAL;
	pthread_mutex_lock(&st->lock);
	*stats = st->stats;
	pthread_mutex_unlock(&st->lock);
	return 0;
}

HS_EXPORT int uf_http_stats(struct uf_object *obj, struct uf_http_stats *stats)
{
	struct hstore *st = NULL;
	struct hobj *o;

	if (!obj || !stats)
		return -EINVAL;
	objects_lock_take();
	for (o = objects; o; o = o->next)
		if (o->obj == obj)
			st = o->st;
	pthread_mutex_unlock(&objects_lock);
	return st ? uf_http_store_stats(st, stats) : -EINVAL;
}
