// SPDX-License-Identifier: MIT
/*
 * ufault-bench --store URL - objects in a Redis Cluster, measured beside
 * the file store and beside raw hiredis in one run.
 *
 * Two parts:
 *
 *   store    cold sequential and cold random reads (one 8-byte load per
 *            page, checked) from an object opened with uf_redis_open(),
 *            from the same bytes in a file on tmpfs through ufault, and
 *            the references: one GET per page (hiredis, the slot's node,
 *            one round trip each) and MGET of 512 per-page keys under one
 *            hash tag.  Goals (issue 11): cold sequential <= 3 us per page
 *            and >= 15x cheaper than one GET per page; cold random <= 1.5x
 *            one GET.
 *   layout   what each way of laying pages out in the cluster costs per
 *            4 KiB page, read and write (the write rows end their batch
 *            with WAIT for one replica in the same pipeline), and the
 *            server memory per page.  Raw hiredis, no ufault.
 *
 * The raw client here is the smallest that measures: CRC16 slots with
 * hash tags, the slot map from CLUSTER SLOTS, one connection per master;
 * a MOVED or ASK is an error (the cluster is not expected to change under
 * a benchmark).  Replies come from hiredis's own allocator; each node's
 * read buffer is kept (maxbuf 0) so multi-megabyte replies reuse it.
 */
#define _GNU_SOURCE
#include "bench-redis.h"
#include "../bench/bare.h"

#include <ufault.h>
#include <ufault-redis.h>

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PG		((size_t)UF_PAGE_SIZE)
#define NSLOTS		16384
#define MAXNODES	64
#define SEED		0x7566617574726473ULL
#define EXIT_MISS	1
#define EXIT_ERR	2
#define EXIT_SKIP	77

/* ------------------------------------------------------------------ */
/* A raw cluster client                                                */
/* ------------------------------------------------------------------ */

struct rnode {
	char host[64];
	int port;
	redisContext *c;
	int replicas;		/* connected replicas (masters) */
};

struct rcluster {
	char user[128], pass[256];
	char seeds[16][80];
	int nseeds;
	struct rnode node[MAXNODES];
	int nnodes;
	int16_t slot_node[NSLOTS];	/* -1: no master */
	int wait_replicas;	/* for WAIT: 1, or 0 where a master has none */
	char err[256];
};

static uint16_t crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int j;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (j = 0; j < 8; j++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

/* The cluster's key slot: CRC16 of the {hash tag} when there is a
 * non-empty one, else of the whole key. */
static unsigned key_slot(const char *key, size_t len)
{
	const char *o = memchr(key, '{', len), *c;

	if (o) {
		c = memchr(o + 1, '}', len - (size_t)(o + 1 - key));
		if (c && c > o + 1)
			return crc16(o + 1, (size_t)(c - o - 1)) % NSLOTS;
	}
	return crc16(key, len) % NSLOTS;
}

/* Seeds and credentials of a redis:// URL; the password may come from
 * UFAULT_REDIS_PASSWORD.  The object name and options are not needed here. */
static int parse_url(struct rcluster *rc, const char *url)
{
	const char *p, *end, *at;
	char hosts[1024];
	char *tok, *save;
	const char *env;

	if (strncmp(url, "redis://", 8))
		return -EINVAL;
	p = url + 8;
	end = p + strcspn(p, "/?");
	at = memrchr(p, '@', (size_t)(end - p));
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ul = colon ? (size_t)(colon - p) : (size_t)(at - p);

		if (ul >= sizeof(rc->user))
			return -EINVAL;
		memcpy(rc->user, p, ul);
		rc->user[ul] = 0;
		if (colon) {
			size_t pl = (size_t)(at - colon - 1);

			if (pl >= sizeof(rc->pass))
				return -EINVAL;
			memcpy(rc->pass, colon + 1, pl);
			rc->pass[pl] = 0;
		}
		p = at + 1;
	}
	if (!rc->pass[0] && (env = getenv("UFAULT_REDIS_PASSWORD")))
		snprintf(rc->pass, sizeof(rc->pass), "%s", env);
	if ((size_t)(end - p) >= sizeof(hosts) || end == p)
		return -EINVAL;
	memcpy(hosts, p, (size_t)(end - p));
	hosts[end - p] = 0;
	for (tok = strtok_r(hosts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (rc->nseeds == 16 || !strchr(tok, ':') || strlen(tok) >= sizeof(rc->seeds[0]))
			return -EINVAL;
		snprintf(rc->seeds[rc->nseeds++], sizeof(rc->seeds[0]), "%s", tok);
	}
	return rc->nseeds ? 0 : -EINVAL;
}

static redisReply *cmd(struct rcluster *rc, redisContext *c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static redisReply *cmd(struct rcluster *rc, redisContext *c, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!r)
		snprintf(rc->err, sizeof(rc->err), "%s", c->errstr);
	else if (r->type == REDIS_REPLY_ERROR) {
		snprintf(rc->err, sizeof(rc->err), "%s", r->str);
		freeReplyObject(r);
		r = NULL;
	}
	return r;
}

static redisContext *node_connect(struct rcluster *rc, const char *host, int port)
{
	struct timeval tv = { .tv_sec = 5 };
	redisContext *c = redisConnectWithTimeout(host, port, tv);
	redisReply *r;

	if (!c || c->err) {
		snprintf(rc->err, sizeof(rc->err), "%s:%d: %s", host, port,
			 c ? c->errstr : "out of memory");
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	c->reader->maxbuf = 0;	/* keep the read buffer: big replies reuse it */
	if (rc->pass[0]) {
		r = rc->user[0] ? cmd(rc, c, "AUTH %s %s", rc->user, rc->pass)
				: cmd(rc, c, "AUTH %s", rc->pass);
		if (!r) {
			redisFree(c);
			return NULL;
		}
		freeReplyObject(r);
	}
	return c;
}

static int node_index(struct rcluster *rc, const char *host, int port)
{
	int i;

	for (i = 0; i < rc->nnodes; i++)
		if (rc->node[i].port == port && !strcmp(rc->node[i].host, host))
			return i;
	if (rc->nnodes == MAXNODES)
		return -1;
	snprintf(rc->node[i].host, sizeof(rc->node[i].host), "%s", host);
	rc->node[i].port = port;
	return rc->nnodes++;
}

static void rc_close(struct rcluster *rc)
{
	int i;

	for (i = 0; i < rc->nnodes; i++)
		if (rc->node[i].c)
			redisFree(rc->node[i].c);
	rc->nnodes = 0;
}

/* Connect to the first seed that answers, read the slot map, connect to
 * every master and count its replicas. */
static int rc_open(struct rcluster *rc, const char *url)
{
	redisContext *seed = NULL;
	redisReply *r = NULL;
	int i, ret;
	size_t k;

	memset(rc, 0, sizeof(*rc));
	memset(rc->slot_node, 0xff, sizeof(rc->slot_node));
	ret = parse_url(rc, url);
	if (ret) {
		snprintf(rc->err, sizeof(rc->err), "bad URL %s", url);
		return ret;
	}
	for (i = 0; i < rc->nseeds && !seed; i++) {
		char host[80], *colon;

		snprintf(host, sizeof(host), "%s", rc->seeds[i]);
		colon = strrchr(host, ':');
		*colon = 0;
		seed = node_connect(rc, host, atoi(colon + 1));
	}
	if (!seed)
		return -EHOSTUNREACH;
	r = cmd(rc, seed, "CLUSTER SLOTS");
	redisFree(seed);
	if (!r || r->type != REDIS_REPLY_ARRAY)
		goto proto;
	for (k = 0; k < r->elements; k++) {
		redisReply *e = r->element[k], *m;
		long long s;
		int n;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
			goto proto;
		m = e->element[2];
		if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
		    m->element[0]->type != REDIS_REPLY_STRING)
			goto proto;
		n = node_index(rc, m->element[0]->str[0] ? m->element[0]->str : "127.0.0.1",
			       (int)m->element[1]->integer);
		if (n < 0)
			goto proto;
		for (s = e->element[0]->integer; s <= e->element[1]->integer && s < NSLOTS; s++)
			rc->slot_node[s] = (int16_t)n;
	}
	freeReplyObject(r);
	r = NULL;
	rc->wait_replicas = 1;
	for (i = 0; i < rc->nnodes; i++) {
		struct rnode *nd = &rc->node[i];
		const char *cs;

		nd->c = node_connect(rc, nd->host, nd->port);
		if (!nd->c) {
			rc_close(rc);
			return -EHOSTUNREACH;
		}
		r = cmd(rc, nd->c, "INFO replication");
		if (!r)
			goto proto;
		cs = r->type == REDIS_REPLY_STRING ? strstr(r->str, "connected_slaves:") : NULL;
		nd->replicas = cs ? atoi(cs + 17) : 0;
		if (!nd->replicas)
			rc->wait_replicas = 0;
		freeReplyObject(r);
		r = NULL;
	}
	for (k = 0; k < NSLOTS; k++)
		if (rc->slot_node[k] < 0) {
			snprintf(rc->err, sizeof(rc->err), "slot %zu has no master", k);
			rc_close(rc);
			return -EIO;
		}
	return 0;
proto:
	if (r)
		freeReplyObject(r);
	if (!rc->err[0])
		snprintf(rc->err, sizeof(rc->err), "unexpected CLUSTER SLOTS / INFO reply");
	rc_close(rc);
	return -EPROTO;
}

static redisContext *rc_node(struct rcluster *rc, const char *key, size_t len)
{
	return rc->node[rc->slot_node[key_slot(key, len)]].c;
}

/*
 * The next reply on @c, read 256 KiB at a time into a kept buffer:
 * redisGetReply() reads 16 KiB at a time, and a 2 MiB reply in 16 KiB
 * reads costs several times as much here (a system call costs 1.5-3 us on
 * this VM).  The store's client reads its replies the same way.
 */
#define RAW_RBUF	(256 * 1024)

static int get_reply(redisContext *c, redisReply **rp)
{
	static char *buf;	/* (one thread reads replies at a time: this one, or
				 * the minimal replay's loop while it waits) */
	void *r = NULL;
	int done = 0;

	if (!buf && !(buf = malloc(RAW_RBUF)))
		return REDIS_ERR;
	while (!done)	/* what is still to send */
		if (redisBufferWrite(c, &done) != REDIS_OK)
			return REDIS_ERR;
	for (;;) {
		ssize_t n;

		if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
			return REDIS_ERR;
		if (r) {
			*rp = r;
			return REDIS_OK;
		}
		n = read(c->fd, buf, RAW_RBUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return REDIS_ERR;
		if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
			return REDIS_ERR;
	}
}

/* Read @n replies from @c; an error reply, a MOVED, or a WAIT that saw
 * fewer replicas than asked is an error.  *total gets the string bytes. */
static int replies(struct rcluster *rc, redisContext *c, int n, size_t *total)
{
	int i, ret = 0;

	for (i = 0; i < n; i++) {
		redisReply *r;
		size_t k;

		if (get_reply(c, &r) != REDIS_OK) {
			snprintf(rc->err, sizeof(rc->err), "%s", c->errstr);
			return -EIO;
		}
		if (r->type == REDIS_REPLY_ERROR && !ret) {
			snprintf(rc->err, sizeof(rc->err), "%s", r->str);
			ret = -EIO;
		}
		if (total && r->type == REDIS_REPLY_STRING)
			*total += r->len;
		if (total && r->type == REDIS_REPLY_ARRAY)
			for (k = 0; k < r->elements; k++)
				if (r->element[k]->type == REDIS_REPLY_STRING)
					*total += r->element[k]->len;
		freeReplyObject(r);
	}
	return ret;
}

/* An argv that is built again for every command, never reallocated. */
struct argv {
	const char **v;
	size_t *len;
	char *keys;		/* key text, KEYLEN bytes each */
	int n, cap;
};
#define KEYLEN	64

static int argv_init(struct argv *a, int cap)
{
	a->cap = cap;
	a->v = calloc((size_t)cap, sizeof(*a->v));
	a->len = calloc((size_t)cap, sizeof(*a->len));
	a->keys = calloc((size_t)cap, KEYLEN);
	return a->v && a->len && a->keys ? 0 : -ENOMEM;
}

static void argv_free(struct argv *a)
{
	free(a->v);
	free(a->len);
	free(a->keys);
}

static void arg(struct argv *a, const void *p, size_t len)
{
	a->v[a->n] = p;
	a->len[a->n++] = len;
}

static void arg_str(struct argv *a, const char *s)
{
	arg(a, s, strlen(s));
}

/* A key built in the argv's own key space, slot @i. */
static const char *arg_key(struct argv *a, int i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static const char *arg_key(struct argv *a, int i, const char *fmt, ...)
{
	char *k = a->keys + (size_t)i * KEYLEN;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(k, KEYLEN, fmt, ap);
	va_end(ap);
	arg(a, k, (size_t)n);
	return k;
}

/* @id's time in ns: CLOCK_MONOTONIC (now_ns()), or a CPU clock
 * (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID). */
static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static double spread(const double *sorted, unsigned n)
{
	return (sorted[n - 1] - sorted[0]) / sorted[n / 2];
}

/* ------------------------------------------------------------------ */
/* Layout                                                              */
/* ------------------------------------------------------------------ */

/*
 * Key names, all under "ufb:PID:" so that runs never meet:
 *   page keys     ufb:PID:p:{E}:I    page I of extent E of EXT pages (the
 *                                    extent's hash tag puts it on one node)
 *   extent values ufb:PID:x:{E}      EXT pages in one string
 * The data is NPAGES pages of random bytes; every layout is written by
 * its own write rows first, then read back by the read rows.
 */
struct layout {
	struct rcluster *rc;
	size_t npages;		/* pages per batched row */
	size_t nsingle;		/* pages per one-round-trip-per-page row */
	unsigned char *data;	/* npages pages, reused */
	struct argv a;
	int pid;
	char wait_n[8];
};

enum lkind { L_READ, L_WRITE };

struct lrow {
	const char *name;
	enum lkind kind;
	int (*run)(struct layout *l, const struct lrow *row, size_t *pages);
	size_t ext;		/* pages per extent (hash tag / value) */
	size_t win;		/* GETRANGE: pages per read */
	bool wait;		/* writes: WAIT in the same pipeline */
	const char *what;
};

/* Page keys are grouped in extents of @ext pages for MGET/MSET; the GET
 * and SET rows use the 512-page grouping's keys (one page each). */
static const char *page_key(struct layout *l, int slot, size_t ext, size_t p)
{
	return arg_key(&l->a, slot, "ufb:%d:p%zu:{%zu/%zu}:%zu", l->pid, ext, ext, p / ext,
		       p % ext);
}

static int append(struct layout *l, redisContext *c)
{
	if (redisAppendCommandArgv(c, l->a.n, l->a.v, l->a.len) != REDIS_OK) {
		snprintf(l->rc->err, sizeof(l->rc->err), "%s", c->errstr);
		return -EIO;
	}
	l->a.n = 0;
	return 0;
}

static int append_wait(struct layout *l, redisContext *c)
{
	arg_str(&l->a, "WAIT");
	arg_str(&l->a, l->wait_n);
	arg_str(&l->a, "5000");
	return append(l, c);
}

/* One page per round trip: GET, or SET (+ WAIT). */
static int l_single(struct layout *l, const struct lrow *row, size_t *pages)
{
	uint64_t rs = SEED;
	size_t i;
	int ret = 0;

	for (i = 0; i < l->nsingle && !ret; i++) {
		size_t p = splitmix64(&rs) % l->npages;
		const char *k;
		redisContext *c;

		l->a.n = 0;
		arg_str(&l->a, row->kind == L_READ ? "GET" : "SET");
		k = page_key(l, 0, 512, p);
		c = rc_node(l->rc, k, strlen(k));
		if (row->kind == L_WRITE)
			arg(&l->a, l->data + p * PG, PG);
		ret = append(l, c);
		if (!ret && row->wait)
			ret = append_wait(l, c);
		if (!ret)
			ret = replies(l->rc, c, 1 + row->wait, NULL);
	}
	*pages = l->nsingle;
	return ret;
}

/* MGET / MSET of one extent's page keys, or as many pipelined GET / SET. */
static int l_multi(struct layout *l, const struct lrow *row, size_t *pages, bool pipelined)
{
	size_t e, i, ext = row->ext, got = 0;
	int ret = 0;

	for (e = 0; e < l->npages / ext && !ret; e++) {
		redisContext *c = NULL;
		int ncmd = 0;

		l->a.n = 0;
		if (!pipelined)
			arg_str(&l->a, row->kind == L_READ ? "MGET" : "MSET");
		for (i = 0; i < ext && !ret; i++) {
			size_t p = e * ext + i;
			const char *k;

			if (pipelined)
				arg_str(&l->a, row->kind == L_READ ? "GET" : "SET");
			k = page_key(l, (int)i, ext, p);
			if (!c)
				c = rc_node(l->rc, k, strlen(k));
			if (row->kind == L_WRITE)
				arg(&l->a, l->data + p * PG, PG);
			if (pipelined) {
				ret = append(l, c);
				ncmd++;
			}
		}
		if (!ret && !pipelined) {
			ret = append(l, c);
			ncmd++;
		}
		if (!ret && row->wait) {
			ret = append_wait(l, c);
			ncmd++;
		}
		if (!ret)
			ret = replies(l->rc, c, ncmd, &got);
	}
	*pages = l->npages / ext * ext;
	if (!ret && row->kind == L_READ && got != *pages * PG) {
		snprintf(l->rc->err, sizeof(l->rc->err), "read %zu bytes, expected %zu", got,
			 *pages * PG);
		ret = -EIO;
	}
	return ret;
}

static int l_mget(struct layout *l, const struct lrow *row, size_t *pages)
{
	return l_multi(l, row, pages, false);
}

static int l_pipe(struct layout *l, const struct lrow *row, size_t *pages)
{
	return l_multi(l, row, pages, true);
}

/* Extent values: SET / GET of the whole value, or SETRANGE / GETRANGE of
 * @win pages of it (GETRANGE at a random window: random reads). */
static int l_extent(struct layout *l, const struct lrow *row, size_t *pages)
{
	size_t ext = row->ext, nval = l->npages / ext, e, w, got = 0, want = 0;
	uint64_t rs = SEED;
	char off[32], end[32];
	int ret = 0;

	*pages = 0;
	for (e = 0; e < nval && !ret; e++) {
		redisContext *c;
		const char *k;
		int ncmd = 0;

		l->a.n = 0;
		if (!row->win) {
			arg_str(&l->a, row->kind == L_READ ? "GET" : "SET");
			k = arg_key(&l->a, 0, "ufb:%d:x%zu:{%zu/%zu}", l->pid, ext, ext, e);
			c = rc_node(l->rc, k, strlen(k));
			if (row->kind == L_WRITE)
				arg(&l->a, l->data + e * ext * PG, ext * PG);
			ret = append(l, c);
			ncmd = 1;
			*pages += ext;
		} else if (row->kind == L_WRITE) {
			/* a whole value, window by window, in one pipeline */
			k = arg_key(&l->a, 0, "ufb:%d:x%zu:{%zu/%zu}", l->pid, ext, ext, e);
			c = rc_node(l->rc, k, strlen(k));
			l->a.n = 0;
			for (w = 0; w < ext && !ret; w += row->win) {
				snprintf(off, sizeof(off), "%zu", w * PG);
				arg_str(&l->a, "SETRANGE");
				arg(&l->a, l->a.keys, strlen(l->a.keys));
				arg_str(&l->a, off);
				arg(&l->a, l->data + (e * ext + w) * PG, row->win * PG);
				ret = append(l, c);
				ncmd++;
			}
			*pages += ext;
		} else {
			/* one window of a random value per round trip */
			size_t v = splitmix64(&rs) % nval;

			w = splitmix64(&rs) % (ext / row->win) * row->win;
			arg_str(&l->a, "GETRANGE");
			k = arg_key(&l->a, 0, "ufb:%d:x%zu:{%zu/%zu}", l->pid, ext, ext, v);
			c = rc_node(l->rc, k, strlen(k));
			snprintf(off, sizeof(off), "%zu", w * PG);
			snprintf(end, sizeof(end), "%zu", (w + row->win) * PG - 1);
			arg_str(&l->a, off);
			arg_str(&l->a, end);
			ret = append(l, c);
			ncmd = 1;
			*pages += row->win;
		}
		if (!ret && row->wait) {
			ret = append_wait(l, c);
			ncmd++;
		}
		if (!ret)
			ret = replies(l->rc, c, ncmd, &got);
	}
	want = row->kind == L_READ ? *pages * PG : 0;
	if (!ret && got != want) {
		snprintf(l->rc->err, sizeof(l->rc->err), "read %zu bytes, expected %zu", got, want);
		ret = -EIO;
	}
	return ret;
}

/* Hashes of @ext pages (field = page index in the extent): HSET of @win
 * fields per command, pipelined over the extent, or HMGET of @win fields
 * per round trip (sequential; one field: HGET of a random page). */
static int l_hash(struct layout *l, const struct lrow *row, size_t *pages)
{
	size_t ext = row->ext, nval = l->npages / ext, e, w, i, got = 0;
	uint64_t rs = SEED;
	char fld[512][8];
	int ret = 0;

	for (i = 0; i < ext && i < 512; i++)
		snprintf(fld[i], sizeof(fld[i]), "%zu", i);
	*pages = 0;
	for (e = 0; e < nval && !ret; e++) {
		size_t v = e, base = 0;
		redisContext *c;
		const char *k;
		int ncmd = 0;

		if (row->kind == L_READ && row->win == 1) {
			v = splitmix64(&rs) % nval;
			base = splitmix64(&rs) % ext;
		}
		l->a.n = 0;
		k = arg_key(&l->a, 0, "ufb:%d:h%zu:{%zu/%zu}", l->pid, ext, ext, v);
		c = rc_node(l->rc, k, strlen(k));
		for (w = 0; w < ext && !ret; w += row->win) {
			l->a.n = 0;
			arg_str(&l->a, row->kind == L_WRITE ? "HSET" : row->win == 1 ? "HGET" : "HMGET");
			arg(&l->a, l->a.keys, strlen(l->a.keys));
			for (i = 0; i < row->win; i++) {
				arg_str(&l->a, fld[base + w + i]);
				if (row->kind == L_WRITE)
					arg(&l->a, l->data + (v * ext + w + i) * PG, PG);
			}
			ret = append(l, c);
			ncmd++;
			*pages += row->win;
			if (row->kind == L_READ && row->win == 1)
				break;
		}
		if (!ret && row->wait) {
			ret = append_wait(l, c);
			ncmd++;
		}
		if (!ret)
			ret = replies(l->rc, c, ncmd, &got);
	}
	if (!ret && row->kind == L_READ && got != *pages * PG) {
		snprintf(l->rc->err, sizeof(l->rc->err), "read %zu bytes, expected %zu", got,
			 *pages * PG);
		ret = -EIO;
	}
	return ret;
}

/* Writes first: each layout's read rows read what its write rows wrote. */
static const struct lrow lrows[] = {
	{ "set", L_WRITE, l_single, 1, 0, true, "SET one page + WAIT (a one-page sync)" },
	{ "set-pipe-16", L_WRITE, l_pipe, 16, 0, true, "16 pipelined SETs, one hash tag, + WAIT" },
	{ "set-pipe-512", L_WRITE, l_pipe, 512, 0, true, "512 pipelined SETs, one hash tag, + WAIT" },
	{ "mset-16", L_WRITE, l_mget, 16, 0, true, "MSET of 16 page keys, one hash tag, + WAIT" },
	{ "mset-512", L_WRITE, l_mget, 512, 0, true, "MSET of 512 page keys, one hash tag, + WAIT" },
	{ "mset-512-nowait", L_WRITE, l_mget, 512, 0, false, "MSET of 512 page keys, no WAIT" },
	{ "set-64k", L_WRITE, l_extent, 16, 0, true, "SET of a 64 KiB extent value + WAIT" },
	{ "set-256k", L_WRITE, l_extent, 64, 0, true, "SET of a 256 KiB extent value + WAIT" },
	{ "set-2m", L_WRITE, l_extent, 512, 0, true, "SET of a 2 MiB extent value + WAIT" },
	{ "setrange-512", L_WRITE, l_extent, 512, 1, true,
	  "512 pipelined SETRANGEs of 4 KiB into a 2 MiB value + WAIT" },
	{ "setrange-16x32", L_WRITE, l_extent, 512, 16, true,
	  "32 pipelined SETRANGEs of 64 KiB into a 2 MiB value + WAIT" },

	{ "hset-512", L_WRITE, l_hash, 512, 512, true,
	  "HSET of 512 fields into a 512-page hash + WAIT" },
	{ "hset-16x32", L_WRITE, l_hash, 512, 16, true,
	  "32 pipelined HSETs of 16 fields into a 512-page hash + WAIT" },

	{ "get", L_READ, l_single, 1, 0, false, "GET of one page key (one round trip)" },
	{ "mget-16", L_READ, l_mget, 16, 0, false, "MGET of 16 page keys, one hash tag" },
	{ "mget-512", L_READ, l_mget, 512, 0, false, "MGET of 512 page keys, one hash tag" },
	{ "get-64k", L_READ, l_extent, 16, 0, false, "GET of a 64 KiB extent value" },
	{ "get-256k", L_READ, l_extent, 64, 0, false, "GET of a 256 KiB extent value" },
	{ "get-2m", L_READ, l_extent, 512, 0, false, "GET of a 2 MiB extent value" },
	{ "getrange-4k", L_READ, l_extent, 512, 1, false,
	  "GETRANGE of one page at random in a 2 MiB value" },
	{ "getrange-64k", L_READ, l_extent, 512, 16, false,
	  "GETRANGE of 64 KiB at random in a 2 MiB value" },
	{ "getrange-256k", L_READ, l_extent, 512, 64, false,
	  "GETRANGE of 256 KiB at random in a 2 MiB value" },
	{ "hget", L_READ, l_hash, 512, 1, false, "HGET of one page at random in a 512-page hash" },
	{ "hmget-16", L_READ, l_hash, 512, 16, false, "HMGET of 16 fields of a 512-page hash" },
	{ "hmget-512", L_READ, l_hash, 512, 512, false, "HMGET of all 512 fields of a hash" },
};
#define NLROWS (sizeof(lrows) / sizeof(lrows[0]))

/* Server bytes per page of one page key, of a 2 MiB extent value and of a
 * 512-page hash. */
static void layout_memory(struct layout *l, double *page_key_b, double *ext_b, double *hash_b)
{
	const char *k;
	redisReply *r;

	*page_key_b = *ext_b = *hash_b = 0;
	l->a.n = 0;
	k = page_key(l, 0, 512, 0);
	r = cmd(l->rc, rc_node(l->rc, k, strlen(k)), "MEMORY USAGE %s SAMPLES 0", k);
	if (r && r->type == REDIS_REPLY_INTEGER)
		*page_key_b = (double)r->integer;
	if (r)
		freeReplyObject(r);
	k = arg_key(&l->a, 0, "ufb:%d:x%d:{%d/%d}", l->pid, 512, 512, 0);
	r = cmd(l->rc, rc_node(l->rc, k, strlen(k)), "MEMORY USAGE %s SAMPLES 0", k);
	if (r && r->type == REDIS_REPLY_INTEGER)
		*ext_b = (double)r->integer / 512;
	if (r)
		freeReplyObject(r);
	l->a.n = 0;
	k = arg_key(&l->a, 0, "ufb:%d:h%d:{%d/%d}", l->pid, 512, 512, 0);
	r = cmd(l->rc, rc_node(l->rc, k, strlen(k)), "MEMORY USAGE %s SAMPLES 0", k);
	if (r && r->type == REDIS_REPLY_INTEGER)
		*hash_b = (double)r->integer / 512;
	if (r)
		freeReplyObject(r);
}

/* Delete every key of this run (SCAN of each master for ufb:PID:*). */
static void layout_cleanup(struct layout *l)
{
	char pattern[64];
	int i;

	snprintf(pattern, sizeof(pattern), "ufb:%d:*", l->pid);
	for (i = 0; i < l->rc->nnodes; i++) {
		redisContext *c = l->rc->node[i].c;
		char cursor[32] = "0";

		do {
			redisReply *r = cmd(l->rc, c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
			size_t k;

			if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
				if (r)
					freeReplyObject(r);
				break;
			}
			snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
			for (k = 0; k < r->element[1]->elements; k++)
				redisAppendCommand(c, "UNLINK %b", r->element[1]->element[k]->str,
						   r->element[1]->element[k]->len);
			replies(l->rc, c, (int)r->element[1]->elements, NULL);
			freeReplyObject(r);
		} while (strcmp(cursor, "0"));
	}
}

static int run_layout(struct rcluster *rc, const struct bench_redis_opts *o)
{
	unsigned repeat = o->repeat ? o->repeat : 3, r;
	struct layout l = { .rc = rc, .pid = (int)getpid() };
	double *t = calloc(NLROWS * repeat, sizeof(double)), get_ns = 0;
	double pk_b, ext_b, hash_b;
	uint64_t rs = SEED;
	size_t i, k;
	int ret;

	l.npages = (o->size ? o->size : 16 << 20) / PG / 512 * 512;
	if (!l.npages)
		l.npages = 512;
	l.nsingle = l.npages / 4;
	snprintf(l.wait_n, sizeof(l.wait_n), "%d", rc->wait_replicas);
	l.data = malloc(l.npages * PG);
	ret = !t || !l.data ? -ENOMEM : argv_init(&l.a, 4 * 512 + 8);
	if (ret)
		goto out;
	for (k = 0; k < l.npages * PG / 8; k++)
		((uint64_t *)l.data)[k] = splitmix64(&rs);

	printf("ufault-bench --only layout: %zu pages (%zu MiB) per batched row, %zu per "
	       "one-page row,\nmedian of %u (after 1 warm-up round), %d masters, WAIT %s "
	       "replica(s), raw hiredis\n", l.npages, l.npages * PG >> 20, l.nsingle, repeat,
	       rc->nnodes, l.wait_n);
	fflush(stdout);
	/* round 0 writes every layout once and warms the connections */
	for (r = 0; r <= repeat; r++) {
		for (i = 0; i < NLROWS; i++) {
			size_t pages = 0;
			uint64_t t0 = now_ns();

			ret = lrows[i].run(&l, &lrows[i], &pages);
			if (ret) {
				fprintf(stderr, "ufault-bench: layout %s: %s\n", lrows[i].name, rc->err);
				goto out;
			}
			if (r)
				t[i * repeat + r - 1] = (double)(now_ns() - t0) / (double)pages;
		}
	}
	layout_memory(&l, &pk_b, &ext_b, &hash_b);

	printf("\n%-16s %5s %10s %8s %7s  %s\n", "layout", "op", "ns/page", "vs-GET", "spread",
	       "what");
	for (i = 0; i < NLROWS; i++)
		if (!strcmp(lrows[i].name, "get"))
			get_ns = median(t + i * repeat, repeat);
	for (i = 0; i < NLROWS; i++) {
		double m = median(t + i * repeat, repeat);

		if (i && lrows[i].kind != lrows[i - 1].kind)
			putchar('\n');
		printf("%-16s %5s %10.0f %7.2fx %6.0f%%  %s\n", lrows[i].name,
		       lrows[i].kind == L_READ ? "read" : "write", m, m / get_ns,
		       100 * spread(t + i * repeat, repeat), lrows[i].what);
	}
	printf("\nserver memory per 4 KiB page (MEMORY USAGE): page key %.0f bytes, "
	       "2 MiB extent value %.0f bytes,\n512-page hash %.0f bytes\n", pk_b, ext_b, hash_b);
	printf("vs-GET: this row's cost per page / one GET per page, same run\n\n");
	for (i = 0; i < NLROWS; i++)
		printf("BENCH case=layout row=%s op=%s ns_per_page=%.1f vs_get=%.3f repeat=%u\n",
		       lrows[i].name, lrows[i].kind == L_READ ? "read" : "write",
		       median(t + i * repeat, repeat), median(t + i * repeat, repeat) / get_ns,
		       repeat);
	printf("BENCH case=layout row=memory page_key_bytes=%.0f extent_bytes_per_page=%.0f "
	       "hash_bytes_per_page=%.0f\n", pk_b, ext_b, hash_b);
out:
	layout_cleanup(&l);
	argv_free(&l.a);
	free(l.data);
	free(t);
	return ret ? EXIT_ERR : 0;
}

/* ------------------------------------------------------------------ */
/* Store: ufault over the cluster, beside the file store and raw reads  */
/* ------------------------------------------------------------------ */

enum sorder { SEQ, RAND };
enum starget { T_FILE, T_REDIS, T_GET, T_MGET };

static const char *const starget_names[] = { "ufault", "ufault", "get", "mget-512" };
static const char *const sstore_names[] = { "tmpfs", "redis", "raw", "raw" };

struct scase {
	const char *name;
	enum starget target;
	enum sorder order;
	int ref;		/* row index of the reference, -1 none */
	bool cost;		/* ratio is this/ref (a ceiling), else ref/this */
	double goal;		/* 0: information */
	double abs_goal_ns;	/* a ceiling on ns/page, 0 none */
	int ref2;		/* a second reference, information only (0 none) */
};

/* Row indexes are the references: keep them in step with the table. */
static const struct scase scases[] = {
	/* 0 */ { "cold-seq", T_GET, SEQ, -1, false, 0, 0, 0 },
	/* 1 */ { "cold-seq", T_MGET, SEQ, 0, false, 0, 0, 0 },
	/* 2 */ { "cold-seq", T_FILE, SEQ, 0, false, 0, 0, 0 },
	/* 3 */ { "cold-seq", T_REDIS, SEQ, 0, false, 15, 3000, 1 },
	/* 4 */ { "cold-rand", T_GET, RAND, -1, false, 0, 0, 0 },
	/* 5 */ { "cold-rand", T_FILE, RAND, 4, true, 0, 0, 0 },
	/* 6 */ { "cold-rand", T_REDIS, RAND, 4, true, 1.5, 0, 0 },
};
#define NSCASES (sizeof(scases) / sizeof(scases[0]))

struct ssample {
	double ns;		/* per page */
	uint64_t majors, ra_pages, pages_read;
};

struct sbench {
	struct rcluster *rc;
	struct uf_mm *mm;
	size_t size, npages;
	uint32_t *order[2];
	char file[256];
	char url[1024];		/* the object */
	bool object_made;
	struct argv a;
	unsigned char *page;	/* one page: where a raw reply is copied */
	int pid;
};

static inline uint64_t page_tag(uint64_t p)
{
	return 0x7566000000000000ULL | p;
}

/* Page @p's bytes: its tag, then bytes that do not compress to a hole. */
static void page_fill(unsigned char *dst, uint64_t p)
{
	uint64_t s = SEED ^ p, *w = (uint64_t *)dst;
	size_t i;

	w[0] = page_tag(p);
	for (i = 1; i < PG / 8; i++)
		w[i] = splitmix64(&s);
}

/* The object's URL: the --store URL with its name (or "ufault-bench")
 * suffixed by -PID, the options kept. */
static int object_url(struct sbench *sb, const char *url)
{
	size_t hosts = strcspn(url + 8, "/?") + 8;
	const char *path = url + hosts, *q = strchr(path, '?');
	size_t plen = q ? (size_t)(q - path) : strlen(path);
	int n;

	if (plen <= 1)
		n = snprintf(sb->url, sizeof(sb->url), "%.*s/ufault-bench-%d%s", (int)hosts, url,
			     sb->pid, q ? q : "");
	else
		n = snprintf(sb->url, sizeof(sb->url), "%.*s-%d%s", (int)(hosts + plen), url,
			     sb->pid, q ? q : "");
	return n < 0 || (size_t)n >= sizeof(sb->url) ? -ENAMETOOLONG : 0;
}

/* The same bytes three times: a tmpfs file, a ufault object in the
 * cluster (written through ufault and synced), and page keys for the raw
 * references (512 per hash tag). */
static int store_setup(struct sbench *sb, const struct bench_redis_opts *o)
{
	size_t chunk = 512 * PG, off, p, i;
	unsigned char *buf = malloc(chunk);
	struct uf_object *obj = NULL;
	int fd = -1, ret;

	if (!buf)
		return -ENOMEM;
	snprintf(sb->file, sizeof(sb->file), "%s/ufault-bench-redis.%d",
		 o->tmpfs_dir ? o->tmpfs_dir : "/dev/shm", sb->pid);
	fd = open(sb->file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ret = fd < 0 ? -errno : 0;
	if (ret)
		fprintf(stderr, "ufault-bench: %s: %s\n", sb->file, strerror(-ret));
	if (!ret) {
		ret = uf_redis_open(sb->mm, sb->url, O_RDWR | O_CREAT, &obj);
		if (ret)
			fprintf(stderr, "ufault-bench: uf_redis_open(O_CREAT): %s\n", strerror(-ret));
		else
			sb->object_made = true;
	}
	if (!ret && (ret = uf_object_truncate(obj, sb->size)))
		fprintf(stderr, "ufault-bench: uf_object_truncate: %s\n", strerror(-ret));
	for (off = 0; !ret && off < sb->size; off += chunk) {
		redisContext *c = NULL;
		ssize_t n;

		for (p = off / PG, i = 0; i < chunk / PG; i++)
			page_fill(buf + i * PG, p + i);
		if (pwrite(fd, buf, chunk, (off_t)off) != (ssize_t)chunk) {
			ret = -EIO;
			fprintf(stderr, "ufault-bench: writing %s failed\n", sb->file);
			break;
		}
		n = uf_object_pwrite(obj, buf, chunk, off);
		if (n != (ssize_t)chunk) {
			ret = n < 0 ? (int)n : -EIO;
			fprintf(stderr, "ufault-bench: uf_object_pwrite: %s\n", strerror(-ret));
			break;
		}
		for (i = 0; i < chunk / PG; i++) {
			const char *k;

			sb->a.n = 0;
			arg_str(&sb->a, "SET");
			k = arg_key(&sb->a, 0, "ufb:%d:r:{%zu}:%zu", sb->pid, p / 512, i);
			arg(&sb->a, buf + i * PG, PG);
			if (!c)
				c = rc_node(sb->rc, k, strlen(k));
			redisAppendCommandArgv(c, sb->a.n, sb->a.v, sb->a.len);
		}
		ret = replies(sb->rc, c, (int)(chunk / PG), NULL);
		if (ret)
			fprintf(stderr, "ufault-bench: SET: %s\n", sb->rc->err);
	}
	if (!ret && (ret = uf_object_sync(obj)))
		fprintf(stderr, "ufault-bench: uf_object_sync: %s\n", strerror(-ret));
	uf_object_put(obj);
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static int make_sorders(struct sbench *sb)
{
	uint64_t s = SEED;
	size_t i;

	for (i = SEQ; i <= RAND; i++)
		if (!(sb->order[i] = malloc(sb->npages * sizeof(uint32_t))))
			return -ENOMEM;
	for (i = 0; i < sb->npages; i++)
		sb->order[SEQ][i] = sb->order[RAND][i] = (uint32_t)i;
	for (i = sb->npages - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = (size_t)(splitmix64(&s) % (i + 1));
		uint32_t t = sb->order[RAND][i];

		sb->order[RAND][i] = sb->order[RAND][j];
		sb->order[RAND][j] = t;
	}
	return 0;
}

static __attribute__((noinline)) size_t stouch(const char *base, const uint32_t *order,
						size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		uint32_t p = order[i];

		bad += *(const volatile uint64_t *)(base + (size_t)p * PG) != page_tag(p);
	}
	return bad;
}

/* A new object each run (an empty cache), mapped, one load per page. */
static int run_ufault(struct sbench *sb, const struct scase *c, struct ssample *s)
{
	struct uf_object *obj;
	struct uf_stats st0, st1;
	uint64_t t0, t1;
	size_t bad;
	void *p;
	int ret;

	ret = c->target == T_REDIS ? uf_redis_open(sb->mm, sb->url, O_RDONLY, &obj)
				   : uf_object_open(sb->mm, sb->file, O_RDONLY, &obj);
	if (ret)
		return ret;
	ret = uf_mmap(sb->mm, sb->size, PROT_READ, UF_MAP_SHARED, obj, 0, &p);
	if (ret) {
		uf_object_put(obj);
		return ret;
	}
	uf_mm_stats(sb->mm, &st0);
	t0 = now_ns();
	bad = stouch(p, sb->order[c->order], sb->npages);
	t1 = now_ns();
	uf_mm_stats(sb->mm, &st1);
	uf_munmap(sb->mm, p, sb->size);
	uf_object_put(obj);
	s->ns = (double)(t1 - t0) / (double)sb->npages;
	s->majors = st1.major_faults - st0.major_faults;
	s->ra_pages = st1.readahead_pages - st0.readahead_pages;
	s->pages_read = st1.pages_read - st0.pages_read;
	if (bad) {
		fprintf(stderr, "ufault-bench: %s %s/%s: %zu of %zu pages read wrong bytes\n",
			c->name, starget_names[c->target], sstore_names[c->target], bad, sb->npages);
		return -EIO;
	}
	return 0;
}

/* The references: GET of one page key per page (one round trip to the
 * slot's node each), or MGET of 512 page keys under one hash tag; each
 * page is copied out of the reply, as a fault's fill copies it. */
static int run_raw(struct sbench *sb, const struct scase *c, struct ssample *s)
{
	const uint32_t *order = sb->order[c->order];
	size_t i, k, bad = 0, ext = c->target == T_MGET ? 512 : 1;
	uint64_t t0 = now_ns(), t1;
	int ret = 0;

	for (i = 0; i < sb->npages && !ret; i += ext) {
		redisContext *ctx = NULL;
		redisReply *r;
		uint32_t p0 = order[i];

		sb->a.n = 0;
		arg_str(&sb->a, ext == 1 ? "GET" : "MGET");
		for (k = 0; k < ext && i + k < sb->npages; k++) {
			uint32_t p = ext == 1 ? p0 : (uint32_t)(i + k);
			const char *key = arg_key(&sb->a, (int)k, "ufb:%d:r:{%u}:%u", sb->pid,
						  p / 512, p % 512);

			if (!ctx)
				ctx = rc_node(sb->rc, key, strlen(key));
		}
		if (redisAppendCommandArgv(ctx, sb->a.n, sb->a.v, sb->a.len) != REDIS_OK ||
		    get_reply(ctx, &r) != REDIS_OK) {
			snprintf(sb->rc->err, sizeof(sb->rc->err), "%s", ctx->errstr);
			return -EIO;
		}
		if (ext == 1 && r->type == REDIS_REPLY_STRING && r->len == PG) {
			memcpy(sb->page, r->str, PG);
			bad += *(uint64_t *)sb->page != page_tag(p0);
		} else if (ext > 1 && r->type == REDIS_REPLY_ARRAY) {
			for (k = 0; k < r->elements; k++) {
				redisReply *e = r->element[k];

				if (e->type != REDIS_REPLY_STRING || e->len != PG) {
					bad++;
					continue;
				}
				memcpy(sb->page, e->str, PG);
				bad += *(uint64_t *)sb->page != page_tag(i + k);
			}
		} else {
			bad++;
		}
		freeReplyObject(r);
	}
	t1 = now_ns();
	s->ns = (double)(t1 - t0) / (double)sb->npages;
	if (bad) {
		fprintf(stderr, "ufault-bench: %s %s: %zu of %zu pages read wrong bytes\n", c->name,
			starget_names[c->target], bad, sb->npages);
		return -EIO;
	}
	return ret;
}

static int cmp_ssample(const void *a, const void *b)
{
	double x = ((const struct ssample *)a)->ns, y = ((const struct ssample *)b)->ns;

	return (x > y) - (x < y);
}

static bool store_selected(const char *only, const struct scase *c)
{
	size_t n;

	if (!only || !strcmp(only, "store"))
		return true;
	n = strlen(only);
	return !strncmp(c->name, only, n) && (!c->name[n] || c->name[n] == '-');
}

static int run_store(struct rcluster *rc, const struct bench_redis_opts *o)
{
	unsigned repeat = o->repeat ? o->repeat : 3, r;
	struct sbench sb = { .rc = rc, .pid = (int)getpid() };
	struct ssample *runs = NULL, med[NSCASES];
	double ratio[NSCASES], spr[NSCASES];
	bool miss = false;
	int ret, status = EXIT_ERR;
	size_t i;

	sb.size = (o->size ? o->size : (size_t)32 << 20) / (512 * PG) * (512 * PG);
	if (!sb.size)
		sb.size = 512 * PG;
	sb.npages = sb.size / PG;
	ret = object_url(&sb, o->url);
	if (ret) {
		fprintf(stderr, "ufault-bench: URL too long\n");
		return EXIT_ERR;
	}
	ret = uf_mm_create(NULL, &sb.mm);
	if (ret) {
		fprintf(stderr, "ufault-bench: uf_mm_create: %s\n", strerror(-ret));
		return ret == -EPERM || ret == -ENOSYS ? EXIT_SKIP : EXIT_ERR;
	}
	runs = calloc(NSCASES * repeat, sizeof(*runs));
	sb.page = aligned_alloc(PG, PG);
	ret = !runs || !sb.page ? -ENOMEM : argv_init(&sb.a, 520);
	if (!ret)
		ret = make_sorders(&sb);
	if (!ret)
		ret = store_setup(&sb, o);
	if (ret)
		goto out;

	printf("ufault-bench --store: %zu MiB (%zu pages) per case, median of %u, %ld CPUs, "
	       "one load per page,\n%d masters, 1 warm-up round; object %s, file store %s\n",
	       sb.size >> 20, sb.npages, repeat, sysconf(_SC_NPROCESSORS_ONLN), rc->nnodes,
	       strrchr(sb.url, '/') + 1, sb.file);
	fflush(stdout);
	for (r = 0; r <= repeat; r++) {
		for (i = 0; i < NSCASES; i++) {
			const struct scase *c = &scases[i];
			struct ssample warm, *s = r ? &runs[i * repeat + r - 1] : &warm;

			if (!store_selected(o->only, c))
				continue;
			memset(s, 0, sizeof(*s));
			ret = c->target == T_GET || c->target == T_MGET ? run_raw(&sb, c, s)
									 : run_ufault(&sb, c, s);
			if (ret) {
				fprintf(stderr, "ufault-bench: %s %s/%s: %s\n", c->name,
					starget_names[c->target], sstore_names[c->target],
					ret == -EIO && rc->err[0] ? rc->err : strerror(-ret));
				goto out;
			}
		}
	}

	for (i = 0; i < NSCASES; i++) {
		struct ssample *v = runs + i * repeat;

		if (!store_selected(o->only, &scases[i]))
			continue;
		qsort(v, repeat, sizeof(*v), cmp_ssample);
		med[i] = v[repeat / 2];
		spr[i] = (v[repeat - 1].ns - v[0].ns) / med[i].ns;
	}
	printf("\n%-9s %-8s %-5s %10s %9s %7s %8s %8s\n", "case", "target", "store", "ns/page",
	       "MiB/s", "spread", "majors", "ra-pages");
	for (i = 0; i < NSCASES; i++) {
		const struct scase *c = &scases[i];

		if (!store_selected(o->only, c))
			continue;
		if (i && c->order != scases[i - 1].order && store_selected(o->only, &scases[i - 1]))
			putchar('\n');
		printf("%-9s %-8s %-5s %10.1f %9.0f %6.0f%% %8" PRIu64 " %8" PRIu64 "\n", c->name,
		       starget_names[c->target], sstore_names[c->target], med[i].ns,
		       PG * 1e9 / med[i].ns / (1 << 20), 100 * spr[i], med[i].majors,
		       med[i].ra_pages);
	}
	printf("\nratios (medians of this run):\n");
	for (i = 0; i < NSCASES; i++) {
		const struct scase *c = &scases[i];
		const struct scase *rf = c->ref >= 0 ? &scases[c->ref] : NULL;
		char what[64], goal[40] = "";
		bool m = false;

		if (!rf || !store_selected(o->only, c) || !store_selected(o->only, rf))
			continue;
		ratio[i] = c->cost ? med[i].ns / med[c->ref].ns : med[c->ref].ns / med[i].ns;
		if (c->goal > 0 && !o->quick) {	/* --quick: no verdicts */
			m = c->cost ? ratio[i] > c->goal : ratio[i] < c->goal;
			snprintf(goal, sizeof(goal), "goal %s %.2fx", c->cost ? "<=" : ">=", c->goal);
		}
		snprintf(what, sizeof(what), "%s/%s vs %s/%s", starget_names[c->target],
			 sstore_names[c->target], starget_names[rf->target], sstore_names[rf->target]);
		printf("  %-9s %-28s %-7s %7.2fx  %-14s %s\n", c->name, what,
		       c->cost ? "cost" : "cheaper", ratio[i], goal,
		       o->quick ? "" : c->goal > 0 ? (m ? "MISS" : "PASS") : "info");
		miss |= m;
		if (c->ref2 > 0 && store_selected(o->only, &scases[c->ref2])) {
			rf = &scases[c->ref2];
			snprintf(what, sizeof(what), "%s/%s vs %s/%s", starget_names[c->target],
				 sstore_names[c->target], starget_names[rf->target],
				 sstore_names[rf->target]);
			printf("  %-9s %-28s %-7s %7.2fx  %-14s %s\n", c->name, what, "cost",
			       med[i].ns / med[c->ref2].ns, "", o->quick ? "" : "info");
		}
		if (c->abs_goal_ns > 0 && !o->quick) {
			m = med[i].ns > c->abs_goal_ns;
			snprintf(goal, sizeof(goal), "goal <= %.0fns", c->abs_goal_ns);
			printf("  %-9s %-28s %-7s %7.0fns %-14s %s\n", c->name, "ufault/redis",
			       "per page", med[i].ns, goal, m ? "MISS" : "PASS");
			miss |= m;
		}
	}
	putchar('\n');
	for (i = 0; i < NSCASES; i++) {
		const struct scase *c = &scases[i];

		if (!store_selected(o->only, c))
			continue;
		printf("BENCH case=%s target=%s store=%s order=%s ns_per_page=%.1f pages=%zu "
		       "repeat=%u spread=%.3f majors=%" PRIu64 " ra_pages=%" PRIu64, c->name,
		       starget_names[c->target], sstore_names[c->target],
		       c->order == SEQ ? "sequential" : "random", med[i].ns, sb.npages, repeat,
		       spr[i], med[i].majors, med[i].ra_pages);
		if (c->ref >= 0 && store_selected(o->only, &scases[c->ref])) {
			printf(" ratio=%.3f ratio_kind=%s ref=%s/%s", ratio[i],
			       c->cost ? "cost" : "speedup", starget_names[scases[c->ref].target],
			       sstore_names[scases[c->ref].target]);
			if (c->goal > 0 && !o->quick)
				printf(" goal=%s%.2f result=%s", c->cost ? "<=" : ">=", c->goal,
				       (c->cost ? ratio[i] > c->goal : ratio[i] < c->goal) ? "MISS"
											: "PASS");
		}
		if (c->ref2 > 0 && store_selected(o->only, &scases[c->ref2]))
			printf(" ratio2=%.3f ratio2_kind=cost ref2=%s/%s", med[i].ns / med[c->ref2].ns,
			       starget_names[scases[c->ref2].target], sstore_names[scases[c->ref2].target]);
		if (c->abs_goal_ns > 0 && !o->quick)
			printf(" goal_ns=<=%.0f result_ns=%s", c->abs_goal_ns,
			       med[i].ns > c->abs_goal_ns ? "MISS" : "PASS");
		putchar('\n');
	}
	printf("\nget/raw: hiredis GET of one 4 KiB page key per page, to the slot's node, one "
	       "round trip each;\nmget-512/raw: MGET of 512 page keys under one hash tag; both copy "
	       "each page out of the reply.\nufault/redis: uf_redis_open() O_RDONLY, a new object "
	       "(empty cache) per run; ufault/tmpfs: the\nsame bytes through the file store. "
	       "majors/ra-pages: uf_mm_stats() deltas. Only ratios of one\nrun mean anything on "
	       "these machines.\n");
	status = miss && o->check ? EXIT_MISS : 0;
out:
	if (sb.object_made && (ret = uf_redis_remove(sb.url)))
		fprintf(stderr, "ufault-bench: uf_redis_remove: %s\n", strerror(-ret));
	if (sb.file[0])
		unlink(sb.file);
	uf_mm_destroy(sb.mm);
	{
		struct layout l = { .rc = rc, .pid = sb.pid };

		layout_cleanup(&l);
	}
	argv_free(&sb.a);
	free(sb.page);
	free(sb.order[SEQ]);
	free(sb.order[RAND]);
	free(runs);
	return status;
}

/* ------------------------------------------------------------------ */
/* ws: a working set recorded and replayed from the cluster            */
/* ------------------------------------------------------------------ */

/*
 * --only ws: ufault-bench --only ws's set (128 runs of 16 pages and 2048
 * single pages of a 256 MiB object, in a fixed random order) over an
 * object in the cluster.  Only the set's pages are written (the rest
 * reads zero and costs the cluster no memory, and lazy readahead reads
 * holes there, which flatters the lazy run).  Each run a new mm and
 * uf_redis_open() O_RDONLY: lazy, record (record .. stop timed), replay
 * (prefetch then touches, timed from the prefetch call), floor (the
 * prefetch waited for, then the touches alone timed: the least a replay
 * can take, as in ufault-bench --only ws).  The record of
 * a store without file metadata names the object's size.  Goal: replay
 * >= 10x faster than lazy.  Beside the replay, the minimal loop
 * (wsr_bare()) as a model of the best on free CPUs, timed in each round
 * after its replay, and measured as a replay in the same rounds
 * (wsr_bare_replay()), with the HMGETs and HGETs the cluster served for
 * each; ratios are the median of the rounds' (bare_median_ratio()).
 */
#define WSR_SIZE	(256UL << 20)
#define WSR_NPAGES	(WSR_SIZE / PG)
#define WSR_NRUNS	128
#define WSR_NSINGLE	2048
#define WSR_SET		(WSR_NRUNS * 16 + WSR_NSINGLE)

enum { WSR_LAZY, WSR_RECORD, WSR_REPLAY, WSR_FLOOR, WSR_NMODES };
static const char *const wsr_names[] = { "lazy", "record", "replay", "floor" };

static void wsr_make_set(uint32_t *order, uint32_t *starts, uint32_t *lens, size_t *nitems)
{
	unsigned char *used = calloc(WSR_NPAGES, 1);
	uint64_t s = SEED ^ 0x7773;
	size_t i, k, n = 0, items = WSR_NRUNS + WSR_NSINGLE;

	for (i = 0; i < items; i++) {
		uint32_t len = i < WSR_NRUNS ? 16 : 1, p;

		do {
			p = (uint32_t)(1 + splitmix64(&s) % (WSR_NPAGES - 18));
			for (k = 0; k < len + 2 && !used[p - 1 + k]; k++)
				;
		} while (k < len + 2);
		memset(used + p, 1, len);
		starts[i] = p;
		lens[i] = len;
	}
	for (i = items - 1; i > 0; i--) {
		uint32_t t;

		k = splitmix64(&s) % (i + 1);
		t = starts[i], starts[i] = starts[k], starts[k] = t;
		t = lens[i], lens[i] = lens[k], lens[k] = t;
	}
	for (i = 0; i < items; i++)
		for (k = 0; k < lens[i]; k++)
			order[n++] = starts[i] + (uint32_t)k;
	*nitems = items;
	free(used);
}

/* The masters' CPU so far, in ns (INFO cpu: used_cpu_sys + used_cpu_user),
 * or -1.  cpu_delta(): the CPU between two such readings, 0 if either
 * failed. */
static double servers_cpu_ns(struct rcluster *rc)
{
	double sum = 0;
	int i;

	for (i = 0; i < rc->nnodes; i++) {
		redisReply *r = cmd(rc, rc->node[i].c, "INFO cpu");
		const char *sys, *user;

		if (!r)
			return -1;
		sys = r->type == REDIS_REPLY_STRING ? strstr(r->str, "used_cpu_sys:") : NULL;
		user = r->type == REDIS_REPLY_STRING ? strstr(r->str, "used_cpu_user:") : NULL;
		if (sys && user)
			sum += (strtod(sys + 13, NULL) + strtod(user + 14, NULL)) * 1e9;
		freeReplyObject(r);
		if (!sys || !user)
			return -1;
	}
	return sum;
}

static double cpu_delta(double s0, double s1)
{
	return s0 < 0 || s1 < 0 ? 0 : s1 - s0;
}

/* The reads the masters have served so far (INFO commandstats): HMGETs
 * (a batch's, a run's) and HGETs (a page's), or -1s. */
struct wsr_reads {
	long hmget, hget;
};

static struct wsr_reads servers_reads(struct rcluster *rc)
{
	struct wsr_reads n = { 0, 0 };
	int i;

	for (i = 0; i < rc->nnodes; i++) {
		redisReply *r = cmd(rc, rc->node[i].c, "INFO commandstats");
		const char *a, *b;

		if (!r || r->type != REDIS_REPLY_STRING) {
			if (r)
				freeReplyObject(r);
			return (struct wsr_reads){ -1, -1 };
		}
		a = strstr(r->str, "cmdstat_hmget:calls=");
		b = strstr(r->str, "cmdstat_hget:calls=");
		n.hmget += a ? strtol(a + 20, NULL, 10) : 0;
		n.hget += b ? strtol(b + 19, NULL, 10) : 0;
		freeReplyObject(r);
	}
	return n;
}

static struct wsr_reads reads_delta(struct wsr_reads a, struct wsr_reads b)
{
	if (a.hmget < 0 || b.hmget < 0)
		return (struct wsr_reads){ -1, -1 };
	return (struct wsr_reads){ b.hmget - a.hmget, b.hget - a.hget };
}

static int wsr_run(struct rcluster *rc, const char *url, const char *rec, const uint32_t *order,
		   int mode, double *ns, uint64_t *majors, double *cpu, double *server,
		   struct wsr_reads *reads)
{
	struct wsr_reads n0;
	double s0;
	struct uf_object *obj;
	struct uf_stats st;
	struct uf_mm *mm;
	uint64_t t0, t1, c0;
	size_t bad = 0, i;
	char *base;
	int ret;

	ret = uf_mm_create(NULL, &mm);
	if (ret)
		return ret;
	ret = uf_redis_open(mm, url, O_RDONLY, &obj);
	if (ret)
		goto out_mm;
	ret = uf_mmap(mm, WSR_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&base);
	if (ret)
		goto out_obj;
	n0 = servers_reads(rc);
	s0 = servers_cpu_ns(rc);
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now_ns();
	if (mode == WSR_RECORD)
		ret = uf_object_record(obj, rec);
	else if (mode == WSR_REPLAY || mode == WSR_FLOOR)
		ret = uf_object_prefetch(obj, rec);
	if (!ret && mode == WSR_FLOOR) {
		int waited = 0;

		while (!uf_mm_stats(mm, &st) && st.readahead_pages < WSR_SET && waited++ < 20000)
			usleep(500);
		t0 = now_ns();
	}
	for (i = 0; !ret && i < WSR_SET; i++)
		bad += *(volatile uint64_t *)(base + (size_t)order[i] * PG) != page_tag(order[i]);
	if (!ret && mode == WSR_RECORD) {
		int n = uf_object_record_stop(obj);

		ret = n < 0 ? n : n != WSR_SET ? -EPROTO : 0;
	}
	t1 = now_ns();
	*cpu = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
	*server = cpu_delta(s0, servers_cpu_ns(rc));
	*reads = reads_delta(n0, servers_reads(rc));
	if (!ret && bad)
		ret = -EIO;
	*ns = (double)(t1 - t0);
	if (!uf_mm_stats(mm, &st))
		*majors = st.major_faults;
	uf_munmap(mm, base, WSR_SIZE);
out_obj:
	uf_object_put(obj);
out_mm:
	uf_mm_destroy(mm);
	return ret;
}

#define WSR_BATCH	64	/* HMGETs a batch: one is in flight while one is read */
#define WSR_EXTENT	512	/* pages per extent hash (redis/store.c's layout) */

/* One HMGET of the set's piece: @n pages from page @p, inside one extent. */
struct wsr_piece {
	uint32_t p, n;
	redisContext *c;
};

static void wsr_send(struct rcluster *rc, const char *name, struct wsr_piece *pc, size_t n)
{
	static char fields[WSR_EXTENT][4];
	const char *argv[2 + 16];
	size_t argvlen[2 + 16], i, k;
	char key[128];

	if (!fields[1][0])
		for (k = 0; k < WSR_EXTENT; k++)
			snprintf(fields[k], sizeof(fields[k]), "%zu", k);
	for (i = 0; i < n; i++) {
		uint32_t ext = pc[i].p / WSR_EXTENT;

		argvlen[1] = (size_t)snprintf(key, sizeof(key), "uf:{%s:%" PRIu32 "}:x", name, ext);
		argv[0] = "HMGET", argvlen[0] = 5;
		argv[1] = key;
		for (k = 0; k < pc[i].n; k++) {
			argv[2 + k] = fields[pc[i].p % WSR_EXTENT + k];
			argvlen[2 + k] = strlen(argv[2 + k]);
		}
		pc[i].c = rc_node(rc, key, argvlen[1]);
		redisAppendCommandArgv(pc[i].c, (int)(2 + pc[i].n), argv, argvlen);
	}
	for (k = 0; k < (size_t)rc->nnodes; k++) {
		int done = 0;

		while (!done && redisBufferWrite(rc->node[k].c, &done) == REDIS_OK)
			;
	}
}

/* Read @n pieces' replies, in order, into the bare map. */
static int wsr_recv(struct rcluster *rc, struct bare_map *m, const struct wsr_piece *pc, size_t n,
		    unsigned char *buf)
{
	size_t i, k;
	int ret = 0;

	for (i = 0; i < n; i++) {
		redisReply *r;

		if (get_reply(pc[i].c, &r) != REDIS_OK) {
			snprintf(rc->err, sizeof(rc->err), "%s", pc[i].c->errstr);
			return -EIO;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != pc[i].n)
			ret = -EPROTO;
		for (k = 0; !ret && k < pc[i].n; k++) {
			if (r->element[k]->type != REDIS_REPLY_STRING || r->element[k]->len != PG)
				ret = -EPROTO;
			else
				memcpy(buf + k * PG, r->element[k]->str, PG);
		}
		freeReplyObject(r);
		if (!ret)
			ret = bare_map_fill(m, (size_t)pc[i].p * PG, buf, pc[i].n * PG);
		if (ret) {
			snprintf(rc->err, sizeof(rc->err), "a piece of the set: %s", strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The set's HMGETs, in recorded order: one per recorded run, split where
 * it crosses an extent.  Returns the count, in *@pc (calloc'd), or -ENOMEM. */
static long wsr_pieces(const uint32_t *starts, const uint32_t *lens, size_t items,
		       struct wsr_piece **pcp)
{
	struct wsr_piece *pc = calloc(2 * items, sizeof(*pc));
	size_t i, n = 0;

	if (!pc)
		return -ENOMEM;
	for (i = 0; i < items; i++) {
		uint32_t p = starts[i], left = lens[i];

		while (left) {
			uint32_t room = WSR_EXTENT - p % WSR_EXTENT;

			pc[n].p = p;
			pc[n].n = left < room ? left : room;
			p += pc[n].n;
			left -= pc[n++].n;
		}
	}
	*pcp = pc;
	return (long)n;
}

/* The loop: @n pieces' HMGETs sent WSR_BATCH at a time, one batch in
 * flight while the one before is read, each piece copied and populated
 * into @m as its reply is read.  0 or -errno. */
static int wsr_loop(struct rcluster *rc, const char *name, struct wsr_piece *pc, size_t n,
		    struct bare_map *m)
{
	unsigned char *buf = aligned_alloc(PG, 16 * PG);
	size_t b;
	int ret = buf ? 0 : -ENOMEM;

	if (!ret)
		wsr_send(rc, name, pc, n < WSR_BATCH ? n : WSR_BATCH);
	for (b = 0; !ret && b < n; b += WSR_BATCH) {
		size_t next = b + WSR_BATCH, cnt = n - b < WSR_BATCH ? n - b : WSR_BATCH;

		if (next < n)
			wsr_send(rc, name, pc + next, n - next < WSR_BATCH ? n - next : WSR_BATCH);
		ret = wsr_recv(rc, m, pc + b, cnt, buf);
	}
	free(buf);
	return ret;
}

/*
 * The minimal prefetch loop from the cluster, in one thread, the set in
 * recorded order: an HMGET per recorded run (split where it crosses an
 * extent), sent WSR_BATCH at a time, one batch in flight while the one
 * before is read; per run a UFFDIO_COPY and a MADV_POPULATE_READ
 * (bench/bare.h).  hiredis builds a reply object per page, which ufault's
 * client does not.  *cpu gets this thread's CPU, *server the masters' (from
 * INFO cpu; 0 if it cannot be read), in ns; 0 or -errno.
 */
static int wsr_bare(struct rcluster *rc, const char *name, const uint32_t *starts,
		    const uint32_t *lens, size_t items, double *cpu, double *server, double *wall)
{
	struct wsr_piece *pc = NULL;
	long n = wsr_pieces(starts, lens, items, &pc);
	uint64_t c0, c1, t0;
	struct bare_map m;
	double s0, s1;
	int ret;

	if (n < 0)
		return (int)n;
	ret = bare_map_open(&m, WSR_SIZE);
	s0 = servers_cpu_ns(rc);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	t0 = now_ns();
	if (!ret)
		ret = wsr_loop(rc, name, pc, (size_t)n, &m);
	*wall = (double)(now_ns() - t0);
	c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	s1 = servers_cpu_ns(rc);
	bare_map_close(&m);
	*cpu = (double)(c1 - c0);
	*server = cpu_delta(s0, s1);
	free(pc);
	return ret;
}

/*
 * The minimal replay from the cluster, measured: wsr_bare()'s loop in a
 * thread of its own (an HMGET per recorded run, 64 in flight, a
 * UFFDIO_COPY and a MADV_POPULATE_READ per run as its reply is read),
 * started as a replay's prefetch is, while this thread touches the set
 * through the private mapping at once, and a minimal handler on
 * connections of its own serves the touches that come first (one HGET of
 * the page: a round trip, UFFDIO_COPY, EEXIST where the loop was first,
 * UFFDIO_WAKE).  The same work as the loop, on the same CPUs under the
 * same load as ufault's replay beside it; no model of free CPUs.
 */
struct wsr_mrep {
	struct rcluster *rc, *hrc;	/* the loop's connections; the handler's */
	const char *name;
	struct wsr_piece *pc;
	size_t n;
	struct bare_map m;
	int stopfd, err, herr;
	uint64_t faults;
};

static int wsr_mrep_read(void *arg, size_t off, void *buf)
{
	struct wsr_mrep *x = arg;
	size_t p = off / PG;
	redisReply *r;
	char key[128], field[8];
	int len, ret = -EIO;

	len = snprintf(key, sizeof(key), "uf:{%s:%zu}:x", x->name, p / WSR_EXTENT);
	snprintf(field, sizeof(field), "%zu", p % WSR_EXTENT);
	r = cmd(x->hrc, rc_node(x->hrc, key, (size_t)len), "HGET %s %s", key, field);
	if (r && r->type == REDIS_REPLY_STRING && r->len == PG) {
		memcpy(buf, r->str, PG);
		ret = 0;
	}
	if (r)
		freeReplyObject(r);
	return ret;
}

static void *wsr_mrep_handler(void *arg)
{
	struct wsr_mrep *x = arg;

	x->herr = bare_map_serve(&x->m, x->stopfd, wsr_mrep_read, x, &x->faults);
	return NULL;
}

static void *wsr_mrep_loop(void *arg)
{
	struct wsr_mrep *x = arg;

	x->err = wsr_loop(x->rc, x->name, x->pc, x->n, &x->m);
	return NULL;
}

/* One measured minimal replay over @url's cluster: *@ns from the loop's
 * start to the last touch, *@faults the touches the handler served.  0 or
 * -errno. */
static int wsr_bare_replay(struct rcluster *rc, const char *url, const char *name,
			   const uint32_t *starts, const uint32_t *lens, size_t items,
			   const uint32_t *order, double *ns, uint64_t *faults,
			   struct wsr_reads *reads)
{
	struct wsr_mrep x = { .rc = rc, .name = name, .stopfd = -1 };
	struct wsr_reads n0 = { -1, -1 };
	long n = wsr_pieces(starts, lens, items, &x.pc);
	pthread_t th, tl;
	bool handling = false;
	uint64_t t0, one = 1;
	size_t bad = 0, i;
	int ret = n < 0 ? (int)n : 0;

	x.n = n < 0 ? 0 : (size_t)n;
	x.hrc = calloc(1, sizeof(*x.hrc));
	if (!ret && (!x.hrc || rc_open(x.hrc, url))) {
		free(x.hrc);
		free(x.pc);
		return -EIO;
	}
	if (!ret)
		ret = bare_map_open(&x.m, WSR_SIZE);
	if (!ret && (x.stopfd = eventfd(0, EFD_CLOEXEC)) < 0)
		ret = -errno;
	if (!ret && pthread_create(&th, NULL, wsr_mrep_handler, &x))
		ret = -EAGAIN;
	handling = !ret;
	n0 = servers_reads(rc);
	t0 = now_ns();
	if (!ret && pthread_create(&tl, NULL, wsr_mrep_loop, &x))
		ret = -EAGAIN;
	if (!ret) {
		for (i = 0; i < WSR_SET; i++)
			bad += *(volatile uint64_t *)(x.m.pm + (size_t)order[i] * PG) !=
			       page_tag(order[i]);
		*ns = (double)(now_ns() - t0);
		pthread_join(tl, NULL);
		ret = x.err ? x.err : bad ? -EIO : 0;
	}
	if (handling && write(x.stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(th, NULL);
	*reads = reads_delta(n0, servers_reads(rc));
	if (!ret)
		ret = x.herr;
	if (x.stopfd >= 0)
		close(x.stopfd);
	bare_map_close(&x.m);
	rc_close(x.hrc);
	free(x.hrc);
	free(x.pc);
	*faults = x.faults;
	return ret;
}

/* The object: 256 MiB, the set's pages written (one pwrite per run). */
static int wsr_setup(struct sbench *sb, const uint32_t *starts, const uint32_t *lens,
		     size_t items)
{
	unsigned char *buf = malloc(16 * PG);
	struct uf_object *obj;
	size_t i, k;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = uf_redis_open(sb->mm, sb->url, O_RDWR | O_CREAT, &obj);
	if (ret) {
		free(buf);
		return ret;
	}
	sb->object_made = true;
	ret = uf_object_truncate(obj, WSR_SIZE);
	for (i = 0; !ret && i < items; i++) {
		ssize_t n;

		for (k = 0; k < lens[i]; k++)
			page_fill(buf + k * PG, starts[i] + k);
		n = uf_object_pwrite(obj, buf, lens[i] * PG, (uint64_t)starts[i] * PG);
		if (n != (ssize_t)(lens[i] * PG))
			ret = n < 0 ? (int)n : -EIO;
	}
	if (!ret)
		ret = uf_object_sync(obj);
	uf_object_put(obj);
	free(buf);
	return ret;
}

static int run_ws(struct rcluster *rc, const struct bench_redis_opts *o)
{
	unsigned repeat = o->repeat ? o->repeat : 3, r, k;
	struct sbench sb = { .rc = rc, .pid = (int)getpid() };
	uint32_t *order = malloc(WSR_SET * sizeof(*order));
	uint32_t *starts = malloc((WSR_NRUNS + WSR_NSINGLE) * sizeof(*starts));
	uint32_t *lens = malloc((WSR_NRUNS + WSR_NSINGLE) * sizeof(*lens));
	double *ns = calloc(WSR_NMODES * repeat, sizeof(*ns)), med[WSR_NMODES], up, cost;
	double *cpu = calloc(WSR_NMODES * repeat, sizeof(*cpu)), mcpu[WSR_NMODES];
	double *srv = calloc(WSR_NMODES * repeat, sizeof(*srv)), msrv[WSR_NMODES];
	double *mrep = calloc(repeat, sizeof(*mrep)), *bcpu = calloc(repeat, sizeof(*bcpu));
	double *bsrv = calloc(repeat, sizeof(*bsrv)), *bwall = calloc(repeat, sizeof(*bwall));
	double *best = calloc(repeat, sizeof(*best)), paired, mpaired, lo, hi;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t maj[WSR_NMODES] = { 0 }, mrep_faults = 0;
	struct wsr_reads rreads = { -1, -1 }, mreads = { -1, -1 }, nreads;
	const char *name;
	char rec[512], nm[256];
	struct stat st;
	size_t items;
	int ret, status = EXIT_ERR;

	snprintf(rec, sizeof(rec), "%s/ufault-bench-ws-redis.%d",
		 o->tmpfs_dir ? o->tmpfs_dir : "/dev/shm", sb.pid);
	if (!order || !starts || !lens || !ns || !cpu || !srv || !mrep || !bcpu || !bsrv ||
	    !bwall || !best || object_url(&sb, o->url))
		goto out;
	ret = uf_mm_create(NULL, &sb.mm);
	if (ret) {
		fprintf(stderr, "ufault-bench: uf_mm_create: %s\n", strerror(-ret));
		status = ret == -EPERM || ret == -ENOSYS ? EXIT_SKIP : EXIT_ERR;
		goto out;
	}
	wsr_make_set(order, starts, lens, &items);
	ret = wsr_setup(&sb, starts, lens, items);
	if (ret) {
		fprintf(stderr, "ufault-bench: ws: the object: %s\n", strerror(-ret));
		goto out;
	}
	name = strchr(sb.url + 8, '/') + 1;
	snprintf(nm, sizeof(nm), "%.*s", (int)strcspn(name, "?"), name);
	printf("ufault-bench --store --only ws: %u-page working set (%u runs of 16, %u singles) of "
	       "a %lu MiB object in the cluster, cold each run, median of %u\n",
	       (unsigned)WSR_SET, WSR_NRUNS, WSR_NSINGLE, WSR_SIZE >> 20, repeat);
	fflush(stdout);
	/* round 0: warm-up, and the first record */
	for (r = 0; r <= repeat; r++) {
		for (k = 0; k < WSR_NMODES; k++) {
			double t = 0, c = 0, sv = 0;

			ret = wsr_run(rc, sb.url, rec, order, (int)k, &t, &maj[k], &c, &sv,
				      k == WSR_REPLAY ? &rreads : &nreads);
			if (ret) {
				fprintf(stderr, "ufault-bench: ws %s/redis: %s\n", wsr_names[k],
					strerror(-ret));
				goto out;
			}
			if (r) {
				ns[k * repeat + r - 1] = t;
				cpu[k * repeat + r - 1] = c;
				srv[k * repeat + r - 1] = sv;
			}
			if (k != WSR_REPLAY)
				continue;
			/* the minimal replay, measured beside it */
			rc->err[0] = 0;
			ret = wsr_bare_replay(rc, o->url, nm, starts, lens, items, order, &t,
					      &mrep_faults, &mreads);
			if (ret) {
				fprintf(stderr, "ufault-bench: ws minimal replay/redis: %s\n",
					rc->err[0] ? rc->err : strerror(-ret));
				goto out;
			}
			if (r)
				mrep[r - 1] = t;
		}
		/* the minimal loop, in the same round (ufault-bench(1)) */
		if (r) {
			rc->err[0] = 0;
			ret = wsr_bare(rc, nm, starts, lens, items, &bcpu[r - 1], &bsrv[r - 1],
				       &bwall[r - 1]);
			if (ret) {
				fprintf(stderr, "ufault-bench: ws: minimal loop: %s\n",
					rc->err[0] ? rc->err : strerror(-ret));
				goto out;
			}
		}
	}
	/* each round's best: the touches alone, the loop's CPU and the
	 * cluster's shared by the CPUs, at least the touches alone */
	for (r = 0; r < repeat; r++) {
		double fl = ns[WSR_FLOOR * repeat + r];

		best[r] = (fl + bcpu[r] + bsrv[r]) / (double)(ncpu > 1 ? ncpu : 1);
		if (best[r] < fl)
			best[r] = fl;
	}
	paired = bare_median_ratio(best, ns + WSR_REPLAY * repeat, repeat, &lo, &hi);
	mpaired = bare_median_ratio(mrep, ns + WSR_REPLAY * repeat, repeat, NULL, NULL);
	for (k = 0; k < WSR_NMODES; k++) {
		qsort(ns + k * repeat, repeat, sizeof(double), cmp_double);
		med[k] = ns[k * repeat + repeat / 2];
		qsort(cpu + k * repeat, repeat, sizeof(double), cmp_double);
		mcpu[k] = cpu[k * repeat + repeat / 2];
		qsort(srv + k * repeat, repeat, sizeof(double), cmp_double);
		msrv[k] = srv[k * repeat + repeat / 2];
	}
	up = med[WSR_LAZY] / med[WSR_REPLAY];
	cost = med[WSR_RECORD] / med[WSR_LAZY];
	printf("%-6s %10s %10s %10s %10s %7s %7s %7s  %s\n", "store", "lazy us", "record us",
	       "replay us", "floor us", "majors", "rec", "replay", "ratios");
	printf("%-6s %10.0f %10.0f %10.0f %10.0f %7" PRIu64 " %7" PRIu64 " %7" PRIu64
	       "  replay %.2fx (>= 10) %s, record %.2fx (<= 1.3) %s; lazy/floor %.2fx, "
	       "replay/floor %.2fx\n", "redis",
	       med[WSR_LAZY] / 1000, med[WSR_RECORD] / 1000, med[WSR_REPLAY] / 1000,
	       med[WSR_FLOOR] / 1000, maj[WSR_LAZY], maj[WSR_RECORD], maj[WSR_REPLAY], up,
	       o->quick ? "" : up < 10 ? "MISS" : "PASS", cost,
	       o->quick ? "" : cost > 1.3 ? "MISS" : "PASS",
	       med[WSR_LAZY] / med[WSR_FLOOR], med[WSR_REPLAY] / med[WSR_FLOOR]);
	printf("record: %ld bytes (<= 32768)\n", stat(rec, &st) == 0 ? (long)st.st_size : -1L);
	printf("CPU, ms (this process; the cluster):");
	for (k = 0; k < WSR_NMODES; k++)
		printf(" %s %.1f; %.1f%s", wsr_names[k], mcpu[k] / 1e6, msrv[k] / 1e6,
		       k + 1 < WSR_NMODES ? "," : "\n");
	qsort(bcpu, repeat, sizeof(double), cmp_double);
	qsort(bsrv, repeat, sizeof(double), cmp_double);
	qsort(bwall, repeat, sizeof(double), cmp_double);
	qsort(best, repeat, sizeof(double), cmp_double);
	qsort(mrep, repeat, sizeof(double), cmp_double);
	printf("redis  minimal prefetch loop: %.1f ms CPU (%.1f ms elapsed), the cluster %.1f ms; "
	       "best replay on %ld CPUs %.1f ms: lazy/best %.2fx; ufault's replay over the "
	       "minimal loop's (best/replay, median of the rounds') %.2fx %s [rounds %.2f-%.2f]\n",
	       bcpu[repeat / 2] / 1e6, bwall[repeat / 2] / 1e6, bsrv[repeat / 2] / 1e6, ncpu,
	       best[repeat / 2] / 1e6, med[WSR_LAZY] / best[repeat / 2], paired,
	       o->quick ? "" : "(>= 0.9) info", lo, hi);
	printf("redis  minimal replay, measured: %.1f ms, %" PRIu64 " touches served by its "
	       "handler (last round); ufault's replay over it (minimal/replay, median of the "
	       "rounds') %.2fx %s\n", mrep[repeat / 2] / 1e6, mrep_faults, mpaired,
	       o->quick ? "" : "(>= 0.9) info");
	printf("redis  reads the cluster served (last round): ufault's replay %ld HMGETs, "
	       "%ld HGETs; the minimal replay's %ld HMGETs, %ld HGETs; %zu recorded runs\n",
	       rreads.hmget, rreads.hget, mreads.hmget, mreads.hget, items);
	printf("(minimal prefetch loop: one thread, an HMGET per recorded run, 64 in flight, a "
	       "UFFDIO_COPY and a MADV_POPULATE_READ each, timed in each round after its "
	       "replay; best replay: the touches alone, the loop's CPU and the cluster's shared "
	       "by the CPUs, at least the touches alone; minimal replay, measured: the loop in a "
	       "thread started with the touches, a minimal handler serving the touches that "
	       "come first with an HGET each, timed as the replay, in the same rounds)\n");
	status = !o->quick && (up < 10 || cost > 1.3) && o->check ? EXIT_MISS : 0;
out:
	if (sb.object_made && (ret = uf_redis_remove(sb.url)))
		fprintf(stderr, "ufault-bench: uf_redis_remove: %s\n", strerror(-ret));
	unlink(rec);
	uf_mm_destroy(sb.mm);
	free(order);
	free(starts);
	free(lens);
	free(ns);
	free(cpu);
	free(srv);
	free(mrep);
	free(bcpu);
	free(bsrv);
	free(bwall);
	free(best);
	return status;
}

/* ------------------------------------------------------------------ */
/* Entry                                                               */
/* ------------------------------------------------------------------ */

int bench_redis_main(const struct bench_redis_opts *o)
{
	struct rcluster *rc = calloc(1, sizeof(*rc));
	int ret, status;

	if (!rc)
		return EXIT_ERR;
	ret = rc_open(rc, o->url);
	if (ret) {
		fprintf(stderr, "ufault-bench: %s: %s\n", o->url, rc->err);
		free(rc);
		return EXIT_ERR;
	}
	if (o->only && !strcmp(o->only, "layout"))
		status = run_layout(rc, o);
	else if (o->only && !strcmp(o->only, "ws"))
		status = run_ws(rc, o);
	else
		status = run_store(rc, o);
	rc_close(rc);
	free(rc);
	return status;
}
