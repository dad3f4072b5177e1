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
#include <ufault-pack.h>
#include <ufault-redis.h>
#include <ufault-http.h>

#include "serve/refuse.h"
#include "serve/supervisor.h"
#include "../src/lib/scm.h"		/* (linked from libufault.a) */

#define MAX_CLIENTS	1024	/* served, or in their handshake */
#define MAX_HELD	1024	/* refused VMMs failed closed, besides */
#define TABLE_SIZE	(MAX_CLIENTS + MAX_HELD)
#define MAX_HANDSHAKE	65536	/* bytes: 64 regions take under 10 KiB */
#define MAX_UIDS	32
#define HUGE_PAGE	(2ULL << 20)	/* hugetlbfs guests: "huge_pages": "2M" */
#define UFFD_FEATURE_EVENT_FORK_	0x2	/* <linux/userfaultfd.h> */
#define ACCEPT_RETRY_MS	1000	/* accept() out of fds: tried again after */
#define STORM_BURST	20	/* refusals a second, logged each */
#define ACCEPT_BATCH	128	/* accepts per wake: the listen queue (64) and more */
#define ACCEPT_REST_MS	20	/* in a refusal storm: the listener rests so long
				   after each batch that refused one */
#define CONNECT_BURST	20	/* "connected" lines a second, logged each */

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
	bool refused;		/* its uffd kept: each fault gets SIGBUS
				   (refuse.c) till its socket closes */
	bool bus_logged;	/* its first SIGBUS is logged */
	bool quiet;		/* refused in a storm: counted, not logged */
	uint64_t deadline;	/* ms, monotonic: the handshake's end */
	char why[128];		/* refused: why */
};

/* Things counted a second at a time, to log past a burst on one line. */
struct burst {
	uint64_t start;		/* ms, monotonic: this second began */
	unsigned int n;		/* in it */
	unsigned int prev;	/* in the second before it */
};

struct server {
	const char *sock_path, *source, *pidfile;
	const char *record, *prefetch;	/* --record, --prefetch FILE */
	bool rec_armed;		/* the next client served is recorded */
	bool read_only;		/* --read-only */
	int lfd, sfd;
	struct uf_mm *mm;
	struct uf_object *obj;
	uint64_t size;
	uid_t uids[MAX_UIDS];	/* --allow-uid (root and this uid besides) */
	unsigned int nuids;
	gid_t gids[MAX_UIDS];	/* --allow-gid */
	unsigned int ngids;
	unsigned int stats_s;
	unsigned int orphan_s;
	void *http;		/* an http(s):// SOURCE's store: failed reads logged */
	uint64_t http_failed;	/* of those, logged so far */
	bool stopping;
	struct client *clients[TABLE_SIZE];
	unsigned int nclients;
	unsigned int nheld_now;	/* of them, refused and held (c->refused) */
	uint64_t nrefused;	/* refusals (every one logged) */
	uint64_t nheld;		/* of them, a uffd kept and failed closed */
	uint64_t nbus;		/* SIGBUS sent to refused clients */
	uint64_t ntimeouts;	/* handshakes timed out */
	uint64_t nliars;	/* ufault clients cut off for lying */
	uint64_t lib_bus, lib_oom;	/* the library's SIGBUS and OOM counts, as logged */
	uint64_t bus_check;	/* ms, monotonic: look at them again then */
	unsigned int hs_timeout_s;	/* --handshake-timeout */
	unsigned int max_per_uid;	/* --max-per-uid */
	bool accept_off;	/* not accepting: out of fds, or of slots */
	bool accept_logged;	/* ... and logged (till one is accepted) */
	uint64_t emfile_at;	/* ms: out of fds logged then (once a second) */
	struct burst storm;	/* refusals, a second at a time */
	uint64_t accept_rest;	/* ms, monotonic: in a storm, the listener
				   rests till then */
	struct burst conns;	/* connections accepted, a second at a time */
	uint64_t accept_retry;	/* ms, monotonic: out of fds, try then */
};

#define logf_(...)	super_log("", __VA_ARGS__)

static void usage(FILE *f)
{
	fprintf(f,
"usage: ufault-serve [options] SOCKET SOURCE\n"
"Serve SOURCE (a file, a redis:// or an http(s):// URL) to processes that\n"
"connect to the Unix socket SOCKET and hand over their userfaultfd: Firecracker's\n"
"UFFD memory backend (\"mem_backend\": {\"backend_type\": \"Uffd\", \"backend_path\": SOCKET}),\n"
"and ufault programs (uf_object_attach).\n"
"  --budget BYTES    cache budget (suffixes K, M, G; default none)\n"
"  --allow-uid UID   a user allowed to connect (repeatable); root and this\n"
"                    process's user always are\n"
"  --allow-gid GID   users of this group (primary or supplementary) are\n"
"                    allowed too (repeatable)\n"
"  --pidfile FILE    write the pid of the serving process there\n"
"  --handshake-timeout SECONDS  a connection that has not handed over its\n"
"                    userfaultfd (or attached) by then is refused (default 10)\n"
"  --max-per-uid N   connections of one uid at a time, refused ones still\n"
"                    held included (default 256)\n"
"  --read-only       serve SOURCE read-only even if it could be written (ufault\n"
"                    clients attach O_RDONLY only; pages reach a VMM before\n"
"                    the cache)\n"
"  --orphan-timeout SECONDS  when this server dies, how long clients wait\n"
"                    for the next one before SIGBUS (default 30)\n"
"  --stats SECONDS   log a line of statistics every SECONDS\n"
"  --threads N       fault handler threads (default 2)\n"
"  --record FILE     record the pages the first client faults, in order,\n"
"                    into FILE (written when it disconnects, or at exit)\n"
"  --prefetch FILE   copy the pages recorded in FILE into each client\n"
"                    ahead of its faults\n"
"  --help            this text\n"
"  --version         the version of ufault\n"
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

	if (c->quiet)
		;	/* (counted by storm_note()) */
	else if (why)
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
	if (c->refused)
		s->nheld_now--;
	close(c->fd);
	free(c->buf);
	free(c);
	s->clients[i] = s->clients[--s->nclients];
	if (s->accept_off) {
		/* an fd and a slot are free: accept() again (logged there) */
		s->accept_retry = 0;
	}
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* How many clients of @uid there are (@refused: refused ones only). */
static unsigned int uid_count(const struct server *s, uid_t uid, bool refused)
{
	unsigned int i, n = 0;

	for (i = 0; i < s->nclients; i++)
		n += s->clients[i]->uid == uid && (!refused || s->clients[i]->refused);
	return n;
}

/* The features a userfaultfd was opened with (its fdinfo's "API:"
 * line), or 0. */
static uint64_t uffd_features(int fd)
{
	char path[64], buf[512], *p;
	unsigned long long api, feat = 0;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 0;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	buf[n > 0 ? n : 0] = '\0';
	p = strstr(buf, "API:");
	if (!p || sscanf(p + 4, " %llx:%llx", &api, &feat) != 2)
		return 0;
	return feat;
}

/* The @nfd fds that came on @c's socket: the first is its userfaultfd,
 * if it has none yet; the others are closed. */
static void client_take_fds(struct client *c, const int *fds, int nfd)
{
	int k;

	for (k = 0; k < nfd; k++) {
		if (c->uffd < 0)
			c->uffd = fds[k];
		else
			close(fds[k]);
	}
}

/* What is queued on @c's socket: dropped, but for the first fd (its
 * userfaultfd, if it has none yet); the others are closed. */
static void client_drain(struct client *c)
{
	char drop[4096];
	struct iovec iov = { drop, sizeof(drop) };
	int fds[UF_SCM_MAX_FDS], nfd;

	while (uf_scm_recv(c->fd, &iov, 1, MSG_DONTWAIT, fds, UF_SCM_MAX_FDS, &nfd, NULL) > 0)
		client_take_fds(c, fds, nfd);
}

/*
 * Refuse client @i for @why (logged, with its pid and uid).  Its socket
 * is shut for reading first: a handshake sent from now on fails (EPIPE),
 * so it never reaches this process; one already queued is read.  If a
 * userfaultfd has arrived, the client fails closed: the fd is kept, each
 * fault read there gets SIGBUS (refuse.c), till the socket closes.
 * Otherwise the connection closes.
 */
static void client_refuse(struct server *s, unsigned int i, const char *why)
{
	struct client *c = s->clients[i];
	int fl;

	s->nrefused++;
	shutdown(c->fd, SHUT_RD);
	client_drain(c);
	c->quiet = c->quiet && c->uffd < 0;	/* (a VMM refused is logged) */
	if (c->uffd >= 0 && (uid_count(s, c->uid, true) >= s->max_per_uid ||
			     s->nheld_now >= MAX_HELD)) {
		/* bounded: this uid's refused VMMs hold --max-per-uid more,
		 * and all of them MAX_HELD */
		logf_("client pid %d uid %u: refused: %s; %u refused %s held already: "
		      "its userfaultfd is closed, its faults may hang", (int)c->pid, (unsigned)c->uid,
		      why, s->nheld_now >= MAX_HELD ? s->nheld_now : s->max_per_uid,
		      s->nheld_now >= MAX_HELD ? "in all" : "of this uid");
		client_close(s, i, NULL);
		return;
	}
	if (c->uffd < 0 || !uf_uffd_fd_is_uffd(c->uffd) ||
	    (fl = fcntl(c->uffd, F_GETFL)) < 0 || fcntl(c->uffd, F_SETFL, fl | O_NONBLOCK) < 0) {
		char msg[192];

		snprintf(msg, sizeof(msg), "refused: %s", why);
		client_close(s, i, msg);
		return;
	}
	c->refused = true;
	s->nheld_now++;
	free(c->buf);
	c->buf = NULL;
	snprintf(c->why, sizeof(c->why), "%s", why);
	s->nheld++;
	/* should this server die, the supervisor answers it */
	super_refused(c->fd, c->uffd, c->pid, c->uid);
	logf_("client pid %d uid %u: refused: %s; its faults get SIGBUS till it closes its socket",
	      (int)c->pid, (unsigned)c->uid, why);
}

/* A refused client's userfaultfd is readable: SIGBUS for each fault
 * (the first logged, each counted); a fork child's fd becomes a refused
 * client of its own, as long as there is room. */
static void client_refused_fault(struct server *s, unsigned int i)
{
	struct client *c = s->clients[i], *k = NULL;
	struct refuse_result res;
	unsigned int f;

	refuse_answer(c->uffd, c->pid, &res);
	s->nbus += res.faults;
	if (res.faults && !c->bus_logged) {
		c->bus_logged = true;
		logf_("client pid %d uid %u: SIGBUS at %#" PRIx64 "%s: refused (%s)", (int)c->pid,
		      (unsigned)c->uid, res.first, res.killed ? " (no poison marker: signal sent)" : "",
		      c->why);
	}
	for (f = 0; f < res.nforked; f++) {
		int fd = -1;

		k = NULL;
		if (s->nclients < TABLE_SIZE && s->nheld_now < MAX_HELD &&
		    uid_count(s, c->uid, true) < s->max_per_uid &&
		    (k = calloc(1, sizeof(*k))) &&
		    (fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3)) >= 0) {
			*k = *c;
			k->fd = fd;
			k->uffd = res.forked[f];
			k->bus_logged = false;
			s->clients[s->nclients++] = k;
			s->nheld++;
			s->nheld_now++;
			super_refused(k->fd, k->uffd, k->pid, k->uid);
			continue;
		}
		free(k);
		logf_("client pid %d uid %u: a fork child's userfaultfd cannot be kept: closed",
		      (int)c->pid, (unsigned)c->uid);
		close(res.forked[f]);
	}
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
		if (in[i].page_size != 4096 && in[i].page_size != HUGE_PAGE) {
			snprintf(why, sizeof(why), "region %d: page size %" PRIu64 " not served "
				 "(4096 and 2097152 only)", i, in[i].page_size);
			return why;
		}
		if (in[i].page_size != in[0].page_size)
			return "regions of different page sizes";
		if (!in[i].size || (in[i].addr | in[i].size | in[i].offset) & (in[i].page_size - 1))
			return "a region not page-aligned (to its page size), or empty";
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
	/* (each fork child would cost an fd and a table outside every limit;
	 * Firecracker never asks for them) */
	if (uffd_features(c->uffd) & UFFD_FEATURE_EVENT_FORK_)
		return "a userfaultfd with fork events (UFFD_FEATURE_EVENT_FORK): not served";
	/* the supervisor first: from now on the client outlives this server */
	c->id = super_adopt(c->fd, c->uffd, c->pid, c->uid, r, (unsigned int)n, in[0].page_size);
	ret = uf_object_serve_uffd_huge(s->obj, c->uffd, r, (unsigned int)n,
					&(struct uf_serve_opts){ .on_remove = super_on_remove,
								 .arg = (void *)(uintptr_t)c->id,
								 .tenant = (unsigned int)c->uid + 1 },
					(size_t)in[0].page_size);
	if (ret)
		super_forget(c->id, false);
	if (ret == -EBADF)
		return "the file descriptor is not a userfaultfd";
	if (ret) {
		snprintf(why, sizeof(why), "cannot serve: %s", strerror(-ret));
		return why;
	}
	c->uffd = -1;		/* the library's */
	if (in[0].page_size == 4096) {	/* (no record of hugetlbfs memory) */
		c->recorded = s->rec_armed;	/* the first served since the record began */
		s->rec_armed = false;
	}
	snprintf(why, sizeof(why), "%d region%s%s%s", n, n == 1 ? "" : "s",
		 in[0].page_size == HUGE_PAGE ? " of 2 MiB pages (hugetlbfs)" : "",
		 c->recorded ? ", recorded" : s->prefetch && in[0].page_size != HUGE_PAGE ?
		 ", working set pushed" : "");
	logf_("client pid %d: served, %s", (int)c->pid, why);
	return NULL;
}

static bool storm_note(struct server *s, uint64_t now);
static void storm_rest(struct server *s, uint64_t now);

/* A served or refused client hung up.  A ufault client the library cut
 * off for lying about its mappings is named, and counted. */
static void client_gone(struct server *s, unsigned int i)
{
	struct client *c = s->clients[i];
	pid_t liar = 0;
	int left;

	left = c->attached ? uf_object_serve_ban(s->obj, c->uid, &liar) : 0;
	if (left > 0 && liar == c->pid) {
		s->nliars++;
		logf_("client pid %d uid %u: lied about its mappings (faults on pages its "
		      "mappings do not show): SIGBUS, connection ended; uid %u refused %d s",
		      (int)c->pid, (unsigned)c->uid, (unsigned)c->uid, left);
	}
	client_close(s, i, NULL);
}

/* Readable: the handshake's bytes (and fd), or after it EOF. */
static void client_read(struct server *s, unsigned int i)
{
	struct client *c = s->clients[i];
	int fds[UF_SCM_MAX_FDS], nfd, mflags;
	char drop[4096];
	struct iovec iov;
	const char *why;
	bool incomplete;
	ssize_t n;

	if (c->attached || c->refused) {
		client_gone(s, i);	/* hung up (the library's thread ends) */
		return;
	}
	if (!c->len) {
		/* a ufault client's hello, or Firecracker's JSON (-EPROTO) */
		int r = uf_object_serve_client(s->obj, c->fd, 0);

		if (r == -EAGAIN)
			return;
		if (r == -EPERM) {
			int left = uf_object_serve_ban(s->obj, c->uid, NULL);
			uint64_t now = now_ms();
			char why[128];

			/* a banned liar asking again at once is a refusal
			 * storm as at accept (accept_batch): the listener
			 * rests */
			c->quiet = storm_note(s, now);
			storm_rest(s, now);
			snprintf(why, sizeof(why), "a ufault client of uid %u lied about its "
				 "mappings: its clients are refused %d s more (told -EPERM)",
				 (unsigned)c->uid, left > 0 ? left : 1);
			client_refuse(s, i, why);
			return;
		}
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
	n = uf_scm_recv(c->fd, &iov, 1, MSG_DONTWAIT, fds, UF_SCM_MAX_FDS, &nfd, &mflags);
	if (n == -EAGAIN)
		return;		/* retried at the next poll */
	client_take_fds(c, fds, nfd);	/* one is the handshake's */
	if (n < 0) {
		client_close(s, i, strerror((int)-n));
		return;
	}
	if (mflags & MSG_CTRUNC) {
		client_refuse(s, i, "more file descriptors than one");
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
	client_refuse(s, i, incomplete ? "a handshake longer than 64 KiB" : why);
}

/* May @fd's peer (@cred, from SO_PEERCRED) be served?  Root, this user,
 * --allow-uid, and --allow-gid as the peer's group or one of its
 * supplementary groups (SO_PEERGROUPS: as they were at its connect()). */
static bool peer_allowed(const struct server *s, int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t gl = sizeof(groups);
	unsigned int k, g, ng;

	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	for (k = 0; k < s->nuids; k++)
		if (s->uids[k] == cred->uid)
			return true;
	if (!s->ngids)
		return false;
	for (k = 0; k < s->ngids; k++)
		if (s->gids[k] == cred->gid)
			return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) < 0)
		return false;	/* (ERANGE: more than 256 groups: not searched) */
	ng = gl / sizeof(gid_t);
	for (g = 0; g < ng; g++)
		for (k = 0; k < s->ngids; k++)
			if (s->gids[k] == groups[g])
				return true;
	return false;
}

/* A second of @b is over at @now: its line, if more than @max came; a
 * new second begins. */
static void burst_roll(struct burst *b, uint64_t now, unsigned int max, const char *what)
{
	if (b->n > max)
		logf_("%u more %s, not logged one by one", b->n - max, what);
	b->prev = now - b->start < 2000 ? b->n : 0;
	b->start = now;
	b->n = 0;
}

/* The second of a burst past @max is over: its line.  Return the ms till
 * it is (-1: no burst). */
static int burst_flush(struct burst *b, uint64_t now, unsigned int max, const char *what)
{
	if (b->n <= max)
		return -1;
	if (now - b->start < 1000)
		return (int)(b->start + 1000 - now);
	burst_roll(b, now, max, what);
	return -1;
}

/* One more of @b at @now: return true past @max this second (counted,
 * logged on the second's line, not on its own). */
static bool burst_note(struct burst *b, uint64_t now, unsigned int max, const char *what)
{
	if (now - b->start >= 1000)
		burst_roll(b, now, max, what);
	return ++b->n > max;
}

#define STORM_WHAT	"connections refused in a second (not allowed, over --max-per-uid, no " \
			"slot, or no handshake in time)"
#define CONNECT_WHAT	"connections accepted in a second"

/*
 * A refusal (a uid not allowed, over --max-per-uid, past a full table,
 * or a handshake timed out).  A tenant that reconnects as fast as it is
 * refused would fill the log: past STORM_BURST refusals in a second, the
 * rest of that second's are counted and logged as one line (and every
 * one in --stats).  Return true: refuse quietly.
 */
static bool storm_note(struct server *s, uint64_t now)
{
	return burst_note(&s->storm, now, STORM_BURST, STORM_WHAT);
}

/* In a refusal storm (this second, or the one before it), the listener
 * rests for ACCEPT_REST_MS after a refusal (accept_batch() says why). */
static void storm_rest(struct server *s, uint64_t now)
{
	if (s->storm.n > STORM_BURST ||
	    (s->storm.prev > STORM_BURST && now - s->storm.start < 1000))
		s->accept_rest = now + ACCEPT_REST_MS;
}

/* Accept one connection: 0 (in its handshake now), 1 (refused), or -1
 * (none: the queue is empty, or out of fds). */
static int client_accept(struct server *s)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct client *c;
	char why[160];
	unsigned int n;
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* the connection stays queued, and the listener
			 * readable: poll it again only once an fd frees */
			uint64_t now = now_ms();

			/* (at the edge, a client going and the next accept
			 * flap: logged once a second at most) */
			if (!s->accept_logged && now - s->emfile_at >= 1000) {
				logf_("accept: %s: not accepting till a client goes (%u clients)",
				      strerror(errno), s->nclients);
				s->accept_logged = true;
				s->emfile_at = now;
			}
			s->accept_off = true;
			s->accept_retry = now + ACCEPT_RETRY_MS;
		}
		return -1;
	}
	if (s->accept_logged)
		logf_("accepting again (%u clients)", s->nclients);
	s->accept_logged = false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		logf_("a client: SO_PEERCRED: %s; connection closed", strerror(errno));
		close(fd);
		return 1;
	}
	if (s->nclients == TABLE_SIZE || !(c = calloc(1, sizeof(*c)))) {
		/* (no slot even to hold it: a handshake already sent is
		 * lost with the connection) */
		shutdown(fd, SHUT_RDWR);
		s->nrefused++;
		if (!storm_note(s, now_ms()))
			logf_("client pid %d uid %u: refused: no slot (%u clients, %u of them "
			      "refused and held); connection closed", (int)cred.pid,
			      (unsigned)cred.uid, s->nclients, s->nheld_now);
		close(fd);
		return 1;
	}
	n = uid_count(s, cred.uid, false);
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->uffd = -1;
	c->deadline = now_ms() + (uint64_t)s->hs_timeout_s * 1000;
	s->clients[s->nclients++] = c;
	if (s->nclients - s->nheld_now > MAX_CLIENTS) {
		/* answered, not left in the listen queue: a VMM fails closed */
		snprintf(why, sizeof(why), "too many clients (%u served or in their handshake)",
			 MAX_CLIENTS);
		c->quiet = storm_note(s, now_ms());
		uf_object_serve_client(s->obj, fd, -EAGAIN);	/* a ufault client is told */
		client_refuse(s, s->nclients - 1, why);
		return 1;
	}
	if (n >= s->max_per_uid) {
		snprintf(why, sizeof(why), "uid %u has %u connections already (--max-per-uid)",
			 (unsigned)cred.uid, n);
		c->quiet = storm_note(s, now_ms());
		client_refuse(s, s->nclients - 1, why);
		return 1;
	}
	if (!peer_allowed(s, fd, &cred)) {
		c->quiet = storm_note(s, now_ms());
		uf_object_serve_client(s->obj, fd, -EACCES);	/* a ufault client is told */
		snprintf(why, sizeof(why), "not allowed (uid %u gid %u: neither root, this user, "
			 "--allow-uid nor --allow-gid)", (unsigned)cred.uid, (unsigned)cred.gid);
		client_refuse(s, s->nclients - 1, why);
		return 1;
	}
	if (!burst_note(&s->conns, now_ms(), CONNECT_BURST, CONNECT_WHAT))
		logf_("client pid %d uid %u connected", (int)c->pid, (unsigned)c->uid);
	return 0;
}

/*
 * The listener is readable: accept what its queue holds (ACCEPT_BATCH
 * at most), one poll() for them all.  In a refusal storm a batch that
 * refused a connection rests the listener for ACCEPT_REST_MS: a tenant
 * that reconnects as fast as it is refused then waits in the listen
 * queue (its connect() sleeps once the queue is full) and costs this
 * process a batch per rest, not a CPU spinning in accept(); a connection
 * of another tenant waits behind the flooder's, a rest for each batch
 * ahead of it in the queue.
 */
static void accept_batch(struct server *s)
{
	bool refused = false;
	int k, r;

	for (k = 0; k < ACCEPT_BATCH && s->lfd >= 0 && !s->accept_off; k++) {
		r = client_accept(s);
		if (r < 0)
			break;
		refused |= r > 0;
	}
	if (refused)
		storm_rest(s, now_ms());
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

/* SOCKET (see super_bind): mode 0600 when only root and this user may
 * connect, else 0666 and the peer check (peer_allowed) does the work.  A
 * socket nobody listens on is a dead server's: replaced, if this user's. */
static int make_socket(struct server *s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(s->sock_path) >= sizeof(a.sun_path)) {
		logf_("%s: path too long for a Unix socket", s->sock_path);
		return -1;
	}
	strcpy(a.sun_path, s->sock_path);
	if (lstat(s->sock_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(fd);
			logf_("%s: another server is listening there", s->sock_path);
			return -1;
		}
		if (fd >= 0)
			close(fd);
	}
	fd = super_bind(s->sock_path, SOCK_STREAM, s->nuids || s->ngids ? 0666 : 0600, 64);
	if (fd < 0)
		return -1;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		logf_("%s: %s", s->sock_path, strerror(errno));
		close(fd);
		unlink(s->sock_path);
		return -1;
	}
	s->lfd = fd;
	return 0;
}

/*
 * An http(s):// SOURCE, read-only (uf_http_store_open()): served as the
 * original bytes when its magic number says ufault-pack wrote it, else as
 * it is.  0 or -errno.
 */
static int open_http(struct server *s)
{
	const struct uf_store_ops *ops;
	uint64_t size;
	void *store;
	int ret = uf_http_store_open(s->source, NULL, &ops, &store, &size);

	if (ret)
		return ret;
	ret = uf_pack_create_readv(s->mm, ops, uf_http_store_readv, store, size, &s->obj);
	if (!ret)
		logf_("%s: a packed snapshot: ufault clients attach O_RDONLY only", s->source);
	else if (ret == -ENOTSUP)
		logf_("%s: a packed snapshot, and this ufault-serve was built without libzstd",
		      s->source);
	if (ret == -ENOEXEC) {
		ret = uf_object_create(s->mm, ops, store, size, &s->obj);
		if (!ret)
			uf_object_set_readv(s->obj, uf_http_store_readv);
	}
	if (ret) {
		ops->release(store);
		return ret;
	}
	s->http = store;	/* the object's now: it lives as long */
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
	else if (!strncmp(s->source, "http://", 7) || !strncmp(s->source, "https://", 8))
		ret = open_http(s);
	else if ((ret = uf_pack_open(s->mm, s->source, &s->obj)) != -ENOEXEC) {
		/* its magic number says ufault-pack wrote it: read-only */
		if (!ret)
			logf_("%s: a packed snapshot: ufault clients attach O_RDONLY only", s->source);
		else if (ret == -ENOTSUP)
			logf_("%s: a packed snapshot, and this ufault-serve was built without "
			      "libzstd", s->source);
	} else {
		/* writable when it can be (and not --read-only): ufault
		 * clients may write (uf_object_attach) */
		ret = s->read_only ? -EROFS : uf_object_open(s->mm, s->source, O_RDWR, &s->obj);
		if (ret == -EROFS && s->read_only) {
			logf_("%s: read-only (--read-only): ufault clients attach O_RDONLY only",
			      s->source);
			ret = uf_object_open(s->mm, s->source, O_RDONLY, &s->obj);
		} else if (ret == -EACCES || ret == -EROFS || ret == -EPERM || ret == -EBUSY) {
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
					   .arg = (void *)(uintptr_t)h->id,
					   .tenant = (unsigned int)h->uid + 1 };
		struct client *c = calloc(1, sizeof(*c));
		int ret = c && s->nclients < MAX_CLIENTS ? 0 : -ENOMEM;

		if (!ret)
			ret = uf_object_serve_uffd_huge(s->obj, h->uffd, h->r, h->n, &o,
							(size_t)h->page_size);
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

/* --pidfile, opened before anything starts: a path it cannot be written
 * to is found while there is nothing to undo.  A file already there (a
 * live server's, whose start this may be refused) is left as it is till
 * pidfile_write(); *created: this made it (to remove if the start
 * fails).  The fd, or -1 (logged). */
static int pidfile_open(const char *path, bool *created)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);

	*created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		logf_("--pidfile %s: %s; not started", path, strerror(errno));
	return fd;
}

/* The serving process's pid into --pidfile (opened by pidfile_open). */
static int pidfile_write(struct server *s, int fd)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	bool ok = ftruncate(fd, 0) == 0 && pwrite(fd, line, (size_t)n, 0) == n;

	if (!ok)
		logf_("--pidfile %s: %s", s->pidfile, strerror(errno ? errno : EIO));
	if (close(fd) && ok) {
		logf_("--pidfile %s: %s", s->pidfile, strerror(errno));
		ok = false;
	}
	return ok ? 0 : -1;
}

static void log_stats(struct server *s)
{
	struct uf_http_stats hs;
	struct uf_stats st;

	if (uf_mm_stats(s->mm, &st))
		return;
	logf_("stats: clients %u, faults %" PRIu64 " major %" PRIu64 " minor, %" PRIu64
	      " sigbus, pages read %" PRIu64 ", readahead %" PRIu64 ", cached %" PRIu64
	      ", evicted %" PRIu64 ", %" PRIu64 " oom, refused %" PRIu64 " (%" PRIu64 " failed closed, %" PRIu64
	      " sigbus, %" PRIu64 " timed out), liars cut off %" PRIu64 "; sigbus by cause: store %"
	      PRIu64 ", room %" PRIu64 ", outside %" PRIu64 ", other %" PRIu64, s->nclients,
	      st.major_faults, st.minor_faults, st.sigbus, st.pages_read, st.readahead_pages,
	      st.cache_pages, st.evicted_pages, st.oom, s->nrefused, s->nheld, s->nbus,
	      s->ntimeouts, s->nliars, st.sigbus_store, st.sigbus_room, st.sigbus_outside,
	      st.sigbus_other);
	if (s->http && uf_http_store_stats(s->http, &hs) == 0)
		logf_("http: %" PRIu64 " requests, %" PRIu64 " retries, %" PRIu64 " connections, %"
		      PRIu64 " failed reads%s%s", hs.requests, hs.retries, hs.connects, hs.failures,
		      hs.failures ? ", the last: " : "", hs.failures ? hs.last_cause : "");
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

/* The listener is polled unless accept() ran out of fds (retried after
 * ACCEPT_RETRY_MS, or at once when a client goes), or rests in a refusal
 * storm (accept_batch).  A full table does not stop it: each new
 * connection is answered (client_accept). */
static bool accepting(struct server *s, uint64_t now)
{
	if (s->lfd < 0)
		return false;
	if (s->accept_off && now >= s->accept_retry)
		s->accept_off = false;
	return !s->accept_off && now >= s->accept_rest;
}

/* Handshakes past their deadline are refused (failed closed if their
 * userfaultfd came); return the ms till the next deadline (-1: none). */
static int handshake_timeouts(struct server *s, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	char why[64];
	unsigned int i;

	snprintf(why, sizeof(why), "no handshake within %u s (--handshake-timeout)",
		 s->hs_timeout_s);
	for (i = s->nclients; i-- > 0;) {
		struct client *c = s->clients[i];

		if (c->served || c->refused)
			continue;
		if (c->deadline <= now) {
			s->ntimeouts++;
			c->quiet = storm_note(s, now);
			client_refuse(s, i, why);
		} else if (c->deadline < next) {
			next = c->deadline;
		}
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

/* An http(s):// SOURCE's reads that failed since the last call (their
 * faults got SIGBUS): one line with the count and the last cause. */
static void log_http_failures(struct server *s)
{
	struct uf_http_stats hs;

	if (!s->http || uf_http_store_stats(s->http, &hs) || hs.failures == s->http_failed)
		return;
	logf_("%s: %" PRIu64 " more failed reads (their faults got SIGBUS); the last: %s (%s)",
	      s->source, hs.failures - s->http_failed, strerror(-hs.last_error), hs.last_cause);
	s->http_failed = hs.failures;
}

/*
 * SIGBUS the fault path sent (the library counts them: uf_stats' sigbus,
 * and oom for a page no memory could be found for) since the last look:
 * logged with their cause, at most once a second while clients are
 * served.  Return the ms till the next look, or -1.
 */
static int check_sigbus(struct server *s, uint64_t now)
{
	struct uf_stats st;

	if (!s->nclients)
		return -1;
	if (now < s->bus_check)
		return (int)(s->bus_check - now);
	s->bus_check = now + 1000;
	if (uf_mm_stats(s->mm, &st))
		return 1000;
	if (st.sigbus > s->lib_bus)
		logf_("SIGBUS: %" PRIu64 " fault%s not served, %" PRIu64 " in all: the store %" PRIu64
		      ", no room under the budget %" PRIu64 ", outside every region %" PRIu64
		      ", other %" PRIu64, st.sigbus - s->lib_bus, st.sigbus - s->lib_bus == 1 ? "" : "s",
		      st.sigbus, st.sigbus_store, st.sigbus_room, st.sigbus_outside, st.sigbus_other);
	if (st.oom > s->lib_oom)
		logf_("SIGBUS: %" PRIu64 " fault%s found no memory for the page (--budget, the host, "
		      "or a hugetlbfs client's empty huge page pool), %" PRIu64 " in all", st.oom - s->lib_oom,
		      st.oom - s->lib_oom == 1 ? "" : "s", st.oom);
	s->lib_bus = st.sigbus;
	s->lib_oom = st.oom;
	log_http_failures(s);	/* the cause, for an http(s):// SOURCE */
	return 1000;
}

/* The poll() timeout: the first of the next stats line (@next_stats),
 * handshake deadline, and accept retry.  -1: none. */
static int loop_timeout(struct server *s, uint64_t now, uint64_t *next_stats)
{
	int t = handshake_timeouts(s, now), u = check_sigbus(s, now);

	if (u >= 0)
		t = t < 0 || u < t ? u : t;
	u = burst_flush(&s->storm, now, STORM_BURST, STORM_WHAT);
	if (u >= 0)
		t = t < 0 || u < t ? u : t;
	u = burst_flush(&s->conns, now, CONNECT_BURST, CONNECT_WHAT);
	if (u >= 0)
		t = t < 0 || u < t ? u : t;
	if (s->accept_rest > now && !s->accept_off) {
		u = (int)(s->accept_rest - now);
		t = t < 0 || u < t ? u : t;
	}

	if (s->stats_s) {
		if (now >= *next_stats) {
			log_stats(s);
			*next_stats += (uint64_t)s->stats_s * 1000;
		}
		u = (int)(*next_stats - now);
		t = t < 0 || u < t ? u : t;
	}
	if (s->accept_off && s->accept_retry != UINT64_MAX) {
		u = s->accept_retry > now ? (int)(s->accept_retry - now) : 0;
		t = t < 0 || u < t ? u : t;
	}
	return t;
}

static void serve_loop(struct server *s)
{
	static struct pollfd pfd[2 * TABLE_SIZE + 2];
	static unsigned int held[TABLE_SIZE];	/* a refused client's uffd at pfd[2 + nc + k] */
	uint64_t next_stats = now_ms() + (uint64_t)s->stats_s * 1000;

	while (!s->stopping || s->nclients) {
		unsigned int i, k, nh = 0, np = 0, nc;
		uint64_t now = now_ms();
		int timeout = loop_timeout(s, now, &next_stats), ready;

		nc = s->nclients;	/* (after the timeouts) */
		pfd[np++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		pfd[np++] = (struct pollfd){ .fd = accepting(s, now) ? s->lfd : -1, .events = POLLIN };
		/* (attached and refused: their hang-up alone) */
		for (i = 0; i < nc; i++)
			pfd[np++] = (struct pollfd){ .fd = s->clients[i]->fd,
						     .events = s->clients[i]->attached ||
								       s->clients[i]->refused ? 0 : POLLIN };
		for (i = 0; i < nc; i++)
			if (s->clients[i]->refused) {
				held[nh++] = i;
				pfd[np++] = (struct pollfd){ .fd = s->clients[i]->uffd, .events = POLLIN };
			}
		ready = poll(pfd, np, timeout);
		if (ready <= 0)
			continue;
		if (pfd[0].revents && on_signal(s))
			return;
		/* faults first: a client closed below moves another */
		for (k = 0; k < nh; k++)
			if (pfd[2 + nc + k].revents)
				client_refused_fault(s, held[k]);
		/* from the last: a closed client moves the last into its slot */
		for (i = nc; i-- > 0;)
			if (pfd[2 + i].revents)
				client_read(s, i);
		if (pfd[1].revents && s->lfd >= 0)
			accept_batch(s);
	}
	logf_("every client has gone: exiting");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "budget", required_argument, NULL, 'b' },
		{ "allow-uid", required_argument, NULL, 'u' },
		{ "allow-gid", required_argument, NULL, 'g' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "stats", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "orphan-timeout", required_argument, NULL, 'o' },
		{ "record", required_argument, NULL, 'R' },
		{ "prefetch", required_argument, NULL, 'P' },
		{ "handshake-timeout", required_argument, NULL, 'H' },
		{ "max-per-uid", required_argument, NULL, 'M' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct server s = { .lfd = -1, .sfd = -1, .orphan_s = 30, .hs_timeout_s = 10,
			    .max_per_uid = 256 };
	struct super_state sup = { .lfd = -1, .cache_fd = -1 };
	bool had_cache;
	int pidfd = -1;
	bool pid_created = false;
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
		case 'g':
			if (parse_u64(optarg, &v, false) || v >= UINT32_MAX || s.ngids == MAX_UIDS) {
				fprintf(stderr, "ufault-serve: --allow-gid %s: not a gid\n", optarg);
				return 2;
			}
			s.gids[s.ngids++] = (gid_t)v;
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
		case 'H':
			if (parse_u64(optarg, &v, false) || !v || v > 3600) {
				fprintf(stderr, "ufault-serve: --handshake-timeout %s: 1 to 3600 seconds\n",
					optarg);
				return 2;
			}
			s.hs_timeout_s = (unsigned int)v;
			break;
		case 'M':
			if (parse_u64(optarg, &v, false) || !v || v > MAX_CLIENTS) {
				fprintf(stderr, "ufault-serve: --max-per-uid %s: 1 to %d\n", optarg,
					MAX_CLIENTS);
				return 2;
			}
			s.max_per_uid = (unsigned int)v;
			break;
		case 'P':
			s.prefetch = optarg;
			break;
		case 'r':
			s.read_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ufault-serve (ufault) %s\n", UF_VERSION);
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
	/* what can be checked is checked before anything starts */
	if (s.pidfile && (pidfd = pidfile_open(s.pidfile, &pid_created)) < 0)
		return 1;
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
	if (!ret && pidfd >= 0) {
		ret = pidfile_write(&s, pidfd);
		pidfd = -1;
	}
	if (pidfd >= 0)
		close(pidfd);
	if (ret) {
		/* no client to keep for the next server (a cache kept: its
		 * ufault clients may be there): the supervisor exits, and
		 * takes SOCKET and SOCKET.ctl with it, before this does */
		if (!sup.nclients && !had_cache)
			super_bye();
		if (sup.cache_fd >= 0)
			close(sup.cache_fd);
		uf_object_put(s.obj);
		uf_mm_destroy(s.mm);
		if (pid_created)
			unlink(s.pidfile);
		return 1;
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
