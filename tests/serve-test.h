/* SPDX-License-Identifier: MIT */
/*
 * ufault-serve tests: start build/ufault-serve ($B, as the runner sets it)
 * on a socket in a temporary directory, stop it by pid at exit (also when
 * the test fails: atexit), and be a Firecracker-style client of it:
 * anonymous MAP_PRIVATE regions, a userfaultfd of its own (O_CLOEXEC |
 * O_NONBLOCK, UFFD_FEATURE_EVENT_REMOVE) with the regions registered
 * MISSING, and the JSON handshake in one sendmsg() with the fd as
 * SCM_RIGHTS.  Not a test program itself.
 *
 * ufault-serve starts a supervisor process beside it (it survives the
 * server, to hand the clients to the next one): this process becomes a
 * child subreaper, so the supervisor is its child too, and stops both.
 */
#ifndef UT_SERVE_TEST_H
#define UT_SERVE_TEST_H

#include "helpers.h"
#include "watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct ut_server {
	pid_t pid;
	pid_t super_pid;	/* the supervisor, from the server's log */
	char dir[64];
	char sock[128];
	char src[128];		/* SOURCE: a file of ut_pattern() bytes */
	char log[128];
};

/* The server to stop at exit (atexit takes no argument, and main's
 * frame is gone by then: a copy), and the process that started it (a
 * forked client's exit must not stop it). */
static struct ut_server ut_server_atexit;
static pid_t ut_server_owner;
/* SOURCE for the next ut_server_start() instead of its file (a redis://
 * URL: the bytes there are the caller's to write) */
static const char *ut_server_source;

static __attribute__((unused)) void ut_server_stop(struct ut_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		if (ut_server_atexit.pid == s->pid)
			ut_server_atexit.pid = 0;
		s->pid = 0;
	}
}

/* Stop the supervisor too (it may have exited by itself: reaped). */
static __attribute__((unused)) void ut_super_stop(struct ut_server *s)
{
	if (s->super_pid > 0) {
		kill(s->super_pid, SIGKILL);
		waitpid(s->super_pid, NULL, 0);
		if (ut_server_atexit.super_pid == s->super_pid)
			ut_server_atexit.super_pid = 0;
		s->super_pid = 0;
	}
}

static void ut_server_cleanup(void)
{
	struct ut_server *s = &ut_server_atexit;
	char cmd[256];

	if (getpid() != ut_server_owner)
		return;
	ut_server_stop(s);
	ut_super_stop(s);
	if (getenv("UT_KEEP_LOG")) {
		snprintf(cmd, sizeof(cmd), "cat %s >&2", s->log);
		if (system(cmd)) {
		}
	}
	unlink(s->sock);
	memcpy(cmd, s->sock, sizeof(s->sock));
	strcat(cmd, ".ctl");	/* (sock is 128 bytes: it fits) */
	unlink(cmd);
	unlink(s->log);
	unlink(s->src);
	rmdir(s->dir);
}

static int ut_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0, "socket: %s", strerror(errno));
	snprintf(a.sun_path, sizeof(a.sun_path), "%.*s", (int)sizeof(a.sun_path) - 1, path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The log so far (NUL-terminated, the last @cap - 1 bytes at most). */
static __attribute__((unused)) void ut_server_log_read(struct ut_server *s, char *buf, size_t cap)
{
	int fd = open(s->log, O_RDONLY);
	off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
	ssize_t n = -1;

	if (fd >= 0) {
		n = pread(fd, buf, cap - 1, end > (off_t)cap - 1 ? end - (off_t)cap + 1 : 0);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
}

/* Run ufault-serve on s->sock and s->src with @extra options
 * (NULL-terminated, may be NULL), and wait until it serves: its log line
 * names it and its supervisor; @want_fail: wait for it to exit instead
 * and return its status. */
static int ut_server_exec(struct ut_server *s, const char *const *extra, bool want_fail)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	char bin[256], line[64], log[1 << 16];
	const char *argv[32];
	int n = 0, i, st;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/ufault-serve", b);
	argv[n++] = bin;
	argv[n++] = "--threads";
	argv[n++] = "2";
	for (i = 0; extra && extra[i] && n < 28; i++)
		argv[n++] = extra[i];
	argv[n++] = s->sock;
	argv[n++] = ut_server_source ? ut_server_source : s->src;
	argv[n] = NULL;
	/* the supervisor outlives the server that started it: ours to reap */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* appended to: the supervisor writes here too */
		int lfd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		/* a test killed by a signal takes its server with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (lfd >= 0)
			dup2(lfd, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	if (want_fail) {
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		return st;
	}
	s->pid = pid;
	ut_server_atexit = *s;
	ut_server_owner = getpid();
	snprintf(line, sizeof(line), "pid %d, supervisor pid ", (int)pid);
	for (;;) {
		char *p;

		ut_server_log_read(s, log, sizeof(log));
		p = strstr(log, line);
		if (p) {
			s->super_pid = (pid_t)atoi(p + strlen(line));
			ut_server_atexit.super_pid = s->super_pid;
			return 0;
		}
		CHECK(waitpid(pid, &st, WNOHANG) == 0, "ufault-serve exited at start");
		usleep(2000);
	}
}

/* Start ufault-serve on a SOURCE of @size pattern bytes, with @extra
 * options (NULL-terminated, may be NULL), and wait until it serves. */
static __attribute__((unused)) void ut_server_start(struct ut_server *s, uint64_t size, const char *const *extra)
{
	int fd, c;

	if (ut_server_owner)
		ut_server_cleanup();	/* the last one's */
	else
		atexit(ut_server_cleanup);
	ut_server_owner = getpid();
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "/tmp/ufault-serve-XXXXXX");
	CHECK(mkdtemp(s->dir), "mkdtemp: %s", strerror(errno));
	snprintf(s->sock, sizeof(s->sock), "%s/sock", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/log", s->dir);
	fd = ut_make_file("/dev/shm", size, s->src, sizeof(s->src));
	close(fd);
	ut_server_atexit = *s;
	ut_server_exec(s, extra, false);
	c = ut_connect(s->sock);
	CHECK(c >= 0, "connect %s: %s", s->sock, strerror(errno));
	close(c);		/* (a connection closed before the handshake) */
}

/* A new ufault-serve on the same SOCKET and SOURCE, the last one killed
 * or not; it keeps the supervisor it finds there. */
static __attribute__((unused)) void ut_server_restart(struct ut_server *s, const char *const *extra)
{
	ut_server_exec(s, extra, false);
}

/* Another ufault-serve on the same SOCKET and SOURCE that must refuse to
 * start: its exit status. */
static __attribute__((unused)) int ut_server_second(struct ut_server *s, const char *const *extra)
{
	return ut_server_exec(s, extra, true);
}

/* Make the supervisor log its state, and return how many pages it has
 * been told the clients removed (the first number after @what in the
 * newest status line), once the line is there. */
static __attribute__((unused)) uint64_t ut_super_status(struct ut_server *s, const char *what)
{
	static unsigned int seq;
	char log[1 << 16], tag[32];

	snprintf(tag, sizeof(tag), "status %u:", ++seq);
	for (;;) {
		char *p, *q;

		/* SIGUSR1 with a value: the line carries it back */
		CHECK(sigqueue(s->super_pid, SIGUSR1, (union sigval){ .sival_int = (int)seq }) == 0,
		      "sigqueue: %s", strerror(errno));
		usleep(20000);
		ut_server_log_read(s, log, sizeof(log));
		p = strstr(log, tag);
		if (p && (q = strstr(p, what)) && (!strchr(p, '\n') || q < strchr(p, '\n')))
			return strtoull(q + strlen(what), NULL, 10);
	}
}

/* Does the server's log hold @what yet?  (Waits: the watchdog bounds it.) */
static __attribute__((unused)) void ut_server_log_wait(struct ut_server *s, const char *what)
{
	char buf[1 << 16];

	for (;;) {
		ut_server_log_read(s, buf, sizeof(buf));
		if (strstr(buf, what))
			return;
		usleep(2000);
	}
}

/*
 * How many fds the server holds now: with @all, every one but its
 * handlers' epoll sets (a spare handler the engine starts while every one
 * is busy stays, with its set); else its sockets and userfaultfds alone:
 * what its clients cost it (the library's own fds, a handler thread's
 * epoll set made as it starts among them, are not counted).
 */
static __attribute__((unused)) int ut_server_fd_count(struct ut_server *s, bool all)
{
	char path[64], fd[320], link[128];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)s->pid);
	dir = opendir(path);
	CHECK(dir, "%s: %s", path, strerror(errno));
	while ((d = readdir(dir))) {
		ssize_t k;

		if (d->d_name[0] == '.')
			continue;
		snprintf(fd, sizeof(fd), "%s/%s", path, d->d_name);
		k = readlink(fd, link, sizeof(link) - 1);
		link[k > 0 ? k : 0] = '\0';
		if (all)
			n += strcmp(link, "anon_inode:[eventpoll]") != 0;
		else
			n += !strncmp(link, "socket:", 7) || !strcmp(link, "anon_inode:[userfaultfd]");
	}
	closedir(dir);
	return n;
}

static __attribute__((unused)) int ut_server_fds(struct ut_server *s)
{
	return ut_server_fd_count(s, false);
}

/* A Firecracker-style client. */
struct ut_fc {
	int uffd, sock;
	unsigned int n;
	char *base[8];
	size_t len[8];
	uint64_t offset[8];
};

/* Map @n anonymous regions and register them on a new userfaultfd. */
static __attribute__((unused)) int ut_fc_map(struct ut_fc *fc, unsigned int n, const size_t *len, const uint64_t *offset)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	unsigned int i;

	memset(fc, 0, sizeof(*fc));
	fc->sock = -1;
	fc->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fc->uffd < 0)
		return -1;
	CHECK(ioctl(fc->uffd, UFFDIO_API, &api) == 0, "UFFDIO_API: %s", strerror(errno));
	fc->n = n;
	for (i = 0; i < n; i++) {
		struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

		fc->base[i] = mmap(NULL, len[i], PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		CHECK(fc->base[i] != MAP_FAILED, "mmap: %s", strerror(errno));
		fc->len[i] = len[i];
		fc->offset[i] = offset[i];
		reg.range.start = (unsigned long)fc->base[i];
		reg.range.len = len[i];
		CHECK(ioctl(fc->uffd, UFFDIO_REGISTER, &reg) == 0, "UFFDIO_REGISTER: %s",
		      strerror(errno));
	}
	return 0;
}

/* Firecracker's JSON for the regions. */
static __attribute__((unused)) void ut_fc_json(const struct ut_fc *fc, char *buf, size_t cap)
{
	size_t o = 0;
	unsigned int i;

	o += (size_t)snprintf(buf + o, cap - o, "[");
	for (i = 0; i < fc->n; i++)
		o += (size_t)snprintf(buf + o, cap - o,
				      "%s{\"base_host_virt_addr\":%lu,\"size\":%zu,\"offset\":%lu,"
				      "\"page_size\":4096}", i ? "," : "",
				      (unsigned long)fc->base[i], fc->len[i],
				      (unsigned long)fc->offset[i]);
	snprintf(buf + o, cap - o, "]");
}

/* Connect and send @len bytes of @msg with @fd (-1: none) in one
 * sendmsg; -1 when the server closed the connection before it was read
 * (EPIPE, ECONNRESET: refused at accept), else the socket. */
static __attribute__((unused)) int ut_send_refusable(const char *sock, const void *msg, size_t len,
						     int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int s = ut_connect(sock);
	ssize_t n;

	CHECK(s >= 0, "connect %s: %s", sock, strerror(errno));
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	n = sendmsg(s, &mh, MSG_NOSIGNAL);
	if (n < 0) {
		CHECK(errno == EPIPE || errno == ECONNRESET, "sendmsg: %s", strerror(errno));
		close(s);
		return -1;
	}
	CHECK(n == (ssize_t)len, "sendmsg: %zd of %zu bytes", n, len);
	return s;
}

/* ut_send_refusable(), which must not be refused. */
static __attribute__((unused)) int ut_send_handshake(const char *sock, const void *msg, size_t len, int fd)
{
	int s = ut_send_refusable(sock, msg, len, fd);

	CHECK(s >= 0, "sendmsg: the server closed the connection");
	return s;
}

/* A userfaultfd (@features, @flags beside O_CLOEXEC | O_NONBLOCK) with 1
 * MiB of anonymous memory registered at *@p, and Firecracker's JSON for
 * it in @json. */
static __attribute__((unused)) int ut_uffd_1m(uint64_t features, int flags, char **p, char *json,
					      size_t cap)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | flags);

	CHECK(uffd >= 0 && ioctl(uffd, UFFDIO_API, &api) == 0, "userfaultfd: %s", strerror(errno));
	*p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(*p != MAP_FAILED, "mmap");
	reg.range.start = (unsigned long)*p;
	reg.range.len = 1 << 20;
	CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0, "register: %s", strerror(errno));
	snprintf(json, cap,
		 "[{\"base_host_virt_addr\":%lu,\"size\":1048576,\"offset\":0,\"page_size\":4096}]",
		 (unsigned long)*p);
	return uffd;
}

static __attribute__((unused)) void ut_fc_handshake(struct ut_fc *fc, const char *sock)
{
	char json[8192];

	ut_fc_json(fc, json, sizeof(json));
	fc->sock = ut_send_handshake(sock, json, strlen(json), fc->uffd);
}

/* Every page of @fc's region @i (step @step pages) against SOURCE. */
static __attribute__((unused)) void ut_fc_check(const struct ut_fc *fc, unsigned int i, size_t step)
{
	size_t off;

	for (off = 0; off < fc->len[i]; off += step * 4096) {
		uint64_t so = fc->offset[i] + off;
		unsigned char got = (unsigned char)fc->base[i][off], got2 =
			(unsigned char)fc->base[i][off + 4095];

		CHECK(got == ut_pattern(so) && got2 == ut_pattern(so + 4095),
		      "region %u +%zu: %u %u, want %u %u", i, off, got, got2, ut_pattern(so),
		      ut_pattern(so + 4095));
	}
}

/* Kill client @pid (round @r) after @delay_us, somewhere in its work, and
 * check that the kill is what ended it. */
static __attribute__((unused)) void ut_client_kill(pid_t pid, useconds_t delay_us, int r)
{
	int st;

	usleep(delay_us);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "client %d: status %#x", r, st);
}

/* After clients' deaths: the server's fds come back to @base (it noticed
 * each death and freed what it held, however long the machine takes), it
 * lives, and a new Firecracker client @fc of @len bytes at @off is served
 * (it stays connected). */
static __attribute__((unused)) void ut_server_serves_after(struct ut_server *s, int base,
							    const size_t *len, const uint64_t *off,
							    struct ut_fc *fc)
{
	while (ut_server_fds(s) != base)
		usleep(10000);
	CHECK(kill(s->pid, 0) == 0, "the server died");
	ut_fc_map(fc, 1, len, off);
	ut_fc_handshake(fc, s->sock);
	ut_fc_check(fc, 0, 1);
}

/* Is the server's log line for a client that ends up closed there? */
#define UT_SERVE_SKIP_NO_UFFD(fc)						\
	do {								\
		if ((fc)->uffd < 0) {					\
			fprintf(stderr, "no userfaultfd here\n");	\
			exit(UT_SKIP);					\
		}							\
	} while (0)

#endif
