// SPDX-License-Identifier: MIT
/*
 * ufault-serve's supervisor: the clients outlive their server.
 *
 * A Firecracker VMM keeps its own copy of the userfaultfd it hands over,
 * so when the server that reads it dies the VMM's next fault on a hole
 * waits for ever.  So the server is not alone: beside it runs a small
 * process, the supervisor, which holds a duplicate of everything a server
 * needs to go on -- SOCKET's listening socket, and per client its
 * userfaultfd, its connection, its regions and the ranges its balloon
 * removed -- and hands it all to the next ufault-serve started on the
 * same SOCKET and SOURCE.  It serves no page itself, and takes no lock
 * nor memory of the server's: a server killed at any instant leaves it
 * whole.
 *
 * Processes.  The first ufault-serve on a SOCKET creates it and the
 * control socket SOCKET.ctl (mode 0600), forks the supervisor (twice, and
 * in a session of its own: the server's death, a terminal's ^C, a signal
 * to the server's process group leave it alone), then connects to it as
 * every later server does.  It forks before it starts a thread or opens
 * SOURCE.  The serving process keeps its pid (what --pidfile writes).
 *
 * Protocol.  SOCK_SEQPACKET on SOCKET.ctl: one message a packet, fds as
 * SCM_RIGHTS, EOF when the peer dies.  Peers must have the supervisor's
 * uid (SO_PEERCRED).  Each message is a struct smsg, then its payload.
 *   server -> supervisor, once connected:
 *     HELLO    {pid, orphan timeout, SOURCE}
 *   supervisor -> server, the only messages it ever sends:
 *     REFUSE   {why}: a server is serving there, another SOURCE, exiting
 *     WELCOME  {supervisor pid, the next client id, stopping, clients}
 *              + SOCKET's listening socket (none once stopping or failed)
 *     CLIENT   {id, pid, uid, regions} + its userfaultfd and connection,
 *     RANGES   {id, ranges it removed} (as many as needed),
 *     CACHE    + the object's cache (a memfd), if one is kept, then
 *     END.     The server serves each client with the removed ranges
 *              (uf_object_serve_uffd_opts), which first wakes every
 *              region: threads asleep in a fault the dead server read
 *              fault again, for the new one to read.
 *   server -> supervisor, from then on:
 *     ADOPT    {id, pid, uid, regions} + userfaultfd and connection: a
 *              client's handshake is done; sent before it is served,
 *     REMOVED  {id, start, len}: a UFFD_EVENT_REMOVE (the balloon), sent
 *              by the handler thread that read it (->on_remove),
 *     FORGET   {id}: not served after all; FAIL {id}: a client handed
 *              over that this server cannot serve: poison it now (a:
 *              1 for a VMM the server refused, ADOPTed with no
 *              regions: answered fault by fault, not logged again),
 *     LISTEN   + a listening socket: SOCKET made anew (the supervisor
 *              had closed it, failing closed),
 *     CACHE    + its object's cache (uf_object_cache_fd), which the
 *              supervisor keeps in place of the one it had,
 *     STOPPING: SIGTERM; the server has closed SOCKET,
 *     BYE:     exiting on purpose, every client gone or poisoned by the
 *              server itself: the supervisor exits too.
 *   EOF without BYE is a server that died: the clients wait.
 *
 * Why it is safe.
 *  - Two servers never read one userfaultfd: a server takes over only
 *    while no other is connected, and a connection's EOF means its
 *    process is gone (the kernel closes a dead process's fds; no other
 *    process holds the server's end).
 *  - Nothing is lost that was sent: a message the server sent before it
 *    died is still queued for the supervisor, read before the EOF.  What
 *    no message can cover: a removal the dead server read from the
 *    userfaultfd (the kernel lets the VMM's madvise() return at that read)
 *    and died before reporting, one system call later; and a client whose
 *    handshake was received but not yet sent on (its fd lives in the
 *    server alone: the VMM waits for ever, as with no supervisor).
 *  - Pages already copied are the VMM's own anonymous memory: no cache
 *    needs to survive for them.  Removed pages must read zeros, never
 *    SOURCE's bytes: the supervisor keeps a bit per page of every region,
 *    the same bits serve.c keeps, and the next server starts with them.
 *  - While no server runs, a fault waits (the supervisor reads nothing).
 *    After --orphan-timeout seconds (the newest server's), it fails
 *    closed: SOCKET is closed and removed (a VMM started then is refused,
 *    not left waiting), and for every client the holes of its regions
 *    get the poison marker (SIGBUS in the VMM, never zeros; a crash its
 *    own supervisor sees), removed pages the zero page, and every region
 *    is woken.  From then on the supervisor reads each client's
 *    userfaultfd itself and answers each fault the same way (a balloon's
 *    madvise() raises a fault-free event that must be read too), until
 *    the client is gone; a later server may still take them over.
 *  - A client is let go only when its memory is gone (ESRCH from its
 *    userfaultfd, as uffd.c's uf_uffd_alive() asks), never because its
 *    connection closed.
 *
 * Signals.  SIGTERM to the supervisor: passed on to the server, once
 * (stop accepting, exit once the clients have gone; the server's BYE then
 * ends the supervisor).  The server does not count it as a second
 * SIGTERM (super_is()): a service manager that signals both processes
 * stops the server gracefully.  Should that server die without BYE, its
 * clients are failed closed at once: no next server is wanted.  With no
 * server: fail closed now, exit once the clients have gone; a second
 * SIGTERM: exit now.  SIGINT: exit now -- with a server, which goes on
 * serving without a supervisor; without one, after failing closed.
 * SIGUSR1: log a status line ("status N:" with the value sigqueue() sent).
 *
 * ufault clients (uf_object_attach) are not kept here: each holds its own
 * userfaultfd (its faults wait there while no server runs) and its table
 * of mappings, and when its connection hangs up it connects to SOCKET
 * again and waits in the queue of the listening socket kept here (see
 * src/as/attach.c).  What it needs kept is the cache: its mappings map the
 * object's memfd, which must outlive the server.  So each server sends
 * CACHE once it has its object, and the next one adopts the cache given
 * in the handover (uf_object_adopt_cache: every page there present, and
 * dirty for a writable object -- the dead server's dirty bits are lost,
 * so more is written back and nothing is lost) and answers the queued
 * clients with it; a client checks it is the memfd it maps.  Failing
 * closed closes SOCKET, which resets the queued connections: those
 * clients poison their holes themselves, and the cache is dropped.
 */
#define _GNU_SOURCE
#include "supervisor.h"
#include "../../src/lib/scm.h"		/* (these two linked from libufault.a) */
#include "../../src/engine/uffd_holes.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE		4096UL
#define MAX_SCLIENTS	1024
#define RANGES_PER_MSG	1024
#define LIVE_EVERY_MS	500
/* How long a new supervisor waits for the server that started it, which
 * connects at once, whatever the orphan timeout (0 included: that is the
 * clients' wait for a next server, and there are none yet) */
#define FIRST_SERVER_MS	5000


enum {
	M_HELLO = 1, M_REFUSE, M_WELCOME, M_CLIENT, M_RANGES, M_END,
	M_ADOPT, M_REMOVED, M_FORGET, M_FAIL, M_STOPPING, M_BYE, M_LISTEN, M_CACHE,
};

struct smsg {
	uint32_t type;
	uint32_t n;		/* regions, ranges, or bytes of text after it */
	uint64_t id;
	int32_t pid;
	uint32_t uid;
	uint64_t a, b;		/* per type: see the top of the file */
};

#define MSG_MAX	(sizeof(struct smsg) + RANGES_PER_MSG * sizeof(struct uf_serve_range))

/* See supervisor.h. */
void super_log(const char *who, const char *fmt, ...)
{
	struct timespec t;
	struct tm tm;
	char ts[32];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
	fprintf(stderr, "ufault-serve%s %s.%03ld: ", who, ts, t.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
#define SLOG(...)	super_log(" supervisor", __VA_ARGS__)
#define CLOG(...)	super_log("", __VA_ARGS__)

static int send_msg(int fd, const struct smsg *h, const void *p, size_t plen, const int *fds,
		    int nfds)
{
	struct iovec iov[2] = { { (void *)h, sizeof(*h) }, { (void *)p, plen } };
	ssize_t n = uf_scm_send(fd, iov, plen ? 2 : 1, fds, nfds);

	return n < 0 ? (int)n : 0;
}

/*
 * One message into @buf (MSG_MAX bytes), its fds into @fds (up to 3,
 * *nfds of them; the rest closed).  Return its payload's length, -1 at
 * EOF, -2 when nothing is there (@flags MSG_DONTWAIT), -3 when it is not
 * a message (closed fds, nothing kept).
 */
static long recv_msg(int fd, void *buf, int flags, int *fds, int *nfds)
{
	struct iovec iov = { buf, MSG_MAX };
	const struct smsg *h = buf;
	int mflags;
	ssize_t n = uf_scm_recv(fd, &iov, 1, flags, fds, 3, nfds, &mflags);

	if (n == -EAGAIN || n == -EWOULDBLOCK)
		return -2;
	if (n <= 0) {
		while (*nfds)
			close(fds[--*nfds]);
		return -1;
	}
	if ((mflags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(*h)) {
		while (*nfds)
			close(fds[--*nfds]);
		return -3;
	}
	return (long)((size_t)n - sizeof(*h));
}

static int ctl_path(const char *sock, char *out, size_t cap)
{
	struct sockaddr_un a;

	if ((size_t)snprintf(out, cap, "%s.ctl", sock) >= cap ||
	    strlen(out) >= sizeof(a.sun_path)) {
		CLOG("%s.ctl: path too long for a Unix socket", sock);
		return -1;
	}
	return 0;
}

/* See supervisor.h. */
int super_bind(const char *path, int type, mode_t mode, int backlog)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, e;

	if (strlen(path) >= sizeof(a.sun_path)) {
		CLOG("%s: path too long for a Unix socket", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	if (lstat(path, &st) == 0) {
		/* (unlink() removes a symlink itself, never what it names) */
		if (!S_ISSOCK(st.st_mode)) {
			CLOG("%s: exists and is not a socket: left as it is, not started", path);
			return -1;
		}
		if (st.st_uid != geteuid()) {
			CLOG("%s: another user's socket (uid %u): left as it is, not started", path,
			     (unsigned)st.st_uid);
			return -1;
		}
		unlink(path);
		CLOG("%s: replaced a stale socket", path);
	} else if (errno != ENOENT) {
		CLOG("%s: %s", path, strerror(errno));
		return -1;
	}
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		CLOG("%s: socket: %s", path, strerror(errno));
		return -1;
	}
	/* bind() makes the file with the socket's own mode less the umask,
	 * and fails on anything there (a symlink too: never followed) */
	old = umask(~mode & 0777);
	if (fchmod(fd, mode) < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, backlog) < 0) {
		e = errno;
		umask(old);
		CLOG("%s: %s", path, strerror(e));
		close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

/* ------------------------------------------------------------------ */
/* The server's side                                                   */
/* ------------------------------------------------------------------ */

static int srv_ctl = -1;	/* this server's connection to the supervisor */
static pid_t srv_super_pid;
static uint64_t srv_next_id;
static bool srv_gone_logged;	/* atomic */

/* A send failed: the supervisor is gone (log it once). */
static void srv_lost(void)
{
	if (!__atomic_exchange_n(&srv_gone_logged, true, __ATOMIC_RELAXED))
		CLOG("the supervisor has gone: a restart will not find these clients");
}

/* HELLO, then what the supervisor answers, into @st.  1 or -1. */
static int take_over(int fd, const char *source, unsigned int orphan_s, struct super_state *st)
{
	static char buf[MSG_MAX];
	struct timeval tv = { .tv_sec = 10 };
	struct smsg h = { .type = M_HELLO, .pid = (int32_t)getpid(), .uid = (uint32_t)geteuid(),
			  .a = orphan_s, .n = (uint32_t)strlen(source) };
	const struct smsg *m = (const struct smsg *)buf;
	struct super_client *c = NULL;
	int fds[3], nfds;
	long len;

	memset(st, 0, sizeof(*st));
	st->lfd = -1;
	st->cache_fd = -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send_msg(fd, &h, source, h.n, NULL, 0) < 0)
		goto broken;
	for (;;) {
		len = recv_msg(fd, buf, 0, fds, &nfds);
		if (len < 0)
			goto broken;
		switch (m->type) {
		case M_REFUSE:
			CLOG("%.*s", (int)len, buf + sizeof(*m));
			close(fd);
			return -1;
		case M_WELCOME:
			st->super_pid = srv_super_pid = m->pid;
			st->stopping = m->b;
			srv_next_id = m->a;
			if (nfds)
				st->lfd = fds[0];
			st->clients = calloc(m->n ? m->n : 1, sizeof(*st->clients));
			if (!st->clients)
				goto broken;
			break;
		case M_CLIENT:
			if (!st->clients || nfds != 2 || m->n > UF_SERVE_MAX_REGIONS ||
			    (size_t)len != m->n * sizeof(c->r[0]))
				goto broken;
			c = &st->clients[st->nclients++];
			c->id = m->id;
			c->pid = m->pid;
			c->uid = m->uid;
			c->uffd = fds[0];
			c->conn = fds[1];
			c->n = m->n;
			c->page_size = m->a ? m->a : PAGE;
			memcpy(c->r, buf + sizeof(*m), (size_t)len);
			break;
		case M_RANGES: {
			struct uf_serve_range *p;

			if (!c || c->id != m->id || (size_t)len != m->n * sizeof(*p))
				goto broken;
			p = realloc(c->removed, (c->nremoved + m->n) * sizeof(*p));
			if (!p)
				goto broken;
			memcpy(p + c->nremoved, buf + sizeof(*m), (size_t)len);
			c->removed = p;
			c->nremoved += m->n;
			break;
		}
		case M_CACHE:
			if (nfds != 1 || st->cache_fd >= 0)
				goto broken;
			st->cache_fd = fds[0];
			break;
		case M_END:
			tv.tv_sec = 0;
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			srv_ctl = fd;
			return 1;
		default:
			goto broken;
		}
	}
broken:
	/* (the supervisor keeps what it sent: a later server gets it) */
	CLOG("the supervisor on %s broke off the handover", source);
	close(fd);
	return -1;
}

int super_find(const char *sock, const char *source, unsigned int orphan_s,
	       struct super_state *st)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int fd;

	if (ctl_path(sock, a.sun_path, sizeof(a.sun_path)))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;

		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			return 0;
		CLOG("%s: %s", a.sun_path, strerror(e));
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != geteuid()) {
		CLOG("%s: not this user's supervisor", a.sun_path);
		close(fd);
		return -1;
	}
	return take_over(fd, source, orphan_s, st);
}

static void super_main(int cl, int lfd, const char *sock, const char *ctl, const char *source,
		       unsigned int orphan_s) __attribute__((noreturn));

int super_spawn(const char *sock, const char *source, unsigned int orphan_s, int lfd,
		struct super_state *st)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	pid_t pid;
	int cl, status;

	if (ctl_path(sock, a.sun_path, sizeof(a.sun_path)))
		goto fail;
	/* the server's user alone (the peer is checked too); a stale one
	 * is a dead supervisor's: super_find() was refused */
	cl = super_bind(a.sun_path, SOCK_SEQPACKET, 0600, 8);
	if (cl < 0)
		goto fail;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			setsid();
			super_main(cl, lfd, sock, a.sun_path, source, orphan_s);
		}
		_exit(0);
	}
	close(cl);
	close(lfd);
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		CLOG("fork: %s", strerror(errno));
		unlink(a.sun_path);
		return -1;
	}
	return super_find(sock, source, orphan_s, st) == 1 ? 0 : -1;
fail:
	close(lfd);
	unlink(sock);
	return -1;
}

uint64_t super_adopt(int conn, int uffd, pid_t pid, uid_t uid,
		     const struct uf_serve_region *r, unsigned int n, uint64_t page_size)
{
	struct smsg h = { .type = M_ADOPT, .id = srv_next_id, .pid = (int32_t)pid,
			  .uid = (uint32_t)uid, .n = n, .a = page_size };
	int fds[2] = { uffd, conn };

	if (srv_ctl < 0)
		return 0;
	if (send_msg(srv_ctl, &h, r, n * sizeof(*r), fds, 2) < 0) {
		srv_lost();
		return 0;
	}
	return srv_next_id++;
}

static void srv_send(uint32_t type, uint64_t id, uint64_t a, uint64_t b)
{
	struct smsg h = { .type = type, .id = id, .a = a, .b = b };

	if (srv_ctl >= 0 && send_msg(srv_ctl, &h, NULL, 0, NULL, 0) < 0)
		srv_lost();
}

void super_forget(uint64_t id, bool fail_closed)
{
	if (id)
		srv_send(fail_closed ? M_FAIL : M_FORGET, id, 0, 0);
}

void super_refused(int conn, int uffd, pid_t pid, uid_t uid)
{
	uint64_t id = super_adopt(conn, uffd, pid, uid, NULL, 0, 4096);

	if (id)
		srv_send(M_FAIL, id, 1, 0);
}

void super_on_remove(void *arg, uint64_t start, uint64_t len)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;

	if (id)
		srv_send(M_REMOVED, id, start, len);
}

void super_listen(int lfd)
{
	struct smsg h = { .type = M_LISTEN };

	if (srv_ctl >= 0 && send_msg(srv_ctl, &h, NULL, 0, &lfd, 1) < 0)
		srv_lost();
}

void super_cache(int fd)
{
	struct smsg h = { .type = M_CACHE };

	if (srv_ctl >= 0 && send_msg(srv_ctl, &h, NULL, 0, &fd, 1) < 0)
		srv_lost();
}

void super_stopping(void)
{
	srv_send(M_STOPPING, 0, 0, 0);
}

bool super_is(pid_t pid)
{
	return srv_super_pid > 0 && pid == srv_super_pid;
}

void super_bye(void)
{
	struct timeval tv = { .tv_sec = 5 };
	char c;

	if (srv_ctl < 0)
		return;
	srv_send(M_BYE, 0, 0, 0);
	/* the supervisor exits at once: its end closes (at most 5 s: a
	 * supervisor that hangs is not this process's to wait for) */
	setsockopt(srv_ctl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (recv(srv_ctl, &c, 1, 0) > 0)
		;
	close(srv_ctl);
	srv_ctl = -1;
}

/* ------------------------------------------------------------------ */
/* The supervisor                                                      */
/* ------------------------------------------------------------------ */

struct sclient {
	uint64_t id;
	pid_t pid;
	uid_t uid;
	int uffd, conn;
	unsigned int n;
	struct uf_serve_region r[UF_SERVE_MAX_REGIONS];
	unsigned long *removed[UF_SERVE_MAX_REGIONS];	/* a bit a page, once any */
	uint64_t psz;		/* its page size: 4096, or 2 MiB (hugetlbfs) */
	bool failed;		/* poisoned: the supervisor answers its faults */
	bool refused;		/* a VMM the server refused: let go when its
				   connection closes, as the server does */
	bool orphaned;		/* refused, and that server has gone: its
				   faults are answered here from now on (while
				   it lives, the server alone answers and
				   counts them) */
};

/* What a zero page of hugetlbfs memory is copied from (never written). */
static char huge_zeros[2UL << 20] __attribute__((aligned(4096)));

struct super {
	const char *sock, *ctl, *source;
	int cl, lfd, sfd;
	int srv;		/* the server's connection, or -1 */
	int cache;		/* the object's cache (a memfd), or -1 */
	pid_t srv_pid;
	bool stopping;		/* the server was SIGTERM'd: SOCKET closed */
	bool failed;		/* no server in time: every client poisoned */
				/* (till a server comes; SOCKET is gone) */
	bool term;		/* SIGTERM'd without a server */
	bool term_passed;	/* SIGTERM passed on to the server */
	unsigned int orphan_s;
	uint64_t deadline;	/* ms, monotonic: when waiting clients fail */
	uint64_t next_id;
	struct sclient *c[MAX_SCLIENTS];
	unsigned int nc;
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

#define BITS	(8 * sizeof(unsigned long))

/* The region of @c holding @addr, or -1. */
static int region_of(const struct sclient *c, uint64_t addr)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		if (addr >= c->r[i].start && addr - c->r[i].start < c->r[i].len)
			return (int)i;
	return -1;
}

static bool is_removed(const struct sclient *c, uint64_t addr)
{
	int i = region_of(c, addr);
	uint64_t pg;

	if (i < 0 || !c->removed[i])
		return false;
	pg = (addr - c->r[i].start) / PAGE;
	return c->removed[i][pg / BITS] & (1UL << (pg % BITS));
}

/*
 * The first page at or after @pg of @c's region @i (of @npages) whose
 * removed bit is @want, or @npages: whole words that hold none are
 * passed over at once, so a walk costs the bitmap's words and the pages
 * removed, not a step per page of a large region.
 */
static uint64_t next_removed(const struct sclient *c, unsigned int i, uint64_t pg,
			     uint64_t npages, bool want)
{
	const unsigned long *b = c->removed[i];

	if (!b)
		return want ? npages : pg;
	while (pg < npages) {
		unsigned long w = want ? b[pg / BITS] : ~b[pg / BITS];

		w &= ~0UL << (pg % BITS);
		if (w) {
			pg = (pg & ~(uint64_t)(BITS - 1)) + (uint64_t)__builtin_ctzl(w);
			return pg < npages ? pg : npages;
		}
		pg = (pg | (BITS - 1)) + 1;
	}
	return npages;
}

/* [start, start + len) of @c's memory reads zeros now. */
static void mark_removed(struct sclient *c, uint64_t start, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < c->n; i++) {
		uint64_t s = start > c->r[i].start ? start : c->r[i].start;
		uint64_t e = start + len < c->r[i].start + c->r[i].len ? start + len
								       : c->r[i].start + c->r[i].len;
		uint64_t npages = c->r[i].len / PAGE;

		if (s >= e)
			continue;
		if (!c->removed[i])
			c->removed[i] = calloc((npages + BITS - 1) / BITS, sizeof(unsigned long));
		if (!c->removed[i]) {
			SLOG("client pid %d: out of memory: a removal is lost", (int)c->pid);
			continue;
		}
		for (s &= ~(PAGE - 1); s < e; s += PAGE) {
			uint64_t pg = (s - c->r[i].start) / PAGE;

			c->removed[i][pg / BITS] |= 1UL << (pg % BITS);
		}
	}
}

static uint64_t count_removed(const struct sclient *c)
{
	uint64_t n = 0, k;
	unsigned int i;

	for (i = 0; i < c->n; i++)
		for (k = 0; c->removed[i] && k < (c->r[i].len / PAGE + BITS - 1) / BITS; k++)
			n += (uint64_t)__builtin_popcountl(c->removed[i][k]);
	return n;
}

static void wake(int uffd, uint64_t start, uint64_t len)
{
	struct uffdio_range r = { .start = start, .len = len };

	ioctl(uffd, UFFDIO_WAKE, &r);
}

/* A kernel without the poison marker: the VMM's crash, said. */
static void no_poison(struct sclient *c)
{
	SLOG("client pid %d: no poison marker here: SIGBUS to the process", (int)c->pid);
	kill(c->pid, SIGBUS);
}

/* One fault of a client nobody serves: zeros where it removed, else the
 * poison marker; either wakes the thread.  Anything else (an event not
 * read yet) wakes it to fault again. */
static void answer(struct sclient *c, uint64_t addr)
{
	addr &= ~(c->psz - 1);
	if (is_removed(c, addr) && c->psz != PAGE) {
		struct uffdio_copy z = { .dst = addr, .src = (uint64_t)(uintptr_t)huge_zeros,
					 .len = c->psz };

		if (ioctl(c->uffd, UFFDIO_COPY, &z) == 0)
			return;
	} else if (is_removed(c, addr)) {
		struct uffdio_zeropage z = { .range = { addr, PAGE } };

		if (ioctl(c->uffd, UFFDIO_ZEROPAGE, &z) == 0)
			return;
	} else {
		int r = uf_uffd_fd_poison(c->uffd, addr, c->psz);

		if (r == -EINVAL || r == -ENOTTY)
			no_poison(c);
	}
	wake(c->uffd, addr, c->psz);
}

/* Read what @c's userfaultfd holds: removals noted, faults answered. */
static void respond(struct sclient *c)
{
	struct uffd_msg m[16];
	ssize_t n;
	size_t i;

	while ((n = read(c->uffd, m, sizeof(m))) > 0) {
		for (i = 0; i < (size_t)n / sizeof(m[0]); i++) {
			switch (m[i].event) {
			case UFFD_EVENT_PAGEFAULT:
				answer(c, m[i].arg.pagefault.address);
				break;
			case UFFD_EVENT_REMOVE:
				mark_removed(c, m[i].arg.remove.start,
					     m[i].arg.remove.end - m[i].arg.remove.start);
				break;
			case UFFD_EVENT_FORK:
				close((int)m[i].arg.fork.ufd);
				break;
			default:
				break;
			}
		}
	}
}

static void respond_any(void *c)
{
	respond(c);
}

/* Zero pages (@zero) or poison markers on the holes of [a, e) of @c,
 * waking nobody. */
static void fill_holes(struct sclient *c, uint64_t a, uint64_t e, bool zero)
{
	if (!zero) {	/* (the library's: src/engine/uffd.c) */
		int r = uf_uffd_fd_poison_holes(c->uffd, a, e - a, c->psz, respond_any, c);

		if (r == -EINVAL || r == -ENOTTY)
			no_poison(c);
		return;		/* else done, or gone (ESRCH), or not registered */
	}
	while (a < e) {
		int64_t done;
		int r;

		if (c->psz != PAGE) {
			/* hugetlbfs has no zero page: a copy of zeros */
			struct uffdio_copy z = { .dst = a, .src = (uint64_t)(uintptr_t)huge_zeros,
						 .len = c->psz, .mode = UFFDIO_COPY_MODE_DONTWAKE };

			r = ioctl(c->uffd, UFFDIO_COPY, &z);
			if (r == 0) {
				a += c->psz;	/* a huge page a call */
				continue;
			}
			done = 0;
		} else {
			struct uffdio_zeropage z = { .range = { a, e - a },
						     .mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE };

			r = ioctl(c->uffd, UFFDIO_ZEROPAGE, &z);
			done = z.zeropage;
		}
		if (r == 0)
			return;
		if (done > 0)
			a += (uint64_t)done;
		if (errno == EAGAIN) {
			if (done <= 0)
				respond(c);	/* an event is unread */
			continue;
		}
		if (errno == EEXIST) {
			a += c->psz;		/* a page is there */
			continue;
		}
		return;			/* gone (ESRCH), or not registered */
	}
}

/* Nobody will serve @c: SIGBUS for its holes, zeros where it removed. */
static void fail_client(struct sclient *c)
{
	int fl = fcntl(c->uffd, F_GETFL);
	unsigned int i;

	/* read here from now on: an empty read must not block */
	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(c->uffd, F_SETFL, fl | O_NONBLOCK);

	for (i = 0; i < c->n; i++) {
		uint64_t npages = c->r[i].len / PAGE, pg = 0;

		/* runs of removed and not removed pages, a bitmap word at a time */
		while (pg < npages) {
			bool rm = is_removed(c, c->r[i].start + pg * PAGE);
			uint64_t q = next_removed(c, i, pg + 1, npages, !rm);

			fill_holes(c, c->r[i].start + pg * PAGE, c->r[i].start + q * PAGE, rm);
			pg = q;
		}
		wake(c->uffd, c->r[i].start, c->r[i].len);
	}
	c->failed = true;
}

static void fail_all(struct super *s, const char *why)
{
	unsigned int i;

	if (!s->failed && s->nc)
		SLOG("%s: %u client%s get%s SIGBUS from now on for pages not received", why,
		     s->nc, s->nc == 1 ? "" : "s", s->nc == 1 ? "s" : "");
	s->failed = true;
	if (s->lfd >= 0) {
		close(s->lfd);
		s->lfd = -1;
		unlink(s->sock);	/* a VMM started now is refused, not left waiting */
	}
	/* the ufault clients waiting in SOCKET's queue were reset with it:
	 * they fail closed, and nobody needs their cache any more */
	if (s->cache >= 0)
		close(s->cache);
	s->cache = -1;
	for (i = 0; i < s->nc; i++)
		if (!s->c[i]->failed)
			fail_client(s->c[i]);
}

static void client_free(struct super *s, unsigned int i)
{
	struct sclient *c = s->c[i];
	unsigned int k;

	close(c->uffd);
	close(c->conn);
	for (k = 0; k < c->n; k++)
		free(c->removed[k]);
	free(c);
	s->c[i] = s->c[--s->nc];
}

static struct sclient *client_find(struct super *s, uint64_t id, unsigned int *idx)
{
	unsigned int i;

	for (i = 0; i < s->nc; i++)
		if (s->c[i]->id == id) {
			*idx = i;
			return s->c[i];
		}
	return NULL;
}

/* Is @c's process still there?  Its memory's calls fail ESRCH once gone. */
static bool client_alive(const struct sclient *c)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = 1UL << 16, .len = PAGE },
		.mode = UFFDIO_WRITEPROTECT_MODE_DONTWAKE,
	};

	return ioctl(c->uffd, UFFDIO_WRITEPROTECT, &wp) == 0 || errno != ESRCH;
}

static void __attribute__((noreturn)) super_exit(struct super *s, int code)
{
	if (s->lfd >= 0)
		unlink(s->sock);
	unlink(s->ctl);
	SLOG("exiting");
	exit(code);
}

static void on_adopt(struct super *s, const struct smsg *m, long len, int *fds, int nfds)
{
	struct sclient *c;

	if (nfds != 2 || m->n > UF_SERVE_MAX_REGIONS || (size_t)len != m->n * sizeof(c->r[0]) ||
	    s->nc == MAX_SCLIENTS || !(c = calloc(1, sizeof(*c)))) {
		SLOG("client pid %d: cannot keep it: a restart will not find it", (int)m->pid);
		while (nfds)
			close(fds[--nfds]);
		return;
	}
	c->id = m->id;
	c->pid = m->pid;
	c->psz = m->a == 2UL << 20 ? m->a : PAGE;
	c->uid = m->uid;
	c->uffd = fds[0];
	c->conn = fds[1];
	c->n = m->n;
	memcpy(c->r, (const char *)m + sizeof(*m), (size_t)len);
	s->c[s->nc++] = c;
	if (m->id >= s->next_id)
		s->next_id = m->id + 1;
}

/* What the server sent; false once it has gone. */
static bool server_read(struct super *s)
{
	static char buf[MSG_MAX];
	const struct smsg *m = (const struct smsg *)buf;
	struct sclient *c;
	unsigned int i;
	int fds[3], nfds;
	long len;

	for (;;) {
		len = recv_msg(s->srv, buf, MSG_DONTWAIT, fds, &nfds);
		if (len == -2)
			return true;
		if (len == -3)
			continue;
		if (len == -1)
			break;
		if (m->type == M_LISTEN && nfds == 1 && s->lfd < 0 && !s->stopping) {
			s->lfd = fds[0];
			continue;
		}
		if (m->type == M_CACHE && nfds == 1) {
			if (s->cache >= 0)
				close(s->cache);
			s->cache = fds[0];
			continue;
		}
		if (m->type != M_ADOPT)
			while (nfds)
				close(fds[--nfds]);
		switch (m->type) {
		case M_ADOPT:
			on_adopt(s, m, len, fds, nfds);
			break;
		case M_REMOVED:
			if ((c = client_find(s, m->id, &i)))
				mark_removed(c, m->a, m->b);
			break;
		case M_FORGET:
			if (client_find(s, m->id, &i))
				client_free(s, i);
			break;
		case M_FAIL:
			if ((c = client_find(s, m->id, &i)) && !c->failed) {
				/* (a refused one: the server logged it) */
				if (!m->a)
					SLOG("client pid %d: the server cannot serve it: SIGBUS "
					     "from now on", (int)c->pid);
				c->refused = m->a;
				fail_client(c);
			}
			break;
		case M_STOPPING:
			s->stopping = true;
			if (s->lfd >= 0)
				close(s->lfd);
			s->lfd = -1;
			break;
		case M_BYE:
			SLOG("server pid %d exited", (int)s->srv_pid);
			super_exit(s, 0);
		default:
			break;
		}
	}
	close(s->srv);
	s->srv = -1;
	s->deadline = now_ms() + (uint64_t)s->orphan_s * 1000;
	for (unsigned int i = 0; i < s->nc; i++)
		if (s->c[i]->refused)
			s->c[i]->orphaned = true;
	if (s->term_passed) {
		/* it died stopping: no next server is wanted */
		s->term = true;
		fail_all(s, "the server SIGTERM was passed on to has gone");
		return false;
	}
	SLOG("server pid %d has gone: %u client%s wait up to %u s for the next one",
	     (int)s->srv_pid, s->nc, s->nc == 1 ? "" : "s", s->orphan_s);
	return false;
}

static void refuse(int fd, const char *why)
{
	struct smsg h = { .type = M_REFUSE, .n = (uint32_t)strlen(why) };

	send_msg(fd, &h, why, h.n, NULL, 0);
}

/* @c's removed pages as ranges, RANGES_PER_MSG a message. */
static int send_removed(int fd, const struct sclient *c)
{
	struct {
		struct smsg h;
		struct uf_serve_range r[RANGES_PER_MSG];
	} *m = malloc(sizeof(*m));
	unsigned int i;
	int ret = 0;

	if (!m)
		return -ENOMEM;
	m->h = (struct smsg){ .type = M_RANGES, .id = c->id };
	for (i = 0; i < c->n && !ret; i++) {
		uint64_t npages = c->r[i].len / PAGE, pg = 0;

		/* what was removed, skipping a bitmap word of none at a time: the
		 * handover costs the removals, not the regions' size */
		while ((pg = next_removed(c, i, pg, npages, true)) < npages) {
			uint64_t a = c->r[i].start + pg * PAGE;

			pg++;
			if (m->h.n && m->r[m->h.n - 1].start + m->r[m->h.n - 1].len == a) {
				m->r[m->h.n - 1].len += PAGE;
				continue;
			}
			if (m->h.n == RANGES_PER_MSG) {
				ret = send_msg(fd, &m->h, m->r, sizeof(m->r), NULL, 0);
				m->h.n = 0;
				if (ret)
					break;
			}
			m->r[m->h.n++] = (struct uf_serve_range){ a, PAGE };
		}
	}
	if (!ret && m->h.n)
		ret = send_msg(fd, &m->h, m->r, m->h.n * sizeof(m->r[0]), NULL, 0);
	free(m);
	return ret;
}

/* Everything to the new server on @fd; 0 or -errno. */
static int hand_over(struct super *s, int fd)
{
	struct smsg h = { .type = M_WELCOME, .pid = (int32_t)getpid(), .a = s->next_id,
			  .b = s->stopping };
	unsigned int i;
	int ret;

	for (i = 0; i < s->nc; i++)
		h.n += !s->c[i]->failed;
	ret = send_msg(fd, &h, NULL, 0, &s->lfd, s->lfd >= 0);
	for (i = 0; i < s->nc && !ret; i++) {
		struct sclient *c = s->c[i];
		struct smsg ch = { .type = M_CLIENT, .id = c->id, .pid = (int32_t)c->pid,
				   .uid = (uint32_t)c->uid, .n = c->n, .a = c->psz };
		int fds[2] = { c->uffd, c->conn };

		if (c->failed)
			continue;
		ret = send_msg(fd, &ch, c->r, c->n * sizeof(c->r[0]), fds, 2);
		if (!ret)
			ret = send_removed(fd, c);
	}
	if (!ret && s->cache >= 0) {
		h = (struct smsg){ .type = M_CACHE };
		ret = send_msg(fd, &h, NULL, 0, &s->cache, 1);
	}
	if (!ret) {
		h = (struct smsg){ .type = M_END };
		ret = send_msg(fd, &h, NULL, 0, NULL, 0);
	}
	return ret;
}

/* A new server on the control socket. */
static void server_accept(struct super *s)
{
	static char buf[MSG_MAX];
	const struct smsg *m = (const struct smsg *)buf;
	struct timeval tv = { .tv_sec = 2 };
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char why[PATH_MAX + 64];
	int fd = accept4(s->cl, NULL, NULL, SOCK_CLOEXEC), fds[3], nfds;
	unsigned int i, n = 0;
	long len;

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != geteuid()) {
		close(fd);
		return;
	}
	/* a peer that neither speaks nor reads holds the supervisor 2 s */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	len = recv_msg(fd, buf, 0, fds, &nfds);
	while (len >= 0 && nfds)
		close(fds[--nfds]);
	if (len < 0 || m->type != M_HELLO || (size_t)len != m->n) {
		close(fd);
		return;
	}
	if (s->srv >= 0)
		server_read(s);		/* a server just gone is gone */
	if (s->term) {
		refuse(fd, "the supervisor there is exiting (SIGTERM)");
	} else if (s->srv >= 0) {
		snprintf(why, sizeof(why), "%s: a server is serving there (pid %d)", s->sock,
			 (int)s->srv_pid);
		refuse(fd, why);
	} else if (strlen(s->source) != (size_t)len || memcmp(s->source, buf + sizeof(*m), m->n)) {
		snprintf(why, sizeof(why), "%s: its clients are served from %s, not %.*s", s->sock,
			 s->source, (int)len, buf + sizeof(*m));
		refuse(fd, why);
	} else if (hand_over(s, fd) == 0) {
		tv.tv_sec = 0;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		s->srv = fd;
		s->srv_pid = cred.pid;
		s->orphan_s = (unsigned int)m->a;
		/* (clients failed closed stay with the supervisor) */
		s->failed = false;
		for (i = 0; i < s->nc; i++)
			n += !s->c[i]->failed;
		SLOG("server pid %d took over %u client%s", (int)cred.pid, n, n == 1 ? "" : "s");
		return;
	} else {
		SLOG("server pid %d: the handover broke off", (int)cred.pid);
	}
	close(fd);
}

static void status(struct super *s, int tag)
{
	uint64_t removed = 0;
	unsigned int i;

	for (i = 0; i < s->nc; i++)
		removed += count_removed(s->c[i]);
	SLOG("status %d: server pid %d, clients %u, removed %" PRIu64 " pages%s", tag,
	     s->srv >= 0 ? (int)s->srv_pid : 0, s->nc, removed, s->failed ? ", failed closed" : "");
}

/* Return true to exit now. */
static bool on_signal(struct super *s)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return false;
	if (s->srv >= 0)
		server_read(s);		/* a server just gone is gone */
	if (si.ssi_signo == SIGUSR1) {
		status(s, si.ssi_int);
		return false;
	}
	if (si.ssi_signo == SIGTERM && s->srv >= 0) {
		/* once: the server takes a second SIGTERM as "exit now" */
		if (!s->term_passed) {
			SLOG("SIGTERM: passed on to server pid %d", (int)s->srv_pid);
			kill(s->srv_pid, SIGTERM);
		}
		s->term_passed = true;
		return false;
	}
	if (s->srv >= 0) {
		/* the server goes on serving, with no supervisor */
		SLOG("%s: exiting, server pid %d goes on alone", strsignal((int)si.ssi_signo),
		     (int)s->srv_pid);
		return true;
	}
	if (si.ssi_signo == SIGTERM && !s->term) {
		s->term = true;
		fail_all(s, "SIGTERM with no server");
		return false;
	}
	fail_all(s, strsignal((int)si.ssi_signo));
	return true;
}

/* Has refused client @c's connection closed? */
static bool client_hung_up(const struct sclient *c)
{
	struct pollfd p = { .fd = c->conn, .events = 0 };

	return c->refused && poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* Let clients whose process is gone go (a refused one: its connection). */
static void reap(struct super *s)
{
	unsigned int i;

	for (i = s->nc; i-- > 0;)
		if (!client_alive(s->c[i]) || client_hung_up(s->c[i]))
			client_free(s, i);
}

static void super_loop(struct super *s)
{
	struct pollfd pfd[MAX_SCLIENTS + 3];
	struct sclient *polled[MAX_SCLIENTS];
	uint64_t next_reap = now_ms() + LIVE_EVERY_MS;

	for (;;) {
		unsigned int np = 0, npc = 0, i;
		uint64_t now = now_ms(), until = next_reap;
		int ready;

		if (s->srv < 0 && !s->failed && s->deadline < until)
			until = s->deadline;
		pfd[np++] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		pfd[np++] = (struct pollfd){ .fd = s->cl, .events = POLLIN };
		pfd[np++] = (struct pollfd){ .fd = s->srv, .events = POLLIN };
		for (i = 0; i < s->nc; i++)
			if (s->c[i]->failed && (!s->c[i]->refused || s->c[i]->orphaned)) {
				polled[npc++] = s->c[i];
				pfd[np++] = (struct pollfd){ .fd = s->c[i]->uffd, .events = POLLIN };
			}
		ready = poll(pfd, np, until > now ? (int)(until - now) : 0);
		if (ready > 0) {
			if (pfd[0].revents && on_signal(s))
				super_exit(s, 1);
			for (i = 0; i < npc; i++)
				if (pfd[3 + i].revents)
					respond(polled[i]);
			if (pfd[2].revents && s->srv >= 0)
				server_read(s);
			if (pfd[1].revents)
				server_accept(s);
		}
		now = now_ms();
		if (now >= next_reap) {
			reap(s);
			next_reap = now + LIVE_EVERY_MS;
		}
		if (s->srv < 0 && !s->failed && now >= s->deadline)
			fail_all(s, "no server came");
		if (s->srv < 0 && s->failed && !s->nc)
			super_exit(s, 0);
	}
}

static void super_main(int cl, int lfd, const char *sock, const char *ctl, const char *source,
		       unsigned int orphan_s)
{
	static struct super s;
	sigset_t mask;
	long fd, max = sysconf(_SC_OPEN_MAX);

	/* nothing of the server's but the two sockets and stdio */
	for (fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
		if (fd != cl && fd != lfd)
			close((int)fd);
	s.sock = strdup(sock);
	s.ctl = strdup(ctl);
	s.source = strdup(source);
	s.cl = cl;
	s.lfd = lfd;
	s.srv = -1;
	s.cache = -1;
	s.orphan_s = orphan_s;
	s.next_id = 1;
	/* the server that started it connects at once (FIRST_SERVER_MS) */
	s.deadline = now_ms() + ((uint64_t)orphan_s * 1000 > FIRST_SERVER_MS ?
				 (uint64_t)orphan_s * 1000 : FIRST_SERVER_MS);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s.sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (!s.sock || !s.ctl || !s.source || s.sfd < 0) {
		SLOG("cannot start: %s", strerror(errno));
		unlink(ctl);
		exit(1);
	}
	SLOG("supervisor pid %d on %s", (int)getpid(), ctl);
	super_loop(&s);
	exit(0);
}
