// SPDX-License-Identifier: MIT
/*
 * ufault-serve - serve one object's pages to other processes over a Unix
 * socket: Firecracker's UFFD memory backend, from ufault's page cache.
 *
 *   ufault-serve [options] SOCKET SOURCE
 *
 * A client connects and sends, in one sendmsg(), a JSON array of
 * {"base_host_virt_addr", "size", "offset", "page_size"} ("page_size_kib"
 * in older Firecracker releases, holding bytes) with its userfaultfd as
 * SCM_RIGHTS; the socket then stays open and is never written.  Its
 * faults are served by the library (uf_object_serve_uffd); this program
 * accepts, checks and logs.  One thread here, the library's handlers
 * elsewhere: nothing a client sends or fails to send holds up another.
 * A supervisor process beside it (serve/supervisor.c) keeps the clients
 * for the next server when this one dies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <ufault.h>
#include <ufault-redis.h>

#include "serve/supervisor.h"

#define MAX_CLIENTS	1024
#define MAX_HANDSHAKE	65536	/* bytes: 64 regions take under 10 KiB */
#define MAX_UIDS	32

struct client {
	int fd;
	pid_t pid;
	uid_t uid;
	bool served;		/* handshake done: the library serves it */
	bool recorded;		/* --record: the client recorded */
	bool attached;		/* a ufault client (uf_object_attach): polled
				   for its hang-up only */
	size_t len;
	char *buf;		/* the handshake so far */
	int uffd;		/* received, not yet handed over; or -1 */
	uint64_t id;		/* the supervisor's name for it */
};

struct server {
	const char *sock_path, *source, *pidfile;
	const char *record, *prefetch;	/* --record, --prefetch FILE */
	bool rec_armed;		/* the next client served is recorded */
	int lfd, sfd;
	struct uf_mm *mm;
	struct uf_object *obj;
	uint64_t size;
	uid_t uids[MAX_UIDS];
	unsigned int nuids;
	unsigned int stats_s;
	unsigned int orphan_s;
	bool stopping;
	uint64_t sigbus_logged;	/* SIGBUS answers logged (log_sigbus) */
	struct client *clients[MAX_CLIENTS];
	unsigned int nclients;
};

#define logf_(...)	super_log("", __VA_ARGS__)

static void usage(FILE *f)
{
	fprintf(f,
"usage: ufault-serve [options] SOCKET SOURCE\n"
"Serve SOURCE (a file, or a redis:// URL) to processes that connect to the\n"
"Unix socket SOCKET and hand over their userfaultfd: Firecracker's UFFD\n"
"memory backend (\"mem_backend\": {\"backend_type\": \"Uffd\", \"backend_path\": SOCKET}),\n"
"and ufault programs (uf_object_attach).\n"
"  --budget BYTES    cache budget (suffixes K, M, G; default none)\n"
"  --allow-uid UID   peers allowed (repeatable; default root and this uid)\n"
"  --pidfile FILE    write the pid of the serving process there\n"
"  --orphan-timeout SECONDS  when this server dies, how long clients wait\n"
"                    for the next one before SIGBUS (default 30)\n"
"  --stats SECONDS   log a line of statistics every SECONDS\n"
"  --threads N       fault handler threads (default 2)\n"
"  --record FILE     record the pages the first client faults, in order,\n"
"                    into FILE (written when it disconnects, or at exit)\n"
"  --prefetch FILE   copy the pages recorded in FILE into each client\n"
"                    ahead of its faults\n"
"  --help            this text\n"
"If this process dies, a supervisor (SOCKET.ctl) keeps its clients for a new\n"
"ufault-serve on SOCKET and SOURCE; with none for --orphan-timeout: SIGBUS.\n"
"SIGTERM: stop accepting, exit once the clients have gone; a second\n"
"SIGTERM or SIGINT: exit now (pages clients have not received: SIGBUS).\n");
}

static int parse_u64(const char *s, uint64_t *v, bool suffix)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (suffix && *end) {
		int sh = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 :
			 *end == 'G' || *end == 'g' ? 30 : -1;

		if (sh < 0 || end[1] || x > (UINT64_MAX >> sh))
			return -1;
		x <<= sh;
		end++;
	}
	if (*end)
		return -1;
	*v = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The handshake: a JSON array of regions, strictly                    */
/* ------------------------------------------------------------------ */

struct json {
	const char *p, *end;
	const char *err;	/* why it is not a handshake */
	bool incomplete;	/* ran out of bytes: more may come */
};

struct region_in {
	uint64_t addr, size, offset, page_size;
	unsigned int have;	/* bits: F_* */
};
#define F_ADDR	0x01
#define F_SIZE	0x02
#define F_OFF	0x04
#define F_PS	0x08
#define F_PSK	0x10

static void ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool fail(struct json *j, const char *why)
{
	if (!j->err) {
		j->err = why;
		if (j->p >= j->end)
			j->incomplete = true;
	}
	return false;
}

static bool expect(struct json *j, char c)
{
	ws(j);
	if (j->p >= j->end || *j->p != c)
		return fail(j, "not a JSON array of region objects");
	j->p++;
	return true;
}

/* A key: plain ASCII, no escapes (every key of the shape is so). */
static bool key(struct json *j, char *out, size_t cap)
{
	size_t n = 0;

	if (!expect(j, '"'))
		return false;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;

		if (c < 0x20 || c == '\\' || c >= 0x7f || n + 1 >= cap)
			return fail(j, "a key that is not one of the region's");
		out[n++] = (char)c;
	}
	if (j->p >= j->end)
		return fail(j, "not a JSON array of region objects");
	j->p++;
	out[n] = '\0';
	return true;
}

/* A non-negative integer, as JSON writes it, that fits 64 bits. */
static bool number(struct json *j, uint64_t *v)
{
	uint64_t x = 0;
	const char *s;

	ws(j);
	s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned int d = (unsigned int)(*j->p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return fail(j, "a number above 2^64");
		x = x * 10 + d;
		j->p++;
	}
	if (j->p == s)
		return fail(j, "a field that is not a non-negative integer");
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		return fail(j, "a field that is not an integer");
	if (j->p - s > 1 && *s == '0')
		return fail(j, "a number with a leading zero");
	if (j->p >= j->end)
		return fail(j, "not a JSON array of region objects");
	*v = x;
	return true;
}

static bool object(struct json *j, struct region_in *r)
{
	static const struct { const char *name; unsigned int bit; size_t off; } fields[] = {
		{ "base_host_virt_addr", F_ADDR, offsetof(struct region_in, addr) },
		{ "size", F_SIZE, offsetof(struct region_in, size) },
		{ "offset", F_OFF, offsetof(struct region_in, offset) },
		{ "page_size", F_PS, offsetof(struct region_in, page_size) },
		{ "page_size_kib", F_PSK, 0 },
	};
	uint64_t psk = 0;

	memset(r, 0, sizeof(*r));
	if (!expect(j, '{'))
		return false;
	for (;;) {
		char k[32];
		uint64_t v;
		size_t i;

		if (!key(j, k, sizeof(k)) || !expect(j, ':') || !number(j, &v))
			return false;
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(k, fields[i].name))
				break;
		if (i == sizeof(fields) / sizeof(fields[0]))
			return fail(j, "a key that is not one of the region's");
		if (r->have & fields[i].bit)
			return fail(j, "a key given twice");
		r->have |= fields[i].bit;
		if (fields[i].bit == F_PSK)
			psk = v;
		else
			*(uint64_t *)((char *)r + fields[i].off) = v;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (!expect(j, '}'))
			return false;
		break;
	}
	/* older releases: page_size_kib alone, and it holds bytes */
	if (!(r->have & F_PS) && (r->have & F_PSK)) {
		r->page_size = psk;
		r->have |= F_PS;
	}
	if ((r->have & (F_ADDR | F_SIZE | F_OFF | F_PS)) != (F_ADDR | F_SIZE | F_OFF | F_PS))
		return fail(j, "a region without base_host_virt_addr, size, offset or page_size");
	return true;
}

/* Parse the whole handshake into @r (at most UF_SERVE_MAX_REGIONS). */
static int parse_regions(struct json *j, struct region_in *r)
{
	int n = 0;

	if (!expect(j, '['))
		return -1;
	ws(j);
	if (j->p < j->end && *j->p == ']')
		return fail(j, "no regions"), -1;
	for (;;) {
		if (n == UF_SERVE_MAX_REGIONS)
			return fail(j, "more than 64 regions"), -1;
		if (!object(j, &r[n]))
			return -1;
		n++;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (!expect(j, ']'))
			return -1;
		break;
	}
	ws(j);
	if (j->p != j->end)
		return fail(j, "bytes after the array"), -1;
	return n;
}

/* ------------------------------------------------------------------ */
/* Clients                                                             */
/* ------------------------------------------------------------------ */

/* --record: the record ends, and is written. */
static void record_stop(struct server *s, const char *whose)
{
	int n = uf_object_record_stop(s->obj);

	if (n >= 0)
		logf_("record: %d pages of %s written to %s", n, whose, s->record);
	else if (n == -ESRCH)
		logf_("record: no client was served; %s not written", s->record);
	else
		logf_("record: %s: %s", s->record, strerror(-n));
}

static void client_close(struct server *s, unsigned int i, const char *why)
{
	struct client *c = s->clients[i];
	char whose[64];

	if (why)
		logf_("client pid %d uid %u: %s; connection closed", (int)c->pid, (unsigned)c->uid,
		      why);
	else
		logf_("client pid %d disconnected", (int)c->pid);
	if (c->recorded) {
		snprintf(whose, sizeof(whose), "client pid %d", (int)c->pid);
		record_stop(s, whose);
	}
	if (c->uffd >= 0)
		close(c->uffd);
	close(c->fd);
	free(c->buf);
	free(c);
	s->clients[i] = s->clients[--s->nclients];
}

/* Every check of the handshake with a reason to log; the library checks
 * again.  Return NULL when the regions are served. */
static const char *handshake(struct server *s, struct client *c, bool *incomplete)
{
	static char why[128];
	struct region_in in[UF_SERVE_MAX_REGIONS];
	struct uf_serve_region r[UF_SERVE_MAX_REGIONS];
	uint64_t limit = (s->size + 4095) / 4096 * 4096;
	struct json j = { .p = c->buf, .end = c->buf + c->len };
	int n, i, k, ret;

	*incomplete = false;
	n = parse_regions(&j, in);
	if (n < 0) {
		*incomplete = j.incomplete;
		return j.err;
	}
	for (i = 0; i < n; i++) {
		if (in[i].page_size != 4096) {
			snprintf(why, sizeof(why), "region %d: page size %" PRIu64 " not served (4096 only)",
				 i, in[i].page_size);
			return why;
		}
		if (!in[i].size || (in[i].addr | in[i].size | in[i].offset) & 4095)
			return "a region not page-aligned, or empty";
		if (in[i].addr + in[i].size < in[i].addr || in[i].addr + in[i].size > (1ULL << 63))
			return "a region past the end of the address space";
		if (in[i].offset > limit || in[i].size > limit - in[i].offset)
			return "a region past SOURCE's end";
		for (k = 0; k < i; k++)
			if (in[i].addr < in[k].addr + in[k].size && in[k].addr < in[i].addr + in[i].size)
				return "overlapping regions";
		r[i].start = in[i].addr;
		r[i].len = in[i].size;
		r[i].offset = in[i].offset;
	}
	if (c->uffd < 0)
		return "no file descriptor with the regions";
	/* the supervisor first: from now on the client outlives this server */
	c->id = super_adopt(c->fd, c->uffd, c->pid, c->uid, r, (unsigned int)n);
	ret = uf_object_serve_uffd_opts(s->obj, c->uffd, r, (unsigned int)n,
					&(struct uf_serve_opts){ .on_remove = super_on_remove,
								 .arg = (void *)(uintptr_t)c->id });
	if (ret)
		super_forget(c->id, false);
	if (ret == -EBADF)
		return "the file descriptor is not a userfaultfd";
	if (ret) {
		snprintf(why, sizeof(why), "cannot serve: %s", strerror(-ret));
		return why;
	}
	c->uffd = -1;		/* the library's */
	c->recorded = s->rec_armed;	/* the first served since the record began */
	s->rec_armed = false;
	snprintf(why, sizeof(why), "%d region%s%s", n, n == 1 ? "" : "s",
		 c->recorded ? ", recorded" : s->prefetch ? ", working set pushed" : "");
	logf_("client pid %d: served, %s", (int)c->pid, why);
	return NULL;
}

/* Readable: the handshake's bytes (and fd), or after it EOF. */
static void client_read(struct server *s, unsigned int i)
{
	struct client *c = s->clients[i];
	char cbuf[CMSG_SPACE(4 * sizeof(int))], drop[4096];
	struct iovec iov;
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	const char *why;
	bool incomplete;
	ssize_t n;

	if (c->attached) {
		client_close(s, i, NULL);	/* hung up (the library's thread ends) */
		return;
	}
	if (!c->len) {
		/* a ufault client's hello, or Firecracker's JSON (-EPROTO) */
		int r = uf_object_serve_client(s->obj, c->fd, 0);

		if (r == -EAGAIN)
			return;
		if (r == 0) {
			c->served = c->attached = true;
			logf_("client pid %d: a ufault client, served", (int)c->pid);
			return;
		}
	}
	if (c->served) {
		/* never written: anything is read and dropped, EOF is gone */
		n = recv(c->fd, drop, sizeof(drop), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			client_close(s, i, NULL);
		return;
	}
	if (!c->buf && !(c->buf = malloc(MAX_HANDSHAKE))) {
		client_close(s, i, "out of memory");
		return;
	}
	iov.iov_base = c->buf + c->len;
	iov.iov_len = MAX_HANDSHAKE - c->len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;		/* retried at the next poll */
	for (cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int fds[4], k, nfd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(cm), (size_t)nfd * sizeof(int));
		for (k = 0; k < nfd; k++) {
			if (c->uffd < 0)
				c->uffd = fds[k];
			else
				close(fds[k]);	/* one is the handshake's */
		}
	}
	if (n < 0) {
		client_close(s, i, strerror(errno));
		return;
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		client_close(s, i, "more file descriptors than one");
		return;
	}
	if (n == 0) {
		client_close(s, i, c->len ? "closed in the middle of the handshake"
					  : "closed before the handshake");
		return;
	}
	c->len += (size_t)n;
	why = handshake(s, c, &incomplete);
	if (!why) {
		c->served = true;
		free(c->buf);
		c->buf = NULL;
		return;
	}
	if (incomplete && c->len < MAX_HANDSHAKE)
		return;		/* more bytes to come */
	client_close(s, i, incomplete ? "a handshake longer than 64 KiB" : why);
}

static void client_accept(struct server *s)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct client *c;
	unsigned int k;
	bool ok = false;
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		logf_("a client: SO_PEERCRED: %s; connection closed", strerror(errno));
		close(fd);
		return;
	}
	for (k = 0; k < s->nuids; k++)
		ok = ok || s->uids[k] == cred.uid;
	if (!ok) {
		logf_("client pid %d uid %u: uid not allowed; connection closed", (int)cred.pid,
		      (unsigned)cred.uid);
		uf_object_serve_client(s->obj, fd, -EACCES);	/* a ufault client is told */
		close(fd);
		return;
	}
	if (s->nclients == MAX_CLIENTS || !(c = calloc(1, sizeof(*c)))) {
		logf_("client pid %d: too many clients; connection closed", (int)cred.pid);
		close(fd);
		return;
	}
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->uffd = -1;
	s->clients[s->nclients++] = c;
	logf_("client pid %d uid %u connected", (int)c->pid, (unsigned)c->uid);
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

/* SOCKET, mode 0600.  A socket nobody listens on is a dead server's. */
static int make_socket(struct server *s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd;

	if (strlen(s->sock_path) >= sizeof(a.sun_path)) {
		logf_("%s: path too long for a Unix socket", s->sock_path);
		return -1;
	}
	strcpy(a.sun_path, s->sock_path);
	if (lstat(s->sock_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			logf_("%s: exists and is not a socket", s->sock_path);
			return -1;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(fd);
			logf_("%s: another server is listening there", s->sock_path);
			return -1;
		}
		if (fd >= 0)
			close(fd);
		unlink(s->sock_path);
		logf_("%s: replaced a stale socket", s->sock_path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	old = umask(077);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(s->sock_path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		logf_("%s: %s", s->sock_path, strerror(errno));
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	s->lfd = fd;
	return 0;
}

static int open_source(struct server *s, uint64_t budget, unsigned int threads)
{
	struct uf_mm_config cfg = { .handler_threads = threads, .cache_budget = budget };
	int ret = uf_mm_create(&cfg, &s->mm);

	if (ret) {
		logf_("uf_mm_create: %s", strerror(-ret));
		return -1;
	}
	if (!strncmp(s->source, "redis://", 8) || !strncmp(s->source, "rediss://", 9))
		ret = uf_redis_open(s->mm, s->source, O_RDONLY, &s->obj);
	else {
		/* writable when it can be: ufault clients may write (uf_object_attach) */
		ret = uf_object_open(s->mm, s->source, O_RDWR, &s->obj);
		if (ret == -EACCES || ret == -EROFS || ret == -EPERM || ret == -EBUSY) {
			logf_("%s: read-only (%s): ufault clients attach O_RDONLY only", s->source,
			      strerror(-ret));
			ret = uf_object_open(s->mm, s->source, O_RDONLY, &s->obj);
		}
	}
	if (ret) {
		logf_("%s: %s", s->source, strerror(-ret));
		return -1;
	}
	s->size = uf_object_size(s->obj);
	return 0;
}

/* Before any thread: the supervisor's clients and SOCKET, or a new
 * supervisor for a new SOCKET.  0 or -1 (logged). */
static int super_setup(struct server *s, struct super_state *sup)
{
	int ret = super_find(s->sock_path, s->source, s->orphan_s, sup);

	if (ret == 0) {
		if (make_socket(s))
			return -1;
		ret = super_spawn(s->sock_path, s->source, s->orphan_s, s->lfd, sup) ? -1 : 1;
	}
	if (ret < 0)
		return -1;
	s->lfd = sup->lfd;
	s->stopping = sup->stopping;
	if (s->lfd < 0 && !s->stopping) {
		/* the supervisor failed closed, SOCKET went: anew */
		if (make_socket(s))
			return -1;
		super_listen(s->lfd);
	}
	return 0;
}

/*
 * The cache the supervisor kept (a server died): the ufault clients of
 * the dead server map it, so this server's object takes it over instead
 * of a cache of its own.  Then the supervisor keeps this object's cache,
 * for the next server.  0, or -1 (logged): exit, the supervisor keeps
 * the cache for the next one.
 */
static int adopt_cache(struct server *s, struct super_state *sup)
{
	struct uf_stats st;
	int fd, ret;

	if (sup->cache_fd >= 0) {
		ret = uf_object_adopt_cache(s->obj, sup->cache_fd);
		close(sup->cache_fd);
		sup->cache_fd = -1;
		if (ret == -ESTALE) {
			logf_("the cache of the server before: not adopted (%s has another size): "
			      "its ufault clients get SIGBUS", s->source);
		} else if (ret) {
			logf_("the cache of the server before: %s", strerror(-ret));
			return -1;
		} else {
			s->size = uf_object_size(s->obj);
			if (uf_mm_stats(s->mm, &st) == 0)
				logf_("the cache of the server before: %" PRIu64 " pages adopted",
				      st.cache_pages);
		}
	}
	fd = uf_object_cache_fd(s->obj);
	if (fd >= 0) {
		super_cache(fd);
		close(fd);
	}
	return 0;
}

/* Serve the clients an earlier server served: woken, removals kept. */
static int take_clients(struct server *s, struct super_state *sup)
{
	unsigned int i;

	for (i = 0; i < sup->nclients; i++) {
		struct super_client *h = &sup->clients[i];
		struct uf_serve_opts o = { .removed = h->removed, .nremoved = h->nremoved,
					   .on_remove = super_on_remove,
					   .arg = (void *)(uintptr_t)h->id };
		struct client *c = calloc(1, sizeof(*c));
		int ret = c && s->nclients < MAX_CLIENTS ? 0 : -ENOMEM;

		if (!ret)
			ret = uf_object_serve_uffd_opts(s->obj, h->uffd, h->r, h->n, &o);
		free(h->removed);
		if (ret) {
			logf_("client pid %d: cannot take it over: %s; SIGBUS for it", (int)h->pid,
			      strerror(-ret));
			super_forget(h->id, true);
			close(h->uffd);
			close(h->conn);
			free(c);
			continue;
		}
		*c = (struct client){ .fd = h->conn, .pid = h->pid, .uid = h->uid, .served = true,
				      .uffd = -1, .id = h->id };
		s->clients[s->nclients++] = c;
		logf_("client pid %d: taken over, %u region%s", (int)h->pid, h->n,
		      h->n == 1 ? "" : "s");
	}
	free(sup->clients);
	sup->clients = NULL;
	return 0;
}

/* --record, --prefetch.  A prefetch file that cannot be used is logged,
 * and clients are served lazily. */
static int start_ws(struct server *s)
{
	int ret;

	if (s->prefetch) {
		ret = uf_object_serve_prefetch(s->obj, s->prefetch);
		if (ret) {
			logf_("--prefetch %s: %s; clients are served lazily", s->prefetch,
			      ret == -EINVAL ? "not a working-set file (Invalid argument)"
					     : ret == -ESTALE ? "recorded from another version of "
								"SOURCE (Stale file handle)"
							      : strerror(-ret));
			s->prefetch = NULL;
		}
	}
	if (s->record) {
		ret = uf_object_serve_record(s->obj, s->record);
		if (ret) {
			logf_("--record %s: %s", s->record, strerror(-ret));
			return -1;
		}
		s->rec_armed = true;
	}
	return 0;
}

static void log_stats(struct server *s)
{
	struct uf_stats st;

	if (uf_mm_stats(s->mm, &st))
		return;
	logf_("stats: clients %u, faults %" PRIu64 " major %" PRIu64 " minor, %" PRIu64
	      " sigbus (store %" PRIu64 ", room %" PRIu64 ", outside %" PRIu64 ", other %" PRIu64
	      "), pages read %" PRIu64 ", readahead %" PRIu64 ", cached %" PRIu64
	      ", evicted %" PRIu64, s->nclients, st.major_faults, st.minor_faults, st.sigbus,
	      st.sigbus_store, st.sigbus_room, st.sigbus_outside, st.sigbus_other,
	      st.pages_read, st.readahead_pages, st.cache_pages, st.evicted_pages);
}

/* Faults answered with SIGBUS since the last look: one line, with the
 * causes (struct uf_stats), so that none goes unexplained. */
static void log_sigbus(struct server *s)
{
	struct uf_stats st;

	if (uf_mm_stats(s->mm, &st) || st.sigbus == s->sigbus_logged)
		return;
	logf_("SIGBUS: %" PRIu64 " fault%s answered so (%" PRIu64 " in all: store %" PRIu64
	      ", no room under the budget %" PRIu64 ", outside every region %" PRIu64
	      ", other %" PRIu64 ")", st.sigbus - s->sigbus_logged,
	      st.sigbus - s->sigbus_logged == 1 ? "" : "s", st.sigbus, st.sigbus_store,
	      st.sigbus_room, st.sigbus_outside, st.sigbus_other);
	s->sigbus_logged = st.sigbus;
}

/* SIGTERM: stop accepting (the socket goes), exit when clients have. */
static bool on_signal(struct server *s)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return false;
	if (si.ssi_signo == SIGTERM && s->stopping && super_is((pid_t)si.ssi_pid)) {
		logf_("SIGTERM from the supervisor: stopping already");
		return false;	/* not a second SIGTERM */
	}
	if (si.ssi_signo == SIGTERM && !s->stopping) {
		s->stopping = true;
		super_stopping();
		close(s->lfd);
		s->lfd = -1;
		unlink(s->sock_path);
		logf_("SIGTERM: no new clients; exiting once %u client%s gone", s->nclients,
		      s->nclients == 1 ? " has" : "s have");
		return false;
	}
	logf_("%s: exiting now, %u client%s left to SIGBUS", strsignal((int)si.ssi_signo),
	      s->nclients, s->nclients == 1 ? "" : "s");
	return true;
}

static void serve_loop(struct server *s)
{
	struct pollfd pfd[MAX_CLIENTS + 2];
	struct timespec next, now, bus = { 0 };

	clock_gettime(CLOCK_MONOTONIC, &next);
	next.tv_sec += s->stats_s;
	while (!s->stopping || s->nclients) {
		unsigned int i, np = 0, nc = s->nclients;
		/* (a look at the SIGBUS count each second while clients are) */
		int timeout = nc ? 1000 : -1, ready;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > bus.tv_sec) {
			log_sigbus(s);
			bus = now;
		}

		pfd[np++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		pfd[np++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		for (i = 0; i < nc; i++)
			pfd[np++] = (struct pollfd){ .fd = s->clients[i]->fd,
						     .events = s->clients[i]->attached ? 0 : POLLIN };
		if (s->stats_s) {
			int left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = (int)((next.tv_sec - now.tv_sec) * 1000 +
				     (next.tv_nsec - now.tv_nsec) / 1000000);
			timeout = timeout < 0 || left < timeout ? left : timeout;
			if (timeout <= 0) {
				log_stats(s);
				next.tv_sec += s->stats_s;
				continue;
			}
		}
		ready = poll(pfd, np, timeout);
		if (ready <= 0)
			continue;
		if (pfd[0].revents && on_signal(s))
			return;
		/* from the last: a closed client moves the last into its slot */
		for (i = nc; i-- > 0;)
			if (pfd[2 + i].revents)
				client_read(s, i);
		if (pfd[1].revents && s->lfd >= 0)
			client_accept(s);
	}
	log_sigbus(s);
	logf_("every client has gone: exiting");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "budget", required_argument, NULL, 'b' },
		{ "allow-uid", required_argument, NULL, 'u' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "stats", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "orphan-timeout", required_argument, NULL, 'o' },
		{ "record", required_argument, NULL, 'R' },
		{ "prefetch", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server s = { .lfd = -1, .sfd = -1, .orphan_s = 30 };
	struct super_state sup = { .lfd = -1, .cache_fd = -1 };
	bool had_cache;
	uint64_t budget = 0, v;
	unsigned int threads = 2;
	sigset_t mask;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_u64(optarg, &budget, true)) {
				fprintf(stderr, "ufault-serve: --budget %s: not a size\n", optarg);
				return 2;
			}
			break;
		case 'u':
			if (parse_u64(optarg, &v, false) || v >= UINT32_MAX || s.nuids == MAX_UIDS) {
				fprintf(stderr, "ufault-serve: --allow-uid %s: not a uid\n", optarg);
				return 2;
			}
			s.uids[s.nuids++] = (uid_t)v;
			break;
		case 'p':
			s.pidfile = optarg;
			break;
		case 's':
			if (parse_u64(optarg, &v, false) || !v || v > 86400) {
				fprintf(stderr, "ufault-serve: --stats %s: 1 to 86400 seconds\n", optarg);
				return 2;
			}
			s.stats_s = (unsigned int)v;
			break;
		case 't':
			if (parse_u64(optarg, &v, false) || !v || v > 64) {
				fprintf(stderr, "ufault-serve: --threads %s: 1 to 64\n", optarg);
				return 2;
			}
			threads = (unsigned int)v;
			break;
		case 'o':
			if (parse_u64(optarg, &v, false) || v > 86400) {
				fprintf(stderr, "ufault-serve: --orphan-timeout %s: 0 to 86400 seconds\n",
					optarg);
				return 2;
			}
			s.orphan_s = (unsigned int)v;
			break;
		case 'R':
			s.record = optarg;
			break;
		case 'P':
			s.prefetch = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	if (s.record && s.prefetch) {
		fprintf(stderr, "ufault-serve: --record and --prefetch: one or the other\n");
		return 2;
	}
	s.sock_path = argv[optind];
	s.source = argv[optind + 1];
	if (!s.nuids) {
		s.uids[s.nuids++] = 0;
		s.uids[s.nuids++] = getuid();
	}
	/* the library's threads inherit the mask: signals come here only */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s.sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (s.sfd >= 0 && super_setup(&s, &sup) == 0) {
		had_cache = sup.cache_fd >= 0;
		ret = open_source(&s, budget, threads) || adopt_cache(&s, &sup) || start_ws(&s) ||
		      take_clients(&s, &sup);
	} else {
		had_cache = false;
		ret = -1;
	}
	if (ret) {
		/* no client to keep for the next server (a cache kept: its
		 * ufault clients may be there) */
		if (!sup.nclients && !had_cache)
			super_bye();
		if (sup.cache_fd >= 0)
			close(sup.cache_fd);
		uf_object_put(s.obj);
		uf_mm_destroy(s.mm);
		return 1;
	}
	if (s.pidfile) {
		FILE *f = fopen(s.pidfile, "w");

		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
			logf_("%s: %s", s.pidfile, strerror(errno));
			unlink(s.sock_path);
			return 1;
		}
	}
	logf_("serving %s (%" PRIu64 " bytes) on %s, pid %d, supervisor pid %d", s.source, s.size,
	      s.sock_path, (int)getpid(), (int)sup.super_pid);
	serve_loop(&s);
	while (s.nclients)
		client_close(&s, s.nclients - 1, "server exiting");
	if (s.rec_armed)
		record_stop(&s, "no client");
	if (s.lfd >= 0) {
		close(s.lfd);
		unlink(s.sock_path);
	}
	/* clients still alive get SIGBUS for what they have not received */
	uf_object_put(s.obj);
	uf_mm_destroy(s.mm);
	super_bye();
	if (s.pidfile)
		unlink(s.pidfile);
	return 0;
}
