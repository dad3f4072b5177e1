// SPDX-License-Identifier: MIT
/*
 * ufault-cp - copy between a plain file and a ufault object in a Redis
 * Cluster: import a snapshot, export it back; or copy an object served
 * over HTTP(S) (read-only, see uf_http_open(3)) into a file or a cluster.
 *
 *   ufault-cp [-q] [--progress] SRC DST
 *
 * One of SRC and DST is a redis:// URL (see uf_redis_open(3)); the other
 * is a file, or another redis:// URL, or (as SRC) an http(s):// URL.  The
 * object side goes through
 * ufault: uf_object_pread() fills the object's cache from the cluster a
 * readahead window at a time, uf_object_pwrite() writes into the cache and
 * uf_object_sync() writes it to the cluster (acknowledged by the replicas
 * the URL asks for).  Zero pages are never written: an object's page that
 * was never written is not stored, and a file's holes stay holes, so
 * sparse data stays sparse both ways.  DST is replaced (an object is
 * truncated to 0 first, which deletes its old pages from the cluster).
 *
 * Memory stays bounded: the mm has a cache budget, and the destination is
 * synced every SYNC_EVERY bytes, so copied pages become clean and can be
 * reclaimed.
 *
 * Exit status: 0 copied and synced; 1 the copy or its final sync failed
 * (DST may be incomplete); 2 bad usage.
 */
#define _GNU_SOURCE
#include <ufault.h>
#include <ufault-redis.h>
#include <ufault-http.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PG		((size_t)UF_PAGE_SIZE)
#define CHUNK		((size_t)4 << 20)	/* bytes per read: a few readahead windows */
#define SYNC_EVERY	((uint64_t)64 << 20)
#define CACHE_BUDGET	((uint64_t)256 << 20)
#define EXIT_FAIL	1
#define EXIT_USAGE	2

/* One side of the copy: a file or an object. */
struct end {
	const char *arg;	/* as given */
	char shown[512];	/* for messages: the URL without its password */
	bool redis;		/* an object: redis://, or http(s):// */
	bool http;		/* http(s)://: read-only, SRC only */
	bool opened;		/* DST: it was opened, so it may be half written */
	int fd;
	struct uf_object *obj;
	uint64_t size;
};

struct copy {
	struct end src, dst;
	struct uf_mm *mm;
	bool progress;
	double t0, last_draw;
	uint64_t done, stored;	/* bytes copied; bytes that were not zero pages */
	unsigned char *buf;
};

static bool is_url(const char *s)
{
	return !strncmp(s, "redis://", 8);
}

static bool is_http(const char *s)
{
	return !strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The URL as it may be printed: the password between ':' and '@' of the
 * authority replaced by "***". */
static void redact(const char *url, char *out, size_t n)
{
	const char *auth = url + 8, *end = auth + strcspn(auth, "/?");
	const char *at = memrchr(auth, '@', (size_t)(end - auth));
	const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;

	if (!colon || colon + 1 == at)
		snprintf(out, n, "%s", url);
	else
		snprintf(out, n, "%.*s***%s", (int)(colon + 1 - url), url, at);
}

/* What an error of uf_redis_open() means, in the words of its man page. */
static const char *redis_strerror(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such object";
	case -EACCES:
		return "authentication failed (wrong password, or the ACL user may not do this)";
	case -EBUSY:
		return "another writer has the object open (its lease has not expired)";
	case -ECONNREFUSED:
		return "connection refused by every seed node (is the cluster running? "
		       "ufault-redis-cluster(1) starts one to try)";
	case -EHOSTUNREACH:
		return "no seed node of the cluster is reachable";
	case -ETIMEDOUT:
		return "the cluster did not answer in time";
	case -EINVAL:
		return "bad URL (expected redis://[[user]:password@]host:port[,host:port...]/NAME"
		       "[?replicas=N&timeout_ms=T])";
	default:
		return strerror(-err);
	}
}

/* What an error of uf_http_open() means (uf_http_open(3)). */
static const char *http_strerror(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such object (HTTP 404)";
	case -EACCES:
		return "refused (HTTP 401 or 403: a token in UFAULT_HTTP_BEARER, or a fresh presigned URL?)";
	case -EPROTO:
		return "the server does not answer range requests";
	case -ECONNREFUSED:
		return "connection refused until the deadline";
	case -ETIMEDOUT:
		return "no answer until the deadline";
	case -EHOSTUNREACH:
		return "the host name does not resolve";
	case -ESTALE:
		return "the object changed on the server while it was read";
	case -EINVAL:
		return "bad URL (expected http(s)://HOST[:PORT]/PATH[?QUERY])";
	default:
		return strerror(-err);
	}
}

static void errmsg(const struct end *e, const char *what, int err)
{
	fprintf(stderr, "ufault-cp: %s: %s: %s\n", e->shown, what,
		e->http ? http_strerror(err) : e->redis ? redis_strerror(err) : strerror(-err));
}

/* ------------------------------------------------------------------ */
/* The two sides                                                       */
/* ------------------------------------------------------------------ */

static int open_src(struct copy *cp)
{
	struct end *e = &cp->src;
	struct stat st;
	int ret;

	if (e->redis) {
		if (e->http)
			ret = uf_http_open(cp->mm, e->arg, NULL, &e->obj);
		else
			ret = uf_redis_open(cp->mm, e->arg, O_RDONLY, &e->obj);
		if (ret) {
			errmsg(e, "open", ret);
			return ret;
		}
		e->size = uf_object_size(e->obj);
		return 0;
	}
	e->fd = open(e->arg, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0 || fstat(e->fd, &st) < 0) {
		ret = -errno;
		errmsg(e, "open", ret);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "ufault-cp: %s: not a regular file\n", e->shown);
		return -EINVAL;
	}
	e->size = (uint64_t)st.st_size;
	return 0;
}

/* DST replaced by an empty, sparse SRC-sized one: every page reads zero
 * until it is written. */
static int open_dst(struct copy *cp)
{
	struct end *e = &cp->dst;
	uint64_t size = cp->src.size;
	int ret;

	if (e->redis) {
		ret = uf_redis_open(cp->mm, e->arg, O_RDWR | O_CREAT, &e->obj);
		if (ret) {
			errmsg(e, "open for writing", ret);
			return ret;
		}
		e->opened = true;
		ret = uf_object_truncate(e->obj, 0);
		if (!ret)
			ret = uf_object_truncate(e->obj, size);
		if (ret)
			errmsg(e, "truncate", ret);
		e->size = size;
		return ret;
	}
	e->fd = open(e->arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (e->fd < 0) {
		ret = -errno;
		errmsg(e, "open for writing", ret);
		return ret;
	}
	e->opened = true;
	if (ftruncate(e->fd, (off_t)size) < 0) {
		ret = -errno;
		errmsg(e, "truncate", ret);
		return ret;
	}
	e->size = size;
	return 0;
}

/* Read exactly @len bytes at @off (the caller stays inside the size). */
static int end_read(struct end *e, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = e->redis ? uf_object_pread(e->obj, (char *)buf + got, len - got, off + got)
				     : pread(e->fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && !e->redis && errno == EINTR)
			continue;
		if (n < 0)
			return e->redis ? (int)n : -errno;
		if (n == 0)
			return -ENODATA;	/* shrank under us */
		got += (size_t)n;
	}
	return 0;
}

static int end_write(struct end *e, const void *buf, size_t len, uint64_t off)
{
	size_t put = 0;

	while (put < len) {
		ssize_t n = e->redis ? uf_object_pwrite(e->obj, (const char *)buf + put, len - put,
							off + put)
				     : pwrite(e->fd, (const char *)buf + put, len - put,
					      (off_t)(off + put));

		if (n < 0 && !e->redis && errno == EINTR)
			continue;
		if (n < 0)
			return e->redis ? (int)n : -errno;
		if (n == 0)
			return -EIO;
		put += (size_t)n;
	}
	return 0;
}

static int end_sync(struct end *e)
{
	if (e->redis)
		return uf_object_sync(e->obj);
	return fsync(e->fd) < 0 ? -errno : 0;
}

/* Where the next data is in a file source at or after @off (holes are
 * skipped without reading them); the size when only a hole is left. */
static uint64_t next_data(struct end *e, uint64_t off)
{
	off_t d;

	if (e->redis)
		return off;
	d = lseek(e->fd, (off_t)off, SEEK_DATA);
	if (d < 0)
		return errno == ENXIO ? e->size : off;	/* no SEEK_DATA: read it all */
	return (uint64_t)d;
}

/* ------------------------------------------------------------------ */
/* Progress                                                            */
/* ------------------------------------------------------------------ */

static void draw(struct copy *cp, bool final)
{
	double t = now(), el = t - cp->t0, rate, frac;
	char eta[32] = "";
	int width = 30, fill;

	if (!cp->progress || (!final && t - cp->last_draw < 0.1))
		return;
	cp->last_draw = t;
	frac = cp->src.size ? (double)cp->done / (double)cp->src.size : 1;
	fill = (int)(frac * width);
	rate = el > 0 ? (double)cp->done / el : 0;
	if (!final && rate > 0) {
		unsigned long s = (unsigned long)((double)(cp->src.size - cp->done) / rate);

		snprintf(eta, sizeof(eta), " ETA %lu:%02lu", s / 60, s % 60);
	}
	fprintf(stderr, "\r[%.*s%*s] %3.0f%% %8.1f/%.1f MiB %7.1f MiB/s%s\033[K", fill,
		"##############################", width - fill, "", 100 * frac,
		(double)cp->done / (1 << 20), (double)cp->src.size / (1 << 20), rate / (1 << 20), eta);
	if (final)
		fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* The copy                                                            */
/* ------------------------------------------------------------------ */

static bool zero_page(const unsigned char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	for (i = len / 8 * 8; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Write the pages of @buf that are not all zero, one run at a time. */
static int write_nonzero(struct copy *cp, size_t len, uint64_t off)
{
	size_t i = 0;

	while (i < len) {
		size_t j, n = len - i < PG ? len - i : PG;
		int ret;

		if (zero_page(cp->buf + i, n)) {
			i += n;
			continue;
		}
		for (j = i + n; j < len; j += n) {
			n = len - j < PG ? len - j : PG;
			if (zero_page(cp->buf + j, n))
				break;
		}
		ret = end_write(&cp->dst, cp->buf + i, j - i, off + i);
		if (ret)
			return ret;
		cp->stored += j - i;
		i = j;
	}
	return 0;
}

static int copy_data(struct copy *cp)
{
	uint64_t off = 0, synced = 0;
	int ret;

	while (off < cp->src.size) {
		uint64_t data = next_data(&cp->src, off);
		size_t len;

		if (data > off) {
			/* a hole: already zero in DST */
			off = data / PG * PG > off ? data / PG * PG : off;
			cp->done = off;
			draw(cp, false);
			if (off >= cp->src.size)
				break;
		}
		len = cp->src.size - off < CHUNK ? (size_t)(cp->src.size - off) : CHUNK;
		ret = end_read(&cp->src, cp->buf, len, off);
		if (ret) {
			errmsg(&cp->src, "read", ret);
			return ret;
		}
		ret = write_nonzero(cp, len, off);
		if (ret) {
			errmsg(&cp->dst, "write", ret);
			return ret;
		}
		off += len;
		cp->done = off;
		if (cp->dst.redis && off - synced >= SYNC_EVERY) {
			/* the written pages become clean: the budget can drop them */
			ret = end_sync(&cp->dst);
			if (ret) {
				errmsg(&cp->dst, "sync", ret);
				return ret;
			}
			synced = off;
		}
		draw(cp, false);
	}
	cp->done = cp->src.size;
	ret = end_sync(&cp->dst);
	if (ret)
		errmsg(&cp->dst, "sync", ret);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ufault-cp [-q|--quiet] [--progress] SRC DST\n"
		   "  copy a file into a Redis Cluster object, or an object into a file:\n"
		   "  one of SRC, DST is redis://[[user]:password@]host:port[,host:port...]/NAME\n"
		   "  [?replicas=N&timeout_ms=T]; the password may come from UFAULT_REDIS_PASSWORD\n"
		   "  or copy SRC http(s)://HOST[:PORT]/PATH[?QUERY] (read-only) into DST\n"
		   "  (a bearer token from UFAULT_HTTP_BEARER)\n"
		   "  -q, --quiet   no progress bar (default: one on a terminal)\n"
		   "  --progress    a progress bar on stderr even when it is not a terminal\n"
		   "  -h, --help    this text\n"
		   "  --version     the version of ufault\n"
		   "exit: 0 copied and synced, 1 failed (DST may be incomplete), 2 bad usage\n");
}

static void end_init(struct end *e, const char *arg)
{
	e->arg = arg;
	e->http = is_http(arg);
	e->redis = is_url(arg) || e->http;
	e->fd = -1;
	if (e->http)	/* a presigned URL's query is a secret */
		snprintf(e->shown, sizeof(e->shown), "%.*s%s", (int)strcspn(arg, "?"), arg,
			 strchr(arg, '?') ? "?***" : "");
	else if (e->redis)
		redact(arg, e->shown, sizeof(e->shown));
	else
		snprintf(e->shown, sizeof(e->shown), "%s", arg);
}

static int end_close(struct end *e)
{
	int ret = 0;

	uf_object_put(e->obj);
	if (e->fd >= 0 && close(e->fd) < 0)
		ret = -errno;
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "progress", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct uf_mm_config cfg = { .cache_budget = CACHE_BUDGET };
	struct copy cp = { .progress = isatty(STDERR_FILENO) };
	int opt, ret, status = EXIT_FAIL;

	while ((opt = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			cp.progress = false;
			break;
		case 'p':
			cp.progress = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ufault-cp (ufault) %s\n", UF_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	end_init(&cp.src, argv[optind]);
	end_init(&cp.dst, argv[optind + 1]);
	if (!cp.src.redis && !cp.dst.redis) {
		fprintf(stderr, "ufault-cp: neither SRC nor DST is a redis:// or http(s):// URL (use cp(1))\n");
		return EXIT_USAGE;
	}
	if (cp.dst.http) {
		fprintf(stderr, "ufault-cp: %s: an http(s):// object is read-only: it can only be SRC\n",
			cp.dst.shown);
		return EXIT_USAGE;
	}
	if (!strcmp(cp.src.arg, cp.dst.arg)) {
		fprintf(stderr, "ufault-cp: SRC and DST are the same\n");
		return EXIT_USAGE;
	}

	ret = uf_mm_create(&cfg, &cp.mm);
	if (ret) {
		fprintf(stderr, "ufault-cp: uf_mm_create: %s%s\n", strerror(-ret),
			ret == -EPERM ? " (userfaultfd is not allowed here: see ufault-info)" : "");
		return EXIT_FAIL;
	}
	cp.buf = aligned_alloc(PG, CHUNK);	/* one buffer for the whole copy */
	if (!cp.buf) {
		fprintf(stderr, "ufault-cp: out of memory\n");
		goto out;
	}
	if (open_src(&cp) || open_dst(&cp))
		goto out;
	cp.t0 = now();
	ret = copy_data(&cp);
	draw(&cp, true);
	if (!ret)
		status = 0;
out:
	end_close(&cp.src);
	ret = end_close(&cp.dst);
	if (ret && !status) {
		errmsg(&cp.dst, "close", ret);
		status = EXIT_FAIL;
	}
	if (status && cp.dst.opened)
		fprintf(stderr, "ufault-cp: %s may be incomplete\n", cp.dst.shown);
	uf_mm_destroy(cp.mm);
	free(cp.buf);
	return status;
}
