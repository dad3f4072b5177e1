// SPDX-License-Identifier: MIT
/*
 * A Redis Cluster client on hiredis 0.14, which has no cluster routing:
 * the slot of a key, the slot map (CLUSTER NODES: CLUSTER SLOTS leaves out
 * replicas that have not synced yet), MOVED, ASK + ASKING, and retries
 * with back-off through TRYAGAIN, CLUSTERDOWN and lost connections inside
 * a time budget.
 *
 * Connections: a cluster keeps a pool of clients; an operation takes one
 * for its whole length, so each thread running an operation at a time has
 * its own connection to each node it talks to (a handler thread keeps
 * getting the pool's clients back, connected), and WAIT on a connection
 * covers exactly the writes that operation sent on it.
 *
 * Buffers: commands are written with writev() straight from the caller's
 * pages (a fresh multi-megabyte buffer per call costs 6-15x here), and
 * HMGET replies are parsed here, not by hiredis, from a kept buffer per
 * connection filled in big reads (struct rc_in), each page copied once
 * into the caller's buffer (or read straight into it), so no reply object
 * holds page bytes.  Other replies are hiredis's; its reader keeps its
 * buffer between replies (maxbuf 0).
 *
 * Lock order: cl->pool_lock and cl->map_lock are never held together and
 * never across I/O.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES	1024
#define CONNECT_MS	1000	/* one connection attempt */
#define IO_MS		3000	/* a node that answers nothing this long is lost */
#define WAIT_MS		1000	/* one WAIT; repeated within the budget */
#define BACKOFF_MIN_MS	10
#define BACKOFF_MAX_MS	200
#define INLINE_ARG	128	/* arguments up to this are copied, longer ones sent in place */
#define RBUF		(256 * 1024)	/* one read(): hiredis reads 16 KiB, and a 2 MiB
					   reply in 16 KiB reads costs twice as much here */

struct rc_node {
	char *host;
	int port;
};

/*
 * A connection's input for replies read with a sink (get_sink_reply()),
 * read from the socket in big reads and parsed in place.  What such a
 * read brings past the reply (the next pipelined replies) stays here for
 * the next one; hiredis's reader gets it only when a reply that is not a
 * sink's comes (get_reply()).  Handing it to the reader after each reply
 * and taking it back before the next copied it twice a reply: 165 MB for
 * a 4096-page prefetch of 2176 replies.
 */
struct rc_in {
	char *buf;
	size_t pos, len, cap;
};

struct rc_client {
	struct rc_cluster *cl;
	struct rc_client *next;		/* in the pool */
	redisContext **conns;		/* by node index */
	int *io_ms;			/* each one's socket timeout now */
	int nconns;
	/* the command being written: scratch bytes and segments */
	char *scratch;
	size_t slen, scap;
	struct seg { const char *ptr; size_t off, len; } *segs;	/* ptr NULL: scratch */
	size_t nsegs, segcap;
	struct iovec *iov;
	size_t iovcap;
	char *rbuf;			/* RBUF bytes, kept */
	struct rc_in *ins;		/* by node index, as @conns */
};

struct rc_cluster {
	struct rc_config cfg;

	pthread_mutex_t map_lock;	/* nodes, nnodes, slots, has_replicas */
	struct rc_node nodes[MAX_NODES];
	int nnodes;
	int16_t slots[RC_SLOTS];
	bool has_replicas;
	unsigned int refresh_from;	/* node to ask first next time */

	pthread_mutex_t pool_lock;
	struct rc_client *pool;
};

/* ------------------------------------------------------------------ */
/* Slots                                                               */
/* ------------------------------------------------------------------ */

/* CRC16/XMODEM, as the cluster specification gives it. */
static uint16_t crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

/* The slot of @key: of its {hash tag} when it has a non-empty one. */
unsigned int rc_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
		if (close && close > open + 1)
			return crc16(open + 1, (size_t)(close - open - 1)) & (RC_SLOTS - 1);
	}
	return crc16(key, len) & (RC_SLOTS - 1);
}

/* ------------------------------------------------------------------ */
/* Time                                                                */
/* ------------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static struct timeval tv_ms(int64_t ms)
{
	if (ms < 1)
		ms = 1;
	return (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
}

/* ------------------------------------------------------------------ */
/* Replies                                                             */
/* ------------------------------------------------------------------ */

static bool err_is(const redisReply *r, const char *word)
{
	size_t n = strlen(word);

	return r->len >= n && !memcmp(r->str, word, n) && (r->len == n || r->str[n] == ' ');
}

int rc_reply_errno(const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ERROR)
		return 0;
	if (err_is(r, "NOAUTH") || err_is(r, "WRONGPASS") || err_is(r, "NOPERM"))
		return -EACCES;
	if (err_is(r, "OOM"))
		return -ENOSPC;
	if (err_is(r, "MOVED") || err_is(r, "ASK") || err_is(r, "TRYAGAIN") ||
	    err_is(r, "CLUSTERDOWN") || err_is(r, "LOADING") || err_is(r, "MASTERDOWN") ||
	    err_is(r, "READONLY"))
		return -EAGAIN;
	if (strstr(r->str, "cluster support disabled"))
		return -EPROTO;
	return -EIO;
}


/* ------------------------------------------------------------------ */
/* Writing commands                                                    */
/* ------------------------------------------------------------------ */

static int scratch_add(struct rc_client *c, const void *p, size_t len)
{
	if (c->slen + len > c->scap) {
		size_t cap = c->scap ? c->scap : 4096;
		char *s;

		while (cap < c->slen + len)
			cap *= 2;
		s = realloc(c->scratch, cap);
		if (!s)
			return -ENOMEM;
		c->scratch = s;
		c->scap = cap;
	}
	memcpy(c->scratch + c->slen, p, len);
	c->slen += len;
	return 0;
}

/* Add a segment: @ptr NULL for the @len scratch bytes just added. */
static int seg_add(struct rc_client *c, const char *ptr, size_t len)
{
	struct seg *last = c->nsegs ? &c->segs[c->nsegs - 1] : NULL;

	if (!ptr && last && !last->ptr && last->off + last->len == c->slen - len) {
		last->len += len;
		return 0;
	}
	if (c->nsegs == c->segcap) {
		size_t cap = c->segcap ? 2 * c->segcap : 256;
		struct seg *s = realloc(c->segs, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->segs = s;
		c->segcap = cap;
	}
	c->segs[c->nsegs++] = (struct seg){ ptr, ptr ? 0 : c->slen - len, len };
	return 0;
}

static int put_text(struct rc_client *c, const char *fmt_prefix, size_t v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%s%zu\r\n", fmt_prefix, v);

	if (scratch_add(c, buf, (size_t)n))
		return -ENOMEM;
	return seg_add(c, NULL, (size_t)n);
}

/* Append one command in RESP to the segments. */
static int put_cmd(struct rc_client *c, int argc, const char **argv, const size_t *argvlen)
{
	int i;

	if (put_text(c, "*", (size_t)argc))
		return -ENOMEM;
	for (i = 0; i < argc; i++) {
		if (put_text(c, "$", argvlen[i]))
			return -ENOMEM;
		if (argvlen[i] <= INLINE_ARG) {
			if (scratch_add(c, argv[i], argvlen[i]) || scratch_add(c, "\r\n", 2) ||
			    seg_add(c, NULL, argvlen[i] + 2))
				return -ENOMEM;
		} else {
			if (seg_add(c, argv[i], argvlen[i]) || scratch_add(c, "\r\n", 2) ||
			    seg_add(c, NULL, 2))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Write the segments to @fd.  Return 0, or -1 for a lost connection. */
static int flush_segs(struct rc_client *c, int fd)
{
	size_t i, n = c->nsegs;

	if (c->iovcap < n) {
		struct iovec *v = realloc(c->iov, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->iov = v;
		c->iovcap = n;
	}
	for (i = 0; i < n; i++) {
		c->iov[i].iov_base = (void *)(c->segs[i].ptr ? c->segs[i].ptr : c->scratch + c->segs[i].off);
		c->iov[i].iov_len = c->segs[i].len;
	}
	c->nsegs = 0;
	c->slen = 0;
	for (i = 0; i < n; ) {
		int cnt = n - i > IOV_MAX ? IOV_MAX : (int)(n - i);
		ssize_t w = writev(fd, c->iov + i, cnt);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (w > 0 && i < n) {
			if ((size_t)w >= c->iov[i].iov_len) {
				w -= (ssize_t)c->iov[i].iov_len;
				i++;
			} else {
				c->iov[i].iov_base = (char *)c->iov[i].iov_base + w;
				c->iov[i].iov_len -= (size_t)w;
				w = 0;
			}
		}
	}
	return 0;
}

/* The next reply on @node's connection, reading RBUF bytes at a time.
 * Return REDIS_OK, or REDIS_ERR for a lost connection or a protocol
 * error. */
static int get_reply(struct rc_client *c, int node, redisReply **rp)
{
	redisContext *ctx = c->conns[node];
	struct rc_in *in = &c->ins[node];
	void *r = NULL;

	if (!c->rbuf && !(c->rbuf = malloc(RBUF)))
		return REDIS_ERR;
	if (in->len > in->pos) {
		/* a sink's read brought it: it comes first */
		if (redisReaderFeed(ctx->reader, in->buf + in->pos, in->len - in->pos) != REDIS_OK)
			return REDIS_ERR;
		in->pos = in->len = 0;
	}
	for (;;) {
		ssize_t n;

		if (redisReaderGetReply(ctx->reader, &r) != REDIS_OK)
			return REDIS_ERR;
		if (r) {
			*rp = r;
			return REDIS_OK;
		}
		n = read(ctx->fd, c->rbuf, RBUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return REDIS_ERR;	/* closed, or no answer within IO_MS */
		if (redisReaderFeed(ctx->reader, c->rbuf, (size_t)n) != REDIS_OK)
			return REDIS_ERR;
	}
}

/*
 * Room for @want more bytes in @in (struct rc_in): filled from the socket
 * in big reads, so a 2 MiB reply costs a few system calls (each costs
 * microseconds here), and parsed in place, so a page is copied once after
 * the socket (hiredis's reader would copy it into its own buffer, then
 * into a reply object).
 */
static int in_reserve(struct rc_in *in, size_t want)
{
	if (in->pos && in->len - in->pos + want > in->cap) {
		memmove(in->buf, in->buf + in->pos, in->len - in->pos);
		in->len -= in->pos;
		in->pos = 0;
	}
	if (in->len + want > in->cap) {
		size_t cap = in->cap ? in->cap : RBUF;
		char *p;

		while (cap < in->len + want)
			cap *= 2;
		p = realloc(in->buf, cap);
		if (!p)
			return -1;
		in->buf = p;
		in->cap = cap;
	}
	return 0;
}

/* Read at least @need more bytes than are buffered.  Return 0, or -1 for a
 * lost connection. */
static int in_need(struct rc_in *in, int fd, size_t need)
{
	if (in->pos == in->len)
		in->pos = in->len = 0;
	while (in->len - in->pos < need) {
		ssize_t n;

		if (in_reserve(in, need < RBUF ? RBUF : need))
			return -1;
		n = read(fd, in->buf + in->len, in->cap - in->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;	/* closed, or no answer within IO_MS */
		in->len += (size_t)n;
	}
	return 0;
}

/* One "<type><integer>\r\n" line.  Return 0, or -1 (lost, or no such line). */
static int in_line(struct rc_in *in, int fd, char type, long long *v)
{
	for (;;) {
		const char *p = in->buf + in->pos, *end = in->buf + in->len, *cr;
		char *stop;

		cr = p < end ? memchr(p, '\r', (size_t)(end - p)) : NULL;
		if (cr && cr + 1 < end) {
			if (*p != type || cr[1] != '\n')
				return -1;
			*v = strtoll(p + 1, &stop, 10);
			if (stop != cr)
				return -1;
			in->pos = (size_t)(cr + 2 - in->buf);
			return 0;
		}
		if (end - p > 32 || in_need(in, fd, (size_t)(end - p) + 1))
			return -1;
	}
}

/* Where element @i of @cmd's sink reply goes: *@room bytes at the
 * return value (0 bytes: dropped). */
static char *sink_place(const struct rc_cmd *cmd, long long i, size_t *room)
{
	size_t off = (size_t)i * RC_PAGE;

	*room = 0;
	if (cmd->dests) {
		if ((size_t)i >= cmd->ndests)
			return NULL;
		*room = cmd->dests[i].len < RC_PAGE ? cmd->dests[i].len : RC_PAGE;
		return cmd->dests[i].buf;
	}
	if (off >= cmd->destlen)
		return NULL;
	*room = cmd->destlen - off < RC_PAGE ? cmd->destlen - off : RC_PAGE;
	return cmd->dest + off;
}

/*
 * The reply to a command with a sink (HMGET; struct rc_cmd): an array of
 * bulk strings, each element copied to its place (sink_place()), a nil or
 * short element zero-filled, bytes past a page dropped.  *rp gets an
 * empty array reply.  A reply that is no array (an error: MOVED, ...) is
 * hiredis's to read.  Bytes read past the reply stay in the connection's
 * struct rc_in for the next reply.
 * Return REDIS_OK, or REDIS_ERR for a lost connection or a protocol error.
 */
static int get_sink_reply(struct rc_client *c, int node, const struct rc_cmd *cmd,
			  redisReply **rp)
{
	redisContext *ctx = c->conns[node];
	struct rc_in *in = &c->ins[node];
	redisReader *rd = ctx->reader;
	int fd = ctx->fd;
	long long n, i, blen;
	redisReply *r;

	if (rd->len) {
		/* the reader's unread bytes move here (@in is empty: a reply
		 * read by the reader took what @in held); it starts anew
		 * (hiredis has no call that empties its buffer) */
		redisReader *fresh = redisReaderCreate();

		in->pos = in->len = 0;
		if (!fresh || in_reserve(in, rd->len - rd->pos)) {
			if (fresh)
				redisReaderFree(fresh);
			return REDIS_ERR;
		}
		if (rd->len > rd->pos)
			memcpy(in->buf, rd->buf + rd->pos, rd->len - rd->pos);
		in->len = rd->len - rd->pos;
		fresh->maxbuf = 0;
		redisReaderFree(rd);
		ctx->reader = rd = fresh;
	}
	if (in_need(in, fd, 1))
		return REDIS_ERR;
	if (in->buf[in->pos] != '*')
		goto hiredis;
	if (in_line(in, fd, '*', &n) || n < 0)
		return REDIS_ERR;
	for (i = 0; i < n; i++) {
		size_t room, got = 0;
		char *dest = sink_place(cmd, i, &room);

		if (in_line(in, fd, '$', &blen) || blen < -1)
			return REDIS_ERR;
		while (blen >= 0 && got < (size_t)blen) {
			size_t avail = in->len - in->pos, want = (size_t)blen - got;
			struct iovec iov[2];
			ssize_t k;
			int niov = 0;

			if (avail) {
				size_t take = avail < want ? avail : want;

				if (got < room)
					memcpy(dest + got, in->buf + in->pos,
					       take < room - got ? take : room - got);
				in->pos += take;
				got += take;
				continue;
			}
			/* nothing buffered: the page straight from the socket,
			 * what follows it into the buffer */
			in->pos = in->len = 0;
			if (in_reserve(in, RBUF))
				return REDIS_ERR;
			if (got < room) {
				iov[0].iov_base = dest + got;
				iov[0].iov_len = want < room - got ? want : room - got;
				niov++;
			}
			iov[niov].iov_base = in->buf;
			iov[niov].iov_len = in->cap;
			niov++;
			k = readv(fd, iov, niov);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return REDIS_ERR;
			if (niov == 2) {
				size_t d = (size_t)k < iov[0].iov_len ? (size_t)k : iov[0].iov_len;

				got += d;
				k -= (ssize_t)d;
			}
			in->len = (size_t)k;
		}
		if (blen >= 0) {
			if (in_need(in, fd, 2) || memcmp(in->buf + in->pos, "\r\n", 2))
				return REDIS_ERR;
			in->pos += 2;
		}
		if (got < room)
			memset(dest + got, 0, room - got);
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return REDIS_ERR;
	r->type = REDIS_REPLY_ARRAY;
	*rp = r;
	return REDIS_OK;
hiredis:
	return get_reply(c, node, rp);	/* which takes what @in holds first */
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

static void drop_conn(struct rc_client *c, int node)
{
	if (node >= 0 && node < c->nconns && c->conns[node]) {
		redisFree(c->conns[node]);
		c->conns[node] = NULL;
		c->ins[node].pos = c->ins[node].len = 0;	/* its unread bytes */
	}
}

/*
 * The client's connection to @node, connecting and authenticating if
 * needed.  Return it, or NULL with *err: -ECONNREFUSED (nothing listens
 * there), -EHOSTUNREACH (no route, no such host), -ETIMEDOUT, -EACCES,
 * -ENOMEM.
 */
static redisContext *get_conn(struct rc_client *c, int node, int64_t deadline, int *err)
{
	struct rc_cluster *cl = c->cl;
	struct rc_config *cfg = &cl->cfg;
	redisContext *ctx;
	redisReply *r;
	char host[256];
	int port;
	int64_t left;

	if (node >= c->nconns) {
		int n = node + 8;
		redisContext **v = realloc(c->conns, (size_t)n * sizeof(*v));
		struct rc_in *in;
		int *t;

		if (!v) {
			*err = -ENOMEM;
			return NULL;
		}
		c->conns = v;
		t = realloc(c->io_ms, (size_t)n * sizeof(*t));
		if (!t) {
			*err = -ENOMEM;
			return NULL;
		}
		c->io_ms = t;
		in = realloc(c->ins, (size_t)n * sizeof(*in));
		if (!in) {
			*err = -ENOMEM;
			return NULL;
		}
		c->ins = in;
		memset(v + c->nconns, 0, (size_t)(n - c->nconns) * sizeof(*v));
		memset(in + c->nconns, 0, (size_t)(n - c->nconns) * sizeof(*in));
		c->nconns = n;
	}
	left = deadline - now_ms();
	if (c->conns[node]) {
		/* no wait on one node may outlast the operation's budget */
		int want = left < IO_MS ? (left > 1 ? (int)left : 1) : IO_MS;

		if (c->io_ms[node] != want) {
			redisSetTimeout(c->conns[node], tv_ms(want));
			c->io_ms[node] = want;
		}
		return c->conns[node];
	}

	pthread_mutex_lock(&cl->map_lock);
	snprintf(host, sizeof(host), "%s", cl->nodes[node].host);
	port = cl->nodes[node].port;
	pthread_mutex_unlock(&cl->map_lock);

	ctx = redisConnectWithTimeout(host, port, tv_ms(left < CONNECT_MS ? left : CONNECT_MS));
	if (!ctx) {
		*err = -ENOMEM;
		return NULL;
	}
	if (ctx->err) {
		*err = strstr(ctx->errstr, "refused") ? -ECONNREFUSED :
		       strstr(ctx->errstr, "unreachable") || strstr(ctx->errstr, "Name or service") ?
		       -EHOSTUNREACH : -ETIMEDOUT;
		redisFree(ctx);
		return NULL;
	}
	c->io_ms[node] = left < IO_MS ? (left > 1 ? (int)left : 1) : IO_MS;
	redisSetTimeout(ctx, tv_ms(c->io_ms[node]));
	ctx->reader->maxbuf = 0;		/* keep the read buffer */
	if (cfg->pass) {
		if (cfg->user)
			r = redisCommand(ctx, "AUTH %s %s", cfg->user, cfg->pass);
		else
			r = redisCommand(ctx, "AUTH %s", cfg->pass);
		if (r && r->type == REDIS_REPLY_ERROR && !cfg->user &&
		    strstr(r->str, "without any password configured")) {
			freeReplyObject(r);	/* a cluster without a password */
			r = redisCommand(ctx, "PING");
		}
		if (!r || r->type == REDIS_REPLY_ERROR) {
			/* any error reply to AUTH: the password or user is wrong */
			*err = r ? -EACCES : -ETIMEDOUT;
			if (r)
				freeReplyObject(r);
			redisFree(ctx);
			return NULL;
		}
		freeReplyObject(r);
	}
	c->conns[node] = ctx;
	return ctx;
}

/* ------------------------------------------------------------------ */
/* The slot map                                                        */
/* ------------------------------------------------------------------ */

/* The index of node @host:@port, added if new.  Locking: map_lock held. */
static int __node_index(struct rc_cluster *cl, const char *host, size_t hostlen, int port)
{
	int i;

	for (i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].port == port && strlen(cl->nodes[i].host) == hostlen &&
		    !memcmp(cl->nodes[i].host, host, hostlen))
			return i;
	if (cl->nnodes == MAX_NODES)
		return RC_NO_NODE;
	cl->nodes[i].host = strndup(host, hostlen);
	if (!cl->nodes[i].host)
		return RC_NO_NODE;
	cl->nodes[i].port = port;
	cl->nnodes++;
	return i;
}

/* "host:port" (a MOVED/ASK target, or a CLUSTER NODES address up to '@') */
static int node_from_addr(struct rc_cluster *cl, const char *s, size_t len)
{
	const char *colon = memrchr(s, ':', len);
	long port;
	int node;

	if (!colon || colon == s)
		return RC_NO_NODE;
	port = strtol(colon + 1, NULL, 10);
	if (port <= 0 || port > 65535)
		return RC_NO_NODE;
	pthread_mutex_lock(&cl->map_lock);
	node = __node_index(cl, s, (size_t)(colon - s), (int)port);
	pthread_mutex_unlock(&cl->map_lock);
	return node;
}

/*
 * Parse CLUSTER NODES into @slots.  Lines:
 *   id ip:port@cport[,hostname] flags master-id ping pong epoch link slot...
 * Return 0, or -EPROTO when nothing usable is in it.
 */
static int parse_nodes(struct rc_cluster *cl, const char *text, int16_t *slots, bool *has_replicas)
{
	char masters[MAX_NODES][41];
	bool replicated[MAX_NODES];
	int nmasters = 0, i, nslots = 0;
	const char *line, *next;

	for (i = 0; i < RC_SLOTS; i++)
		slots[i] = RC_NO_NODE;
	memset(replicated, 0, sizeof(replicated));
	*has_replicas = false;

	/* two passes: masters and their slots, then which masters have a live replica */
	for (int pass = 0; pass < 2; pass++) {
		for (line = text; *line; line = next) {
			char *f[8], *save = NULL, *tok, *rest;
			size_t len;
			int nf = 0;
			char buf[4096];

			next = strchrnul(line, '\n');
			len = (size_t)(next - line);
			if (*next)
				next++;
			if (len >= sizeof(buf))
				continue;	/* a huge slot list: cannot be ours */
			memcpy(buf, line, len);
			buf[len] = 0;
			for (tok = strtok_r(buf, " ", &save); tok; ) {
				f[nf++] = tok;
				if (nf == 8)
					break;
				tok = strtok_r(NULL, " ", &save);
			}
			if (nf < 8)
				continue;
			rest = save;
			if (pass == 1) {
				if (strstr(f[2], "slave") && !strstr(f[2], "fail") && !strstr(f[2], "noaddr") &&
				    !strcmp(f[7], "connected"))
					for (i = 0; i < nmasters; i++)
						if (!strcmp(masters[i], f[3]))
							replicated[i] = true;
				continue;
			}
			if (!strstr(f[2], "master"))
				continue;
			{
				char *at = strchr(f[1], '@');
				int node;

				if (at)
					*at = 0;
				if (f[1][0] == ':' || !f[1][0])
					continue;	/* no address known */
				node = node_from_addr(cl, f[1], strlen(f[1]));
				if (node == RC_NO_NODE)
					continue;
				if (nmasters < MAX_NODES) {
					snprintf(masters[nmasters], sizeof(masters[0]), "%s", f[0]);
					nmasters++;
				}
				for (tok = rest ? strtok_r(rest, " ", &save) : NULL; tok;
				     tok = strtok_r(NULL, " ", &save)) {
					long a, b;
					char *dash;

					if (tok[0] == '[')
						continue;	/* migrating/importing: MOVED/ASK tell */
					a = strtol(tok, &dash, 10);
					b = *dash == '-' ? strtol(dash + 1, NULL, 10) : a;
					if (a < 0 || b >= RC_SLOTS || a > b)
						continue;
					for (long s = a; s <= b; s++, nslots++)
						slots[s] = (int16_t)node;
				}
			}
		}
	}
	for (i = 0; i < nmasters; i++)
		if (replicated[i])
			*has_replicas = true;
	return nslots ? 0 : -EPROTO;
}

/*
 * Read the slot map from any node that answers, starting with the one
 * after the last that did.  Return 0, -ECONNREFUSED when every node
 * refused the connection, or the last node's error (-EHOSTUNREACH for a
 * refusal when others did not refuse).
 */
static int refresh(struct rc_client *c, int64_t deadline)
{
	struct rc_cluster *cl = c->cl;
	int ret = -EHOSTUNREACH, n, i, refused = 0;
	unsigned int from;

	pthread_mutex_lock(&cl->map_lock);
	n = cl->nnodes;
	from = cl->refresh_from;
	pthread_mutex_unlock(&cl->map_lock);

	for (i = 0; i < n && now_ms() < deadline; i++) {
		int node = (int)((from + (unsigned int)i) % (unsigned int)n), err = 0;
		redisContext *ctx = get_conn(c, node, deadline, &err);
		redisReply *r;
		int16_t *slots;
		bool repl;

		if (!ctx) {
			ret = err;
			if (err == -EACCES || err == -ENOMEM)
				return err;
			refused += err == -ECONNREFUSED;
			continue;
		}
		r = redisCommand(ctx, "CLUSTER NODES");
		if (!r) {
			drop_conn(c, node);
			ret = -ETIMEDOUT;
			continue;
		}
		if (r->type != REDIS_REPLY_STRING) {
			ret = rc_reply_errno(r);
			freeReplyObject(r);
			if (ret == -EACCES || ret == -EPROTO)
				return ret;
			ret = -ETIMEDOUT;
			continue;
		}
		slots = malloc(sizeof(cl->slots));
		if (!slots) {
			freeReplyObject(r);
			return -ENOMEM;
		}
		ret = parse_nodes(cl, r->str, slots, &repl);
		freeReplyObject(r);
		if (!ret) {
			pthread_mutex_lock(&cl->map_lock);
			memcpy(cl->slots, slots, sizeof(cl->slots));
			cl->has_replicas = repl;
			cl->refresh_from = (unsigned int)node;
			pthread_mutex_unlock(&cl->map_lock);
		}
		free(slots);
		if (!ret)
			return 0;
		if (ret == -ENOMEM)
			return ret;
	}
	if (ret == -ECONNREFUSED && refused < n)
		ret = -EHOSTUNREACH;
	return ret;
}

/* ------------------------------------------------------------------ */
/* Clients                                                             */
/* ------------------------------------------------------------------ */

static struct rc_client *client_get(struct rc_cluster *cl)
{
	struct rc_client *c;

	pthread_mutex_lock(&cl->pool_lock);
	c = cl->pool;
	if (c)
		cl->pool = c->next;
	pthread_mutex_unlock(&cl->pool_lock);
	if (!c && (c = calloc(1, sizeof(*c))))
		c->cl = cl;
	return c;
}

static void client_put(struct rc_cluster *cl, struct rc_client *c)
{
	pthread_mutex_lock(&cl->pool_lock);
	c->next = cl->pool;
	cl->pool = c;
	pthread_mutex_unlock(&cl->pool_lock);
}

static void client_free(struct rc_client *c)
{
	int i;

	for (i = 0; i < c->nconns; i++) {
		if (c->conns[i])
			redisFree(c->conns[i]);
		free(c->ins[i].buf);
	}
	free(c->conns);
	free(c->ins);
	free(c->io_ms);
	free(c->scratch);
	free(c->segs);
	free(c->iov);
	free(c->rbuf);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Running commands                                                    */
/* ------------------------------------------------------------------ */

void rc_cmds_clear(struct rc_cmd *cmds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (cmds[i].reply)
			freeReplyObject(cmds[i].reply);
		cmds[i].reply = NULL;
	}
}

/* What to do after a round, worst first. */
enum { R_DONE, R_AGAIN, R_BACKOFF };

/*
 * Send every pending command routed to @node (and WAIT after them).
 * Return R_DONE when sent, R_BACKOFF, or a -errno that ends the operation.
 */
static int send_node(struct rc_client *c, int node, struct rc_cmd *cmds, size_t n,
		     int replicas, int64_t deadline, int *soft)
{
	static const char *asking[] = { "ASKING" };
	static const size_t askinglen[] = { 6 };
	redisContext *ctx;
	char waitn[16], waitt[16];
	const char *waitv[3] = { "WAIT", waitn, waitt };
	size_t waitl[3];
	int err = 0;
	int64_t left;
	size_t i;

	ctx = get_conn(c, node, deadline, &err);
	if (!ctx) {
		*soft = err;
		return err == -EACCES || err == -ENOMEM ? err : R_BACKOFF;
	}
	for (i = 0; i < n; i++) {
		if (cmds[i].done || cmds[i].node != node)
			continue;
		if (cmds[i].ask_node == node && put_cmd(c, 1, asking, askinglen))
			return -ENOMEM;
		if (put_cmd(c, cmds[i].argc, cmds[i].argv, cmds[i].argvlen))
			return -ENOMEM;
	}
	left = deadline - now_ms();
	if (replicas > 0) {
		waitl[0] = 4;
		waitl[1] = (size_t)snprintf(waitn, sizeof(waitn), "%d", replicas);
		waitl[2] = (size_t)snprintf(waitt, sizeof(waitt), "%lld",
					    (long long)(left < WAIT_MS ? (left > 1 ? left : 1) : WAIT_MS));
		if (put_cmd(c, 3, waitv, waitl))
			return -ENOMEM;
	}
	if (flush_segs(c, ctx->fd)) {
		drop_conn(c, node);
		*soft = -ETIMEDOUT;
		return R_BACKOFF;
	}
	return R_DONE;
}

/*
 * Read the replies to what send_node() sent to @node.
 * Return R_DONE/R_AGAIN/R_BACKOFF, or a -errno that ends the operation.
 */
static int recv_node(struct rc_client *c, int node, struct rc_cmd *cmds, size_t n,
		     int replicas, int *soft)
{
	struct rc_cluster *cl = c->cl;
	int state = R_DONE;
	size_t i;

	for (i = 0; i < n; i++) {
		struct rc_cmd *cmd = &cmds[i];
		redisReply *r = NULL;
		int e;

		if (cmd->done || cmd->node != node)
			continue;
		if (cmd->ask_node == node) {
			if (get_reply(c, node, &r) != REDIS_OK)
				goto lost;
			freeReplyObject(r);
			r = NULL;
			cmd->ask_node = RC_NO_NODE;
		}
		e = cmd->dest || cmd->dests ? get_sink_reply(c, node, cmd, &r) :
				get_reply(c, node, &r);
		if (e != REDIS_OK)
			goto lost;
		e = rc_reply_errno(r);
		if (e == -EAGAIN) {
			if (err_is(r, "MOVED") || err_is(r, "ASK")) {
				/* "MOVED 3999 127.0.0.1:6381" */
				char *sp = strchr(r->str, ' ');
				char *addr = sp ? strchr(sp + 1, ' ') : NULL;
				int to = addr ? node_from_addr(cl, addr + 1, strlen(addr + 1)) : RC_NO_NODE;

				if (to == RC_NO_NODE) {
					state = R_BACKOFF;
				} else if (err_is(r, "MOVED")) {
					pthread_mutex_lock(&cl->map_lock);
					cl->slots[cmd->slot] = (int16_t)to;
					pthread_mutex_unlock(&cl->map_lock);
					if (state < R_AGAIN)
						state = R_AGAIN;
				} else {
					cmd->ask_node = to;
					if (state < R_AGAIN)
						state = R_AGAIN;
				}
			} else {
				state = R_BACKOFF;
			}
			*soft = -ETIMEDOUT;
			freeReplyObject(r);
			continue;
		}
		if (e == -EACCES || e == -EPROTO) {
			freeReplyObject(r);
			drop_conn(c, node);	/* replies left unread */
			return e;
		}
		if (cmd->reply)
			freeReplyObject(cmd->reply);
		cmd->reply = r;
		cmd->done = true;
	}
	if (replicas > 0) {
		redisReply *r = NULL;

		if (get_reply(c, node, &r) != REDIS_OK)
			goto lost;
		if (r->type != REDIS_REPLY_INTEGER || r->integer < replicas) {
			/* not acknowledged: the writes go again, with their WAIT */
			for (i = 0; i < n; i++)
				if (cmds[i].node == node)
					cmds[i].done = false;
			*soft = -ETIMEDOUT;
			state = R_BACKOFF;
		}
		freeReplyObject(r);
	}
	return state;
lost:
	drop_conn(c, node);
	*soft = -ETIMEDOUT;
	return R_BACKOFF;
}

/* Connections with replies still to come are of no more use. */
static void drop_unread(struct rc_client *c, const int *nodes, const bool *sent, int nn)
{
	int k;

	for (k = 0; k < nn; k++)
		if (sent[k])
			drop_conn(c, nodes[k]);
}

int rc_exec(struct rc_cluster *cl, struct rc_cmd *cmds, size_t n, int replicas,
	    unsigned int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms, backoff = BACKOFF_MIN_MS;
	struct rc_client *c = client_get(cl);
	int ret = 0, soft = -ETIMEDOUT;
	bool stale = false;
	size_t i;

	if (!c)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int k = cmds[i].keyarg ? cmds[i].keyarg : 1;

		cmds[i].slot = (int)rc_key_slot(cmds[i].argv[k], cmds[i].argvlen[k]);
		cmds[i].ask_node = RC_NO_NODE;
		cmds[i].done = false;
		cmds[i].reply = NULL;
	}
	for (;;) {
		int nodes[MAX_NODES], nn = 0, state = R_DONE, k;
		bool pending = false, sent[MAX_NODES];

		if (stale) {
			int r = refresh(c, deadline);

			if (r == -EACCES || r == -ENOMEM || r == -EPROTO) {
				ret = r;
				break;
			}
			if (r)
				soft = r;
			stale = false;
		}
		/* route what is left */
		pthread_mutex_lock(&cl->map_lock);
		for (i = 0; i < n; i++) {
			struct rc_cmd *cmd = &cmds[i];

			if (cmd->done)
				continue;
			pending = true;
			cmd->node = cmd->ask_node != RC_NO_NODE ? cmd->ask_node : cl->slots[cmd->slot];
			if (cmd->node == RC_NO_NODE) {
				state = R_BACKOFF;
				continue;
			}
			for (k = 0; k < nn && nodes[k] != cmd->node; k++)
				;
			if (k == nn)
				nodes[nn++] = cmd->node;
		}
		pthread_mutex_unlock(&cl->map_lock);
		if (!pending)
			break;

		/* every node's commands first, then the replies: the nodes
		 * work at the same time */
		for (k = 0; k < nn; k++)
			sent[k] = false;
		for (k = 0; k < nn; k++) {
			int r = send_node(c, nodes[k], cmds, n, replicas, deadline, &soft);

			if (r < 0) {
				ret = r;
				drop_unread(c, nodes, sent, nn);
				goto out;
			}
			sent[k] = r == R_DONE;
			if (r > state)
				state = r;
		}
		for (k = 0; k < nn; k++) {
			int r = sent[k] ? recv_node(c, nodes[k], cmds, n, replicas, &soft) : R_DONE;

			sent[k] = false;
			if (r < 0) {
				ret = r;
				drop_unread(c, nodes, sent, nn);
				goto out;
			}
			if (r > state)
				state = r;
		}
		if (state == R_DONE)
			continue;	/* a WAIT or ASK left nothing pending: checked above */
		if (now_ms() >= deadline) {
			/* a node refusing mid-operation is one lost, not the answer */
			ret = soft == -ECONNREFUSED ? -EHOSTUNREACH : soft;
			break;
		}
		if (state == R_BACKOFF) {
			int64_t left = deadline - now_ms();

			sleep_ms(backoff < left ? backoff : left);
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
			stale = true;
		}
	}
out:
	client_put(cl, c);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Commands sent now, replies read later                               */
/* ------------------------------------------------------------------ */

struct rc_pending {
	struct rc_client *c;
	size_t n;
	int node[];		/* each command's node */
};

int rc_send(struct rc_cluster *cl, const struct rc_cmd *cmds, size_t n,
	    unsigned int timeout_ms, struct rc_pending **pp)
{
	int64_t deadline = now_ms() + timeout_ms;
	struct rc_pending *p = malloc(sizeof(*p) + n * sizeof(int));
	struct rc_client *c = p ? client_get(cl) : NULL;
	size_t i, j;

	if (!c) {
		free(p);
		return -ENOMEM;
	}
	p->c = c;
	p->n = n;
	pthread_mutex_lock(&cl->map_lock);
	for (i = 0; i < n; i++) {
		int k = cmds[i].keyarg ? cmds[i].keyarg : 1;

		p->node[i] = cl->slots[rc_key_slot(cmds[i].argv[k], cmds[i].argvlen[k])];
	}
	pthread_mutex_unlock(&cl->map_lock);
	for (i = 0; i < n; i++) {
		redisContext *ctx;
		int err = 0;

		if (p->node[i] == RC_NO_NODE)
			goto fail;
		for (j = 0; j < i && p->node[j] != p->node[i]; j++)
			;
		if (j < i)
			continue;	/* sent with that node's first */
		ctx = get_conn(c, p->node[i], deadline, &err);
		if (!ctx)
			goto fail;
		for (j = i; j < n; j++)
			if (p->node[j] == p->node[i] &&
			    put_cmd(c, cmds[j].argc, cmds[j].argv, cmds[j].argvlen)) {
				c->nsegs = c->slen = 0;
				goto fail;
			}
		if (flush_segs(c, ctx->fd)) {
			drop_conn(c, p->node[i]);
			goto fail;
		}
	}
	*pp = p;
	return 0;
fail:
	/* what was sent has no reader: those connections go */
	for (j = 0; j < i; j++)
		drop_conn(c, p->node[j]);
	client_put(cl, c);
	free(p);
	return -EAGAIN;
}

int rc_recv(struct rc_cluster *cl, struct rc_pending *p, struct rc_cmd *cmds)
{
	struct rc_client *c = p->c;
	int ret = 0;
	size_t i, j;

	for (i = 0; i < p->n; i++) {
		cmds[i].reply = NULL;
		cmds[i].done = false;
	}
	/* node by node, each node's replies in the order sent */
	for (i = 0; i < p->n; i++) {
		redisContext *ctx;

		if (cmds[i].done)
			continue;
		ctx = p->node[i] < c->nconns ? c->conns[p->node[i]] : NULL;
		for (j = i; j < p->n; j++) {
			redisReply *r = NULL;
			int e;

			if (p->node[j] != p->node[i])
				continue;
			cmds[j].done = true;
			if (!ctx) {
				ret = -EAGAIN;
				continue;
			}
			e = get_sink_reply(c, p->node[i], &cmds[j], &r);
			if (e != REDIS_OK) {
				drop_conn(c, p->node[i]);
				ctx = NULL;
				ret = -EAGAIN;
				continue;
			}
			if (r->type == REDIS_REPLY_ERROR)
				ret = -EAGAIN;
			cmds[j].reply = r;
		}
	}
	if (ret)
		rc_cmds_clear(cmds, p->n);
	client_put(cl, c);
	free(p);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The cluster                                                         */
/* ------------------------------------------------------------------ */

bool rc_cluster_has_replicas(struct rc_cluster *cl)
{
	bool r;

	pthread_mutex_lock(&cl->map_lock);
	r = cl->has_replicas;
	pthread_mutex_unlock(&cl->map_lock);
	return r;
}

void rc_cluster_free(struct rc_cluster *cl)
{
	struct rc_client *c;
	int i;

	if (!cl)
		return;
	while ((c = cl->pool)) {
		cl->pool = c->next;
		client_free(c);
	}
	for (i = 0; i < cl->nnodes; i++)
		free(cl->nodes[i].host);
	rc_config_free(&cl->cfg);
	pthread_mutex_destroy(&cl->map_lock);
	pthread_mutex_destroy(&cl->pool_lock);
	free(cl);
}

/*
 * A cluster client for @cfg (copied): the seeds are tried until one gives
 * a slot map, for at most cfg->timeout_ms.
 */
int rc_cluster_new(const struct rc_config *cfg, struct rc_cluster **clp)
{
	struct rc_cluster *cl = calloc(1, sizeof(*cl));
	int64_t deadline, backoff = BACKOFF_MIN_MS;
	struct rc_client *c;
	bool any_timeout = false;
	unsigned int i;
	int ret;

	if (!cl)
		return -ENOMEM;
	pthread_mutex_init(&cl->map_lock, NULL);
	uf_lockdep_class(&cl->map_lock, UF_LK_STORE);
	pthread_mutex_init(&cl->pool_lock, NULL);
	uf_lockdep_class(&cl->pool_lock, UF_LK_STORE);
	for (i = 0; i < RC_SLOTS; i++)
		cl->slots[i] = RC_NO_NODE;
	cl->cfg = *cfg;		/* the strings are copied below */
	cl->cfg.user = cfg->user ? strdup(cfg->user) : NULL;
	cl->cfg.pass = cfg->pass ? strdup(cfg->pass) : NULL;
	cl->cfg.name = strdup(cfg->name);
	cl->cfg.seeds = NULL;
	cl->cfg.nseeds = 0;
	if ((cfg->user && !cl->cfg.user) || (cfg->pass && !cl->cfg.pass) || !cl->cfg.name) {
		rc_cluster_free(cl);
		return -ENOMEM;
	}
	for (i = 0; i < cfg->nseeds; i++) {
		if (__node_index(cl, cfg->seeds[i].host, strlen(cfg->seeds[i].host),
				 cfg->seeds[i].port) == RC_NO_NODE) {
			rc_cluster_free(cl);
			return -ENOMEM;
		}
	}
	c = client_get(cl);
	if (!c) {
		rc_cluster_free(cl);
		return -ENOMEM;
	}
	deadline = now_ms() + cfg->timeout_ms;
	for (;;) {
		/* every seed refusing is an answer (nothing listens there), not
		 * a failover to wait out: fail now rather than after timeout_ms */
		ret = refresh(c, deadline);
		if (!ret || ret == -EACCES || ret == -ENOMEM || ret == -EPROTO || ret == -ECONNREFUSED)
			break;
		if (ret == -ETIMEDOUT)
			any_timeout = true;
		if (now_ms() >= deadline) {
			ret = any_timeout ? -ETIMEDOUT : -EHOSTUNREACH;
			break;
		}
		sleep_ms(backoff < deadline - now_ms() ? backoff : deadline - now_ms());
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	client_put(cl, c);
	if (ret) {
		rc_cluster_free(cl);
		return ret;
	}
	*clp = cl;
	return 0;
}
