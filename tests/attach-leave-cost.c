// SPDX-License-Identifier: MIT
/* Description: a ufault client's 64 MiB writable shared mapping, one page of it read, leaving ufault-serve (unmapped, and its process gone) costs the server a few mincore() calls, not one per page of the mapping (counted with strace -f on the server; skipped without strace); what the client wrote still reaches SOURCE */
#include "attach-test.h"

#include <dirent.h>

#define SIZE	(64 << 20)
#define PG	4096
#define MAX_CALLS 512	/* 16384 pages: one call per page before */

/* Map all of SOURCE writable and shared, read a page, write one, go. */
static void client(int in, int out, void *arg)
{
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, arg, O_RDWR);
	volatile unsigned char *p;

	ut_watchdog(60);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	CHECK(p[5 * PG + 1] == ut_pattern(5 * PG + 1), "SOURCE's byte");
	p[9 * PG] = 0x5c;
	ut_say(out, 0);
	(void)ut_hear(in);
	CHECK_RET(uf_munmap(mm, (void *)p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

/* strace -f on the server's threads, writing a line per mincore() to
 * @out; its pid, once it has attached (its "attached" lines on stderr). */
static pid_t trace_start(pid_t server, const char *out, const char *err)
{
	char pid[16], buf[4096];
	pid_t t;
	int i, fd;

	snprintf(pid, sizeof(pid), "%d", (int)server);
	t = fork();
	CHECK(t >= 0, "fork: %s", strerror(errno));
	if (t == 0) {
		fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execlp("strace", "strace", "-f", "-qq", "-e", "trace=mincore", "-o", out, "-p",
		       pid, (char *)NULL);
		_exit(127);
	}
	/* strace -qq says nothing once attached: give it till the server's
	 * threads are each traced (TracerPid in their status) */
	for (i = 0; i < 1000; i++) {
		char path[64];
		bool all = true;
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)server);
		d = opendir(path);
		CHECK(d, "%s: %s", path, strerror(errno));
		while ((e = readdir(d))) {
			ssize_t n;

			if (e->d_name[0] == '.')
				continue;
			snprintf(buf, sizeof(buf), "/proc/%d/task/%s/status", (int)server, e->d_name);
			fd = open(buf, O_RDONLY);
			n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
			if (fd >= 0)
				close(fd);
			buf[n > 0 ? n : 0] = '\0';
			if (n > 0 && strstr(buf, "TracerPid:\t0\n"))
				all = false;
		}
		closedir(d);
		if (all)
			return t;
		if (waitpid(t, NULL, WNOHANG) == t)
			break;
		usleep(10000);
	}
	return -1;
}

/* Lines in @path. */
static long lines(const char *path)
{
	char buf[65536];
	long n = 0;
	ssize_t r, i;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

int main(void)
{
	char out[128], err[128], want[64];
	struct ut_server srv;
	struct ut_client c;
	unsigned char b;
	long calls, was;
	pid_t t;
	int fd, i, st;

	if (system("command -v strace >/dev/null 2>&1")) {
		printf("skip: no strace\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, SIZE, NULL);
	ut_client_start(&c, client, srv.sock);
	ut_watchdog(120);
	if (ut_hear(c.from) < 0) {
		st = ut_client_wait(&c);
		if (st == UT_SKIP)
			return UT_SKIP;
		CHECK(0, "the client failed to start: %d", st);
	}
	snprintf(out, sizeof(out), "%s/mincore", srv.dir);
	snprintf(err, sizeof(err), "%s/strace.err", srv.dir);
	t = trace_start(srv.pid, out, err);
	if (t < 0) {
		printf("skip: strace could not attach to the server\n");
		unlink(out);
		unlink(err);
		return UT_SKIP;
	}
	/* the client unmaps and goes; its writes are marked dirty */
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	snprintf(want, sizeof(want), "client pid %d disconnected", (int)c.pid);
	ut_server_log_wait(&srv, want);
	/* the server's count settles (a call a few microseconds apart) */
	for (was = -1, i = 0; i < 100 && (calls = lines(out)) != was; i++) {
		was = calls;
		usleep(300000);
	}
	kill(t, SIGINT);
	waitpid(t, NULL, 0);
	calls = lines(out);
	unlink(out);
	unlink(err);
	printf("mincore() calls in the server while a 64 MiB mapping left: %ld\n", calls);
	CHECK(calls <= MAX_CALLS, "%ld mincore() calls for a mapping of %d pages (at most %d)",
	      calls, SIZE / PG, MAX_CALLS);

	/* what the client wrote reaches SOURCE when the server syncs it */
	CHECK(kill(srv.pid, SIGTERM) == 0, "SIGTERM: %s", strerror(errno));
	CHECK(waitpid(srv.pid, &st, 0) == srv.pid, "waitpid: %s", strerror(errno));
	srv.pid = 0;
	ut_server_atexit.pid = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server exit status %d", st);
	fd = open(srv.src, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, &b, 1, 9 * PG) == 1, "SOURCE: %s", strerror(errno));
	close(fd);
	CHECK(b == 0x5c, "SOURCE's page 9: 0x%02x, not the client's write", b);
	printf("pass: %ld mincore() calls; the client's write in SOURCE\n", calls);
	return 0;
}
