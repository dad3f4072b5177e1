/* SPDX-License-Identifier: MIT */
/*
 * For the http-* tests: an nginx of the test's own (Debian's nginx-light),
 * on a free 127.0.0.1 port, serving a temporary directory, with its config,
 * pid file and logs there.  It runs in the foreground as one process
 * (master_process off) and dies with the test (PR_SET_PDEATHSIG), so it
 * is stopped by its pid whether the test passes, fails or crashes.  Its
 * access log tells what reached the server.  Not a test program itself.
 *
 * Built without libcurl (UT_NO_HTTP), ht_start() skips the test.
 */
#ifndef UT_HTTP_TEST_H
#define UT_HTTP_TEST_H

#include "helpers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ufault-http.h>

#define HT_UNUSED __attribute__((unused))

#ifdef UT_NO_HTTP
/* the test is skipped before any of these is called */
#define uf_http_open(m, u, o, p)	((void)(m), (void)(u), (void)(o), (void)(p), -ENOSYS)
#define uf_http_stats(o, s)		((void)(o), (void)(s), -ENOSYS)
#define uf_http_store_open(u, o, a, b, c) ((void)(u), (void)(o), (void)(a), (void)(b), (void)(c), -ENOSYS)
#define uf_http_store_readv(s, i, n)	((void)(s), (void)(i), (void)(n), -ENOSYS)
#define uf_http_store_stats(s, t)	((void)(s), (void)(t), -ENOSYS)
#endif

struct ht_server {
	char dir[128];		/* the temporary directory */
	char root[192];		/* what is served: dir/root */
	char extra[1024];	/* lines for the server block */
	int port;
	pid_t pid;
	char base[64];		/* http://127.0.0.1:PORT */
};

/* What the exit handler stops and removes (main's locals are gone by then). */
static pid_t ht_pid_at_exit;
static char ht_dir_at_exit[128];

static HT_UNUSED void ht_kill(struct ht_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
		ht_pid_at_exit = 0;
	}
}

static HT_UNUSED void ht_atexit(void)
{
	char cmd[256];

	if (ht_pid_at_exit > 0) {
		kill(ht_pid_at_exit, SIGKILL);
		waitpid(ht_pid_at_exit, NULL, 0);
	}
	if (ht_dir_at_exit[0] && !getenv("UT_HTTP_KEEP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ht_dir_at_exit);
		if (system(cmd)) {
			/* (a temporary directory left behind) */
		}
	}
}

static HT_UNUSED int ht_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	CHECK(fd >= 0, "socket: %s", strerror(errno));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind: %s", strerror(errno));
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0, "getsockname");
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static HT_UNUSED bool ht_accepts(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static HT_UNUSED void ht_write_conf(const struct ht_server *s)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/nginx.conf", s->dir);
	f = fopen(path, "w");
	CHECK(f, "%s: %s", path, strerror(errno));
	fprintf(f,
		"daemon off;\nmaster_process off;\nworker_processes 1;\n"
		"pid %1$s/nginx.pid;\nerror_log %1$s/error.log;\n"
		"events { worker_connections 256; }\n"
		"http {\n"
		"  access_log %1$s/access.log;\n"
		"  client_body_temp_path %1$s/body;\n"
		"  limit_req_zone $binary_remote_addr zone=slow:1m rate=2r/s;\n"
		"  server {\n"
		"    listen 127.0.0.1:%2$d;\n"
		"    root %3$s;\n"
		"    location /forbidden/ { return 403; }\n"
		"    location /noetag/ { etag off; }\n"
		"    location /limited/ { limit_req zone=slow; }\n"
		"    location /slow/ { limit_rate 8m; }\n"
		"    %4$s\n"
		"  }\n"
		"}\n", s->dir, s->port, s->root, s->extra);
	fclose(f);
}

/* Start nginx on s->port; false when it exited at once (see error.log). */
static HT_UNUSED bool ht_try_run(struct ht_server *s)
{
	char conf[256], elog[256];

	snprintf(conf, sizeof(conf), "%s/nginx.conf", s->dir);
	snprintf(elog, sizeof(elog), "%s/error.log", s->dir);
	s->pid = fork();
	CHECK(s->pid >= 0, "fork: %s", strerror(errno));
	ht_pid_at_exit = s->pid;
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("nginx", "nginx", "-p", s->dir, "-c", conf, "-e", elog, (char *)NULL);
		/* (Debian's is in /usr/sbin, which a user's PATH may lack) */
		execl("/usr/sbin/nginx", "nginx", "-p", s->dir, "-c", conf, "-e", elog, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct timespec ms10 = { 0, 10 * 1000 * 1000 };

		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = ht_pid_at_exit = 0;
			return false;
		}
		if (ht_accepts(s->port))
			return true;
		nanosleep(&ms10, NULL);
	}
	CHECK(0, "nginx does not accept on 127.0.0.1:%d", s->port);
	return false;
}

/* Start the server again (after ht_kill()), on the same port and root. */
static HT_UNUSED void ht_run(struct ht_server *s)
{
	CHECK(ht_try_run(s), "nginx exited at start: see %s/error.log", s->dir);
}

/*
 * Start nginx serving a new temporary directory, with @extra lines in its
 * server block; exit 77 (skip) without nginx or libcurl.
 */
static HT_UNUSED void ht_start(struct ht_server *s, const char *extra)
{
	char path[256];

#ifdef UT_NO_HTTP
	(void)s;
	(void)extra;
	(void)path;
	printf("skip: built without libcurl (install libcurl4-openssl-dev and run make again)\n");
	exit(UT_SKIP);
#else
	if (system("command -v nginx >/dev/null 2>&1") != 0 && access("/usr/sbin/nginx", X_OK)) {
		printf("skip: no nginx (apt-get install nginx-light)\n");
		exit(UT_SKIP);
	}
	memset(s, 0, sizeof(*s));
	/* libcurl follows these: the tests' server is on 127.0.0.1, direct */
	setenv("no_proxy", "127.0.0.1", 1);
	setenv("NO_PROXY", "127.0.0.1", 1);
	snprintf(s->dir, sizeof(s->dir), "/tmp/ufault-http-XXXXXX");
	CHECK(mkdtemp(s->dir), "mkdtemp: %s", strerror(errno));
	snprintf(s->root, sizeof(s->root), "%s/root", s->dir);
	CHECK(mkdir(s->root, 0755) == 0, "mkdir %s", s->root);
	snprintf(path, sizeof(path), "%s/root/noetag", s->dir);
	CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
	snprintf(path, sizeof(path), "%s/root/limited", s->dir);
	CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
	snprintf(path, sizeof(path), "%s/root/slow", s->dir);
	CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
	snprintf(s->extra, sizeof(s->extra), "%s", extra ? extra : "");
	snprintf(ht_dir_at_exit, sizeof(ht_dir_at_exit), "%s", s->dir);
	atexit(ht_atexit);
	for (int tries = 0; ; tries++) {	/* a port taken meanwhile: another */
		s->port = ht_free_port();
		snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
		ht_write_conf(s);
		if (ht_try_run(s))
			break;
		CHECK(tries < 5, "nginx exited at start: see %s/error.log", s->dir);
	}
#endif
}

/* Put @len bytes at @name (relative to the root) as a new file, renamed
 * into place, with modification time @mtime (0: now). */
static HT_UNUSED void ht_put(const struct ht_server *s, const char *name, const void *buf,
			     size_t len, time_t mtime)
{
	char path[512], tmp[520], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", s->root, name);
	slash = strrchr(path, '/');
	*slash = 0;
	CHECK(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
	*slash = '/';
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0, "%s: %s", tmp, strerror(errno));
	CHECK(write(fd, buf, len) == (ssize_t)len, "write %s", tmp);
	if (mtime) {
		struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

		CHECK(futimens(fd, ts) == 0, "futimens: %s", strerror(errno));
	}
	close(fd);
	CHECK(rename(tmp, path) == 0, "rename %s: %s", tmp, strerror(errno));
}

static HT_UNUSED void ht_url(const struct ht_server *s, char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", s->base, name);
}

/* Lines of the access log for @name, with status @status (0: any). */
static HT_UNUSED long ht_requests(const struct ht_server *s, const char *name, int status)
{
	char path[256], line[2048], want[300], code[8];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/access.log", s->dir);
	snprintf(want, sizeof(want), " /%s HTTP/", name);
	snprintf(code, sizeof(code), "\" %d ", status);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want) && (!status || strstr(line, code)))
			n++;
	fclose(f);
	return n;
}

/* ht_requests(), once it is @want or 2 s have passed: nginx logs a
 * request just after its last byte went out. */
static HT_UNUSED long ht_wait_requests(const struct ht_server *s, const char *name, int status,
				       long want)
{
	long n = 0;

	for (int i = 0; i < 200; i++) {
		struct timespec ms10 = { 0, 10 * 1000 * 1000 };

		n = ht_requests(s, name, status);
		if (n == want)
			break;
		nanosleep(&ms10, NULL);
	}
	return n;
}

/* Lines of the access log that are not a GET: what tried to write. */
static HT_UNUSED long ht_not_gets(const struct ht_server *s)
{
	char path[256], line[2048];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/access.log", s->dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !strstr(line, "\"GET ");
	fclose(f);
	return n;
}

/* @len bytes of a version's pattern: byte i of version @v. */
static HT_UNUSED unsigned char ht_byte(uint64_t i, int v)
{
	return (unsigned char)(ut_pattern(i) ^ (unsigned char)(v * 0x5b));
}

static HT_UNUSED unsigned char *ht_pattern(size_t len, int v)
{
	unsigned char *b = malloc(len ? len : 1);

	CHECK(b, "malloc");
	for (size_t i = 0; i < len; i++)
		b[i] = ht_byte(i, v);
	return b;
}

#endif /* UT_HTTP_TEST_H */
