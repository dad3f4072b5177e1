// SPDX-License-Identifier: MIT
/*
 * The Redis store: uf_store_ops over a Redis Cluster, uf_redis_open() and
 * uf_redis_remove(), and the writer's lease.
 *
 * Layout (measured against one key per page and one string per extent,
 * see the README): extent E of object NAME is the hash uf:{NAME:E}:x,
 * field i holding page E*512+i.  So a readahead window (at most 512 pages)
 * is one HMGET to one node, a page never written is no field, truncate and
 * punch-hole HDEL fields or UNLINK whole extents, and the metadata hash
 * uf:{NAME}:m (size, hwm) and the lease uf:{NAME}:l share their own slot.
 *
 * hwm ("high water mark") is the largest size whose pages may still be in
 * the cluster: a shrink sets size first and hwm after its pages are gone,
 * so a writer that dies in between leaves no old page for a later grow to
 * bring back.
 *
 * Lock order: st->lock is never held across a cluster operation.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "ufault-redis.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define BATCH_EXTENTS	1024	/* extents per cluster operation (deletes) */
#define BATCH_DATA	8	/* ... that carry pages: at most 16 MiB in flight */

struct rstore {
	struct rc_cluster *cl;
	char name[RC_NAME_MAX + 1];
	size_t namelen;
	char meta[RC_NAME_MAX + 16], lease[RC_NAME_MAX + 16];
	size_t metalen, leaselen;
	int replicas;
	unsigned int timeout_ms, lease_ms;
	char token[40];
	bool rw;

	pthread_mutex_t lock;		/* the fields below */
	pthread_cond_t cond;
	bool stop, renewing;
	bool lease_lost;
	uint64_t hwm;
	pthread_t renewer;

	/* read-ahead of the store's own: the window after a sequential read,
	 * sent before that read returns (see rs_read()) */
	uint64_t win_end;		/* the page after the last window read */
	struct rc_pending *pf;		/* sent, replies unread; or NULL */
	uint64_t pf_first, pf_n;
	unsigned int changing;		/* writes, truncates, punches under way */
	uint64_t change_gen;		/* +1 as each starts and ends */
};

static const char *const renew_script =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
static const char *const release_script =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

/* Field names "0".."511": built once, read-only after. */
static char field_names[RC_EXTENT_PAGES][4];
static size_t field_lens[RC_EXTENT_PAGES];
static pthread_once_t fields_once = PTHREAD_ONCE_INIT;

static void fields_init(void)
{
	unsigned int i;

	for (i = 0; i < RC_EXTENT_PAGES; i++)
		field_lens[i] = (size_t)snprintf(field_names[i], sizeof(field_names[i]), "%u", i);
}

static uint64_t pages_of(uint64_t bytes)
{
	return bytes / RC_PAGE + (bytes % RC_PAGE != 0);
}

/* ------------------------------------------------------------------ */
/* Commands over extents                                               */
/* ------------------------------------------------------------------ */

enum ext_op { EXT_READ, EXT_WRITE, EXT_DELETE };

/* Commands for a run of pages, one per extent, with their arguments. */
struct ext_batch {
	struct rc_cmd *cmds;
	size_t n;
	const char **argv;
	size_t *argvlen;
	char *keys;
};

static void batch_free(struct ext_batch *b)
{
	rc_cmds_clear(b->cmds, b->n);
	free(b->cmds);
	free(b->argv);
	free(b->argvlen);
	free(b->keys);
	memset(b, 0, sizeof(*b));
}

static size_t extent_key(const struct rstore *st, uint64_t ext, char *buf, size_t cap)
{
	return (size_t)snprintf(buf, cap, "uf:{%s:%" PRIu64 "}:x", st->name, ext);
}

/*
 * Build the commands for pages [@first, @first + @npages) (at most
 * BATCH_EXTENTS extents): HMGET into @data (@len bytes; NULL: replies
 * dropped), HSET from @data
 * (@len bytes, the last page may be short), or HDEL / UNLINK.
 */
static int batch_build(struct rstore *st, struct ext_batch *b, enum ext_op op,
		       uint64_t first, uint64_t npages, char *data, size_t len)
{
	uint64_t e0 = first / RC_EXTENT_PAGES, e1 = (first + npages - 1) / RC_EXTENT_PAGES;
	size_t next = (size_t)(e1 - e0 + 1), keycap = st->namelen + 32, nargs, a = 0, i;
	uint64_t p = first, end = first + npages;

	memset(b, 0, sizeof(*b));
	nargs = next * 2 + (size_t)npages * (op == EXT_WRITE ? 2 : 1);
	b->cmds = calloc(next, sizeof(*b->cmds));
	b->argv = malloc(nargs * sizeof(*b->argv));
	b->argvlen = malloc(nargs * sizeof(*b->argvlen));
	b->keys = malloc(next * keycap);
	if (!b->cmds || !b->argv || !b->argvlen || !b->keys) {
		batch_free(b);
		return -ENOMEM;
	}
	for (i = 0; i < next; i++) {
		static const char *const verbs[] = { "HMGET", "HSET", "HDEL" };
		uint64_t ext = e0 + i, eend = (ext + 1) * RC_EXTENT_PAGES;
		uint64_t stop = eend < end ? eend : end;
		struct rc_cmd *cmd = &b->cmds[i];
		char *key = b->keys + i * keycap;
		size_t klen = extent_key(st, ext, key, keycap);
		bool whole = op == EXT_DELETE && p == ext * RC_EXTENT_PAGES && stop == eend;

		cmd->argv = b->argv + a;
		cmd->argvlen = b->argvlen + a;
		b->argv[a] = whole ? "UNLINK" : verbs[op];
		b->argvlen[a] = strlen(b->argv[a]);
		a++;
		b->argv[a] = key;
		b->argvlen[a++] = klen;
		if (op == EXT_READ && data) {
			size_t off = (size_t)(p - first) * RC_PAGE;

			cmd->dest = data + off;
			cmd->destlen = len - off < (stop - p) * RC_PAGE ? len - off :
				       (size_t)(stop - p) * RC_PAGE;
		}
		for (; p < stop; p++) {
			unsigned int f = (unsigned int)(p % RC_EXTENT_PAGES);
			size_t off = (size_t)(p - first) * RC_PAGE;

			if (whole)
				continue;
			b->argv[a] = field_names[f];
			b->argvlen[a++] = field_lens[f];
			if (op == EXT_WRITE) {
				b->argv[a] = data + off;
				b->argvlen[a++] = len - off < RC_PAGE ? len - off : RC_PAGE;
			}
		}
		cmd->argc = (int)(b->argv + a - cmd->argv);
	}
	b->n = next;
	return 0;
}

/* Every reply must be of @type (or an integer for UNLINK). */
static int batch_check(struct ext_batch *b, int type)
{
	size_t i;
	int ret = 0;

	for (i = 0; !ret && i < b->n; i++) {
		redisReply *r = b->cmds[i].reply;

		if (!r)
			ret = -EIO;
		else if (r->type == REDIS_REPLY_ERROR)
			ret = rc_reply_errno(r);
		else if (r->type != type && r->type != REDIS_REPLY_INTEGER)
			ret = -EIO;
	}
	return ret;
}

/* Run a batch; every reply must be of @type (or an integer for UNLINK). */
static int batch_run(struct rstore *st, struct ext_batch *b, int replicas, int type)
{
	int ret = rc_exec(st->cl, b->cmds, b->n, replicas, st->timeout_ms);

	return ret ? ret : batch_check(b, type);
}

/* Do @op over pages [@first, @first + @npages), in batches. */
static int extents_do(struct rstore *st, enum ext_op op, uint64_t first, uint64_t npages,
		      char *data, size_t len, int replicas)
{
	while (npages) {
		uint64_t room = (first / RC_EXTENT_PAGES + (data ? BATCH_DATA : BATCH_EXTENTS)) *
				RC_EXTENT_PAGES - first;
		uint64_t n = npages < room ? npages : room;
		size_t blen = data ? (len < n * RC_PAGE ? len : (size_t)(n * RC_PAGE)) : 0;
		struct ext_batch b;
		int ret = batch_build(st, &b, op, first, n, data, blen);

		if (ret)
			return ret;
		ret = batch_run(st, &b, replicas, op == EXT_READ ? REDIS_REPLY_ARRAY : REDIS_REPLY_INTEGER);
		batch_free(&b);
		if (ret)
			return ret;
		first += n;
		npages -= n;
		if (data) {
			data += blen;
			len -= blen;
		}
	}
	return 0;
}

/* One command on its own; *rp gets the reply (caller frees) when rp. */
static int one(struct rstore *st, int replicas, redisReply **rp, int argc, const char **argv)
{
	size_t lens[8];
	struct rc_cmd cmd = { .argc = argc, .argv = argv, .argvlen = lens };
	int i, ret;

	for (i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	ret = rc_exec(st->cl, &cmd, 1, replicas, st->timeout_ms);
	if (!ret && cmd.reply->type == REDIS_REPLY_ERROR)
		ret = rc_reply_errno(cmd.reply);
	if (!ret && rp) {
		*rp = cmd.reply;
		cmd.reply = NULL;
	}
	rc_cmds_clear(&cmd, 1);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Pages, size, metadata                                               */
/* ------------------------------------------------------------------ */

/* Zero bytes [@from, @to) of page @pg where it is stored (edges of a punch
 * or truncate); a page shortened to @from when @to is past its end. */
static int page_zero(struct rstore *st, uint64_t pg, size_t from, size_t to)
{
	char key[RC_NAME_MAX + 48], page[RC_PAGE];
	const char *argv[4] = { "HGET", key, field_names[pg % RC_EXTENT_PAGES] };
	size_t lens[4];
	struct rc_cmd cmd = { .argc = 4, .argv = argv, .argvlen = lens };
	redisReply *r = NULL;
	size_t vlen;
	int ret;

	extent_key(st, pg / RC_EXTENT_PAGES, key, sizeof(key));
	ret = one(st, 0, &r, 3, argv);
	if (ret)
		return ret;
	if (r->type != REDIS_REPLY_STRING || (size_t)r->len <= from) {
		freeReplyObject(r);	/* nothing stored there */
		return 0;
	}
	vlen = (size_t)r->len > RC_PAGE ? RC_PAGE : (size_t)r->len;
	memcpy(page, r->str, vlen);
	freeReplyObject(r);
	if (to >= vlen) {
		vlen = from;
	} else {
		memset(page + from, 0, to - from);
	}
	argv[0] = "HSET";
	argv[3] = page;
	lens[0] = 4;
	lens[1] = strlen(key);
	lens[2] = strlen(argv[2]);
	lens[3] = vlen;
	ret = rc_exec(st->cl, &cmd, 1, st->replicas, st->timeout_ms);
	if (!ret && cmd.reply->type == REDIS_REPLY_ERROR)
		ret = rc_reply_errno(cmd.reply);
	rc_cmds_clear(&cmd, 1);
	return ret;
}

static int meta_set(struct rstore *st, uint64_t size, uint64_t hwm)
{
	char s[24], h[24];
	const char *argv[] = { "HSET", st->meta, "size", s, "hwm", h };

	snprintf(s, sizeof(s), "%" PRIu64, size);
	snprintf(h, sizeof(h), "%" PRIu64, hwm);
	return one(st, st->replicas, NULL, 6, argv);
}

static int meta_get(struct rstore *st, uint64_t *size, uint64_t *hwm)
{
	const char *argv[] = { "HMGET", st->meta, "size", "hwm" };
	redisReply *r = NULL;
	int ret = one(st, 0, &r, 4, argv);

	if (ret)
		return ret;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
		ret = -EIO;
	else if (r->element[0]->type != REDIS_REPLY_STRING)
		ret = -ENOENT;
	else {
		*size = strtoull(r->element[0]->str, NULL, 10);
		*hwm = r->element[1]->type == REDIS_REPLY_STRING ?
			strtoull(r->element[1]->str, NULL, 10) : *size;
		if (*hwm < *size)
			*hwm = *size;
	}
	freeReplyObject(r);
	return ret;
}

/* Delete the pages in [@from, @to) bytes; a partial first page keeps its
 * bytes before @from.  A partial last page keeps its bytes from @to on,
 * unless @to_end: @to is the end of what is stored, and the page goes. */
static int drop_range(struct rstore *st, uint64_t from, uint64_t to, bool to_end)
{
	uint64_t first = pages_of(from), last = pages_of(to);
	int ret = 0;

	if (from >= to)
		return 0;
	if (from % RC_PAGE) {
		uint64_t pg = from / RC_PAGE;
		size_t end = to >= (pg + 1) * RC_PAGE ? RC_PAGE : (size_t)(to % RC_PAGE);

		ret = page_zero(st, pg, (size_t)(from % RC_PAGE), end);
		if (ret)
			return ret;
	}
	if (to % RC_PAGE && to / RC_PAGE >= first && !to_end) {
		last = to / RC_PAGE;	/* the partial last page keeps its tail */
		ret = page_zero(st, last, 0, (size_t)(to % RC_PAGE));
		if (ret)
			return ret;
	}
	if (last > first)
		ret = extents_do(st, EXT_DELETE, first, last - first, NULL, 0, st->replicas);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The lease                                                           */
/* ------------------------------------------------------------------ */

static int lease_take(struct rstore *st)
{
	char ms[16];
	const char *set[] = { "SET", st->lease, st->token, "NX", "PX", ms };
	const char *get[] = { "GET", st->lease };
	redisReply *r = NULL;
	int ret;

	snprintf(ms, sizeof(ms), "%u", st->lease_ms);
	ret = one(st, st->replicas, &r, 6, set);
	if (ret)
		return ret;
	if (r->type == REDIS_REPLY_STATUS) {
		freeReplyObject(r);
		return 0;
	}
	freeReplyObject(r);
	/* taken: by us, when a lost connection made us send the SET twice? */
	ret = one(st, 0, &r, 2, get);
	if (ret)
		return ret;
	ret = r->type == REDIS_REPLY_STRING && !strcmp(r->str, st->token) ? 0 : -EBUSY;
	freeReplyObject(r);
	return ret;
}

/* Run a lease script (routed by the lease key, argv[3]).  Return its
 * integer result, or -errno. */
static int lease_script(struct rstore *st, const char *script, int replicas,
			unsigned int timeout_ms)
{
	char ms[16];
	const char *argv[] = { "EVAL", script, "1", st->lease, st->token, ms };
	size_t lens[6];
	struct rc_cmd cmd = { .argc = 6, .keyarg = 3, .argv = argv, .argvlen = lens };
	int i, ret;

	snprintf(ms, sizeof(ms), "%u", st->lease_ms);
	for (i = 0; i < 6; i++)
		lens[i] = strlen(argv[i]);
	ret = rc_exec(st->cl, &cmd, 1, replicas, timeout_ms);
	if (!ret)
		ret = cmd.reply->type == REDIS_REPLY_INTEGER ? (int)cmd.reply->integer :
		      rc_reply_errno(cmd.reply) ? rc_reply_errno(cmd.reply) : -EIO;
	rc_cmds_clear(&cmd, 1);
	return ret;
}

/*
 * 1: renewed, 0: lost (someone else's or expired), or -errno.  No WAIT: a
 * shard whose replica is gone must not cost the writer its lease, and a
 * renewal lost in a failover only makes the lease expire sooner, which the
 * next renewal notices (it finds the key gone or not ours).
 */
static int lease_renew(struct rstore *st, unsigned int timeout_ms)
{
	return lease_script(st, renew_script, 0, timeout_ms);
}

static void lease_release(struct rstore *st)
{
	/* a lease we cannot release expires by itself */
	lease_script(st, release_script, 0, st->timeout_ms < 2000 ? st->timeout_ms : 2000);
}

static struct timespec abs_after_ms(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Renew the lease every third of its expiry while the object lives.  A
 * lease found gone or not renewed for a whole expiry is lost: later writes
 * fail with -EBUSY rather than overwrite another writer. */
static void *renewer(void *arg)
{
	struct rstore *st = arg;
	unsigned int period = st->lease_ms / 3;
	int64_t last_ok = mono_ms();

	pthread_mutex_lock(&st->lock);
	while (!st->stop) {
		struct timespec ts = abs_after_ms(period);
		int r;

		pthread_cond_timedwait(&st->cond, &st->lock, &ts);
		if (st->stop)
			break;
		pthread_mutex_unlock(&st->lock);
		r = lease_renew(st, period);
		pthread_mutex_lock(&st->lock);
		if (r == 1)
			last_ok = mono_ms();
		else if (r == 0 || mono_ms() - last_ok >= st->lease_ms)
			st->lease_lost = true;
	}
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static bool lease_lost(struct rstore *st)
{
	bool lost;

	pthread_mutex_lock(&st->lock);
	lost = st->lease_lost;
	pthread_mutex_unlock(&st->lock);
	return lost;
}

/* ------------------------------------------------------------------ */
/* Store methods                                                       */
/* ------------------------------------------------------------------ */

/*
 * The store's read-ahead.  The core reads a sequential stream a window at
 * a time, each read followed by its copy into the mapping, so the cluster
 * would sit idle while the core copies.  So a read of a window (at least
 * PF_MIN pages) that starts where the window read before it ended, or
 * up to PF_GAP pages after (the core leaves the first page of a background
 * window to the reader's own fault, its readahead marker), sends the
 * HMGETs of the next window, as far on and as long, before it returns; the
 * read of that window (by any thread) then finds its replies computed and
 * on their way.  Reads of fewer pages (single faults, markers) pass it by;
 * a window read it does not serve, a write, a truncate or a punch drops it
 * (read and thrown away), and a reply that is an error makes the read go
 * the usual way.
 */
#define PF_MIN	16
#define PF_GAP	1

/* Read and drop what the pending read-ahead @p brings (it is at most
 * BATCH_DATA commands).  Locking: st->lock not held. */
static void pf_drain(struct rstore *st, struct rc_pending *p)
{
	struct rc_cmd none[BATCH_DATA];

	if (!p)
		return;
	memset(none, 0, sizeof(none));
	rc_recv(st->cl, p, none);
	rc_cmds_clear(none, BATCH_DATA);
}

/*
 * A change of the stored pages starts (@start) or ends.  The pending
 * read-ahead goes as one starts, and none is kept that was sent while one
 * was under way: its bytes may be older than the change.
 */
static void pf_change(struct rstore *st, bool start)
{
	struct rc_pending *p = NULL;

	pthread_mutex_lock(&st->lock);
	st->changing += start ? 1 : -1;
	st->change_gen++;
	if (start) {
		p = st->pf;
		st->pf = NULL;
	}
	pthread_mutex_unlock(&st->lock);
	pf_drain(st, p);
}

/*
 * For a read of pages [@first, @first + @npages) into @buf (@len bytes):
 * when the pending read-ahead lies inside it, its pages go to their place
 * in @buf and *pfirst, *pn say which they are (*pn 0: none).  A window
 * read (PF_MIN pages or more) that it does not serve drops it.
 */
static void pf_take(struct rstore *st, uint64_t first, uint64_t npages, char *buf, size_t len,
		    uint64_t *pfirst, uint64_t *pn)
{
	struct rc_pending *p = NULL;
	struct ext_batch b;
	uint64_t f = 0, n = 0;
	bool use = false;
	size_t off, blen;

	*pn = 0;
	pthread_mutex_lock(&st->lock);
	if (st->pf) {
		f = st->pf_first;
		n = st->pf_n;
		use = f >= first && f + n <= first + npages;
		if (use || npages >= PF_MIN) {
			p = st->pf;
			st->pf = NULL;
		}
	}
	pthread_mutex_unlock(&st->lock);
	if (!p)
		return;
	off = (size_t)(f - first) * RC_PAGE;
	blen = off >= len ? 0 : len - off < n * RC_PAGE ? len - off : (size_t)(n * RC_PAGE);
	if (!use || !blen || batch_build(st, &b, EXT_READ, f, n, buf + off, blen)) {
		pf_drain(st, p);
		return;
	}
	if (!rc_recv(st->cl, p, b.cmds) && !batch_check(&b, REDIS_REPLY_ARRAY)) {
		*pfirst = f;
		*pn = n;
	}
	batch_free(&b);
}

/* After a read of [@first, @first + @n): send the next window's HMGETs
 * when the read was a window of a sequential stream. */
static void pf_next(struct rstore *st, uint64_t first, uint64_t n)
{
	uint64_t next, hwm_pages, gen, last, end = first + n;
	struct rc_pending *p = NULL, *old;
	struct ext_batch b;
	bool changing;

	if (n < PF_MIN)
		return;
	pthread_mutex_lock(&st->lock);
	last = st->win_end;
	st->win_end = end;
	hwm_pages = pages_of(st->hwm);
	gen = st->change_gen;
	changing = st->changing;
	pthread_mutex_unlock(&st->lock);
	if (changing || last == UINT64_MAX || first < last || first - last > PF_GAP)
		return;
	next = first + n + (first - last);
	if (next >= hwm_pages)
		return;
	if (n > hwm_pages - next)
		n = hwm_pages - next;
	/* one batch at most: BATCH_DATA extents */
	if (next / RC_EXTENT_PAGES + BATCH_DATA < (next + n - 1) / RC_EXTENT_PAGES + 1)
		return;
	if (batch_build(st, &b, EXT_READ, next, n, NULL, 0))
		return;
	if (rc_send(st->cl, b.cmds, b.n, st->timeout_ms, &p))
		p = NULL;
	batch_free(&b);
	if (!p)
		return;
	pthread_mutex_lock(&st->lock);
	old = st->pf;
	if (st->change_gen == gen && st->win_end == end) {
		st->pf = p;
		st->pf_first = next;
		st->pf_n = n;
		p = NULL;
	} else {
		old = NULL;
	}
	pthread_mutex_unlock(&st->lock);
	pf_drain(st, old);	/* another's, never taken */
	pf_drain(st, p);	/* another read or a change came meanwhile */
}

static ssize_t rs_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct rstore *st = store;
	uint64_t first = off / RC_PAGE, npages = pages_of(len), pf = 0, pn = 0;
	size_t head, tail;
	int ret = 0;

	if (!len)
		return 0;
	pf_take(st, first, npages, buf, len, &pf, &pn);
	if (!pn) {
		ret = extents_do(st, EXT_READ, first, npages, buf, len, 0);
	} else {
		/* the pages before and after the read-ahead's */
		head = (size_t)(pf - first) * RC_PAGE;
		tail = (size_t)(pf + pn - first) * RC_PAGE;
		if (head)
			ret = extents_do(st, EXT_READ, first, pf - first, buf, head, 0);
		if (!ret && tail < len)
			ret = extents_do(st, EXT_READ, pf + pn, first + npages - pf - pn,
					 (char *)buf + tail, len - tail, 0);
	}
	if (ret)
		return ret;
	pf_next(st, first, npages);
	return (ssize_t)len;
}

/* One page of a batched read (rs_readv()): its extent and field, where
 * it goes, and its place in the call, which keeps the sort stable. */
struct readv_page {
	uint64_t ext;
	unsigned int field;
	size_t order;
	struct rc_dest dest;
};

static int readv_page_cmp(const void *a, const void *b)
{
	const struct readv_page *x = a, *y = b;

	if (x->ext != y->ext)
		return x->ext < y->ext ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Many extents in one go (->readv of struct uf_store_ops: a working-set
 * prefetch): one HMGET per extent for all the pages of the call that lie
 * in it, whichever pieces they belong to, all sent before any reply is
 * read, each node's in one pipeline.  So a batch of runs and single
 * pages costs one round trip, and the cluster one command per extent
 * rather than one per piece.  The store's own read-ahead is left alone.
 */
static int rs_readv(void *store, const struct uf_store_iov *iov, size_t n)
{
	struct rstore *st = store;
	size_t npages = 0, ncmds = 0, keycap = st->namelen + 32, a = 0, i, k;
	struct readv_page *pg;
	struct rc_dest *dests = NULL;
	struct rc_cmd *cmds = NULL;
	const char **argv = NULL;
	size_t *argvlen = NULL;
	char *keys = NULL;
	int ret = -ENOMEM;

	for (i = 0; i < n; i++)
		npages += pages_of(iov[i].len);
	if (!npages)
		return 0;
	pg = malloc(npages * sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	for (i = 0, k = 0; i < n; i++) {
		uint64_t first = iov[i].off / RC_PAGE, j;

		for (j = 0; j < pages_of(iov[i].len); j++, k++) {
			size_t off = (size_t)j * RC_PAGE;

			pg[k].ext = (first + j) / RC_EXTENT_PAGES;
			pg[k].field = (unsigned int)((first + j) % RC_EXTENT_PAGES);
			pg[k].order = k;
			pg[k].dest.buf = (char *)iov[i].buf + off;
			pg[k].dest.len = iov[i].len - off < RC_PAGE ? iov[i].len - off : RC_PAGE;
		}
	}
	qsort(pg, npages, sizeof(*pg), readv_page_cmp);
	for (k = 0; k < npages; k++)
		ncmds += !k || pg[k].ext != pg[k - 1].ext;
	cmds = calloc(ncmds, sizeof(*cmds));
	dests = malloc(npages * sizeof(*dests));
	argv = malloc((2 * ncmds + npages) * sizeof(*argv));
	argvlen = malloc((2 * ncmds + npages) * sizeof(*argvlen));
	keys = malloc(ncmds * keycap);
	if (!cmds || !dests || !argv || !argvlen || !keys)
		goto out;
	for (i = 0, k = 0; k < npages; i++) {
		struct rc_cmd *cmd = &cmds[i];
		char *key = keys + i * keycap;
		uint64_t ext = pg[k].ext;

		cmd->argv = argv + a;
		cmd->argvlen = argvlen + a;
		argv[a] = "HMGET";
		argvlen[a++] = 5;
		argv[a] = key;
		argvlen[a++] = extent_key(st, ext, key, keycap);
		cmd->dests = dests + k;
		for (; k < npages && pg[k].ext == ext; k++) {
			argv[a] = field_names[pg[k].field];
			argvlen[a++] = field_lens[pg[k].field];
			dests[k] = pg[k].dest;
			cmd->ndests++;
		}
		cmd->argc = (int)(argv + a - cmd->argv);
	}
	ret = rc_exec(st->cl, cmds, ncmds, 0, st->timeout_ms);
	for (i = 0; !ret && i < ncmds; i++) {
		redisReply *r = cmds[i].reply;

		if (!r)
			ret = -EIO;
		else if (r->type == REDIS_REPLY_ERROR)
			ret = rc_reply_errno(r);
		else if (r->type != REDIS_REPLY_ARRAY)
			ret = -EIO;
	}
	rc_cmds_clear(cmds, ncmds);
out:
	free(keys);
	free(argvlen);
	free(argv);
	free(dests);
	free(cmds);
	free(pg);
	return ret;
}

static int rs_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct rstore *st = store;
	int ret;

	if (lease_lost(st))
		return -EBUSY;
	if (!len)
		return 0;
	pf_change(st, true);
	/* the bytes are only read: HSET arguments point into @buf */
	ret = extents_do(st, EXT_WRITE, off / RC_PAGE, pages_of(len), (char *)buf, len,
			 st->replicas);
	pf_change(st, false);
	return ret;
}

static int truncate_pages(struct rstore *st, uint64_t size)
{
	uint64_t cur, hwm;
	int ret;

	ret = meta_get(st, &cur, &hwm);
	if (ret)
		return ret == -ENOENT ? -EIO : ret;
	if (size < cur) {
		/* size first, so nothing past it is ever shown again */
		ret = meta_set(st, size, hwm);
		if (!ret)
			ret = drop_range(st, size, hwm, true);
		if (!ret)
			ret = meta_set(st, size, size);
	} else {
		/* pages a failed shrink left behind must not come back */
		ret = drop_range(st, cur, hwm, true);
		if (!ret)
			ret = meta_set(st, size, size);
	}
	if (!ret) {
		pthread_mutex_lock(&st->lock);
		st->hwm = size;
		pthread_mutex_unlock(&st->lock);
	}
	return ret;
}

static int rs_truncate(void *store, uint64_t size)
{
	struct rstore *st = store;
	int ret;

	if (lease_lost(st))
		return -EBUSY;
	pf_change(st, true);
	ret = truncate_pages(st, size);
	pf_change(st, false);
	return ret;
}

static int rs_punch_hole(void *store, uint64_t off, uint64_t len)
{
	struct rstore *st = store;
	int ret;

	if (lease_lost(st))
		return -EBUSY;
	pf_change(st, true);
	ret = drop_range(st, off, off + len, false);
	pf_change(st, false);
	return ret;
}

/* Every write already waited for its replicas: what is left to say is
 * whether this writer still holds the lease. */
static int rs_sync(void *store)
{
	return lease_lost(store) ? -EBUSY : 0;
}

static void store_free(struct rstore *st)
{
	pf_change(st, true);	/* the pending read-ahead goes */
	if (st->renewing) {
		pthread_mutex_lock(&st->lock);
		st->stop = true;
		pthread_cond_signal(&st->cond);
		pthread_mutex_unlock(&st->lock);
		pthread_join(st->renewer, NULL);
	}
	if (st->rw)
		lease_release(st);
	rc_cluster_free(st->cl);
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static void rs_release(void *store)
{
	store_free(store);
}

static const struct uf_store_ops redis_rw_ops = {
	.size		= sizeof(struct uf_store_ops),
	.read		= rs_read,
	.readv		= rs_readv,
	.write		= rs_write,
	.truncate	= rs_truncate,
	.punch_hole	= rs_punch_hole,
	.sync		= rs_sync,
	.release	= rs_release,
};

/* Read-only: no ->write, so the object is read-only. */
static const struct uf_store_ops redis_ro_ops = {
	.size		= sizeof(struct uf_store_ops),
	.read		= rs_read,
	.readv		= rs_readv,
	.release	= rs_release,
};

/* ------------------------------------------------------------------ */
/* Open and remove                                                     */
/* ------------------------------------------------------------------ */

static int store_new(const char *url, bool rw, struct rstore **stp)
{
	struct rc_config cfg;
	struct rstore *st;
	pthread_condattr_t ca;
	unsigned char rnd[16];
	int ret, i;

	pthread_once(&fields_once, fields_init);
	ret = rc_parse_url(url, &cfg);
	if (ret)
		return ret;
	st = calloc(1, sizeof(*st));
	if (!st) {
		rc_config_free(&cfg);
		return -ENOMEM;
	}
	pthread_mutex_init(&st->lock, NULL);
	uf_lockdep_class(&st->lock, UF_LK_STORE);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->cond, &ca);
	pthread_condattr_destroy(&ca);
	st->rw = false;		/* set once the lease is ours */
	st->win_end = UINT64_MAX;
	st->timeout_ms = cfg.timeout_ms;
	st->lease_ms = cfg.lease_ms;
	ret = rc_cluster_new(&cfg, &st->cl);
	if (ret) {
		rc_config_free(&cfg);
		store_free(st);
		return ret;
	}
	st->replicas = cfg.replicas >= 0 ? cfg.replicas : rc_cluster_has_replicas(st->cl) ? 1 : 0;
	st->namelen = strlen(cfg.name);
	memcpy(st->name, cfg.name, st->namelen + 1);
	st->metalen = (size_t)snprintf(st->meta, sizeof(st->meta), "uf:{%s}:m", cfg.name);
	st->leaselen = (size_t)snprintf(st->lease, sizeof(st->lease), "uf:{%s}:l", cfg.name);
	rc_config_free(&cfg);
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		memcpy(rnd, &ts, sizeof(ts) < sizeof(rnd) ? sizeof(ts) : sizeof(rnd));
	}
	for (i = 0; i < 16; i++)
		snprintf(st->token + 2 * i, 3, "%02x", rnd[i]);
	if (rw) {
		ret = lease_take(st);
		if (ret) {
			store_free(st);
			return ret;
		}
		st->rw = true;
	}
	*stp = st;
	return 0;
}

RC_EXPORT int uf_redis_open(struct uf_mm *mm, const char *url, int oflags, struct uf_object **objp)
{
	int acc = oflags & O_ACCMODE;
	struct rstore *st;
	uint64_t size = 0, hwm = 0;
	int ret;

	if (!mm || !url || !objp || (acc != O_RDONLY && acc != O_RDWR) ||
	    (oflags & ~(O_ACCMODE | O_CREAT)))
		return -EINVAL;
	ret = store_new(url, acc == O_RDWR, &st);
	if (ret)
		return ret;
	ret = meta_get(st, &size, &hwm);
	if (ret == -ENOENT && (oflags & O_CREAT)) {
		const char *argv[] = { "HSETNX", st->meta, "size", "0" };

		ret = one(st, st->replicas, NULL, 4, argv);
		if (!ret)
			ret = meta_get(st, &size, &hwm);
	}
	if (ret)
		goto fail;
	st->hwm = hwm;
	if (st->rw) {
		ret = -pthread_create(&st->renewer, NULL, renewer, st);
		if (ret)
			goto fail;
		st->renewing = true;
	}
	ret = uf_object_create(mm, st->rw ? &redis_rw_ops : &redis_ro_ops, st, size, objp);
	if (ret)
		goto fail;
	return 0;
fail:
	store_free(st);
	return ret;
}

RC_EXPORT int uf_redis_remove(const char *url)
{
	struct rstore *st;
	uint64_t size, hwm;
	int ret;

	if (!url)
		return -EINVAL;
	pthread_once(&fields_once, fields_init);
	ret = store_new(url, true, &st);
	if (ret)
		return ret;
	ret = meta_get(st, &size, &hwm);
	if (!ret)
		ret = meta_set(st, 0, hwm);	/* empty first: a crash leaves a valid object */
	if (!ret)
		ret = drop_range(st, 0, hwm, true);
	if (!ret) {
		const char *argv[] = { "UNLINK", st->meta };

		ret = one(st, st->replicas, NULL, 2, argv);
	}
	store_free(st);
	return ret;
}
