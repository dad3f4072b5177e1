// SPDX-License-Identifier: MIT
/* Description: --max-per-uid 4: uid 65534 holding 4 idle connections has its 5th closed at once (its log line names pid, uid and the limit) and a 6th that sends a userfaultfd fails closed (EPIPE before, or SIGBUS after), while root's VMM is served; once its connections close, uid 65534 is served again; a VMM whose userfaultfd asks for fork events is refused (logged with its pid, uid and why) and gets SIGBUS */
#include "serve-test.h"

#include <grp.h>
#include <sys/stat.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* The jailed tenant, uid 65534: steps told through @go, done through
 * @done. */
static void tenant(struct ut_server *srv, int go, int done)
{
	struct ut_fault f;
	unsigned char v;
	char json[256], c, *p;
	int idle[4], s, uffd, i;

	CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0, "setuid: %s",
	      strerror(errno));
	prctl(PR_SET_DUMPABLE, 1);
	ut_catch_signals();
	for (i = 0; i < 4; i++)
		CHECK((idle[i] = ut_connect(srv->sock)) >= 0, "connect %d: %s", i, strerror(errno));
	/* the 5th: closed by the server (it may not know the 4 yet: the
	 * parent waited for their log lines) */
	s = ut_connect(srv->sock);
	CHECK(s >= 0, "connect 5: %s", strerror(errno));
	CHECK(recv(s, &c, 1, 0) == 0, "the 5th connection was not closed");
	close(s);
	/* the 6th, with a uffd: EPIPE, or SIGBUS at its touch */
	uffd = ut_uffd_1m(UFFD_FEATURE_EVENT_REMOVE, UFFD_USER_MODE_ONLY, &p, json, sizeof(json));
	s = ut_send_refusable(srv->sock, json, strlen(json), uffd);
	if (s >= 0)
		CHECK(ut_read(p + 4096, &v, &f) == SIGBUS, "the 6th: read %u, signal %d", v, f.sig);
	fprintf(stderr, "the 6th: %s\n", s < 0 ? "EPIPE" : "SIGBUS");
	CHECK(write(done, "1", 1) == 1, "write");
	CHECK(read(go, &c, 1) == 1, "read");		/* root was served */
	for (i = 0; i < 4; i++)
		close(idle[i]);
	if (s >= 0)
		close(s);
	CHECK(write(done, "2", 1) == 1, "write");
	CHECK(read(go, &c, 1) == 1, "read");		/* the server let go */
	uffd = ut_uffd_1m(UFFD_FEATURE_EVENT_REMOVE, UFFD_USER_MODE_ONLY, &p, json, sizeof(json));
	s = ut_send_refusable(srv->sock, json, strlen(json), uffd);
	CHECK(s >= 0, "a VMM of uid 65534 refused after its connections closed");
	for (i = 0; i < 256; i++)
		CHECK((unsigned char)p[i * 4096] == ut_pattern((uint64_t)i * 4096), "page %d", i);
	_exit(0);
}

int main(void)
{
	static const char *const opts[] = { "--max-per-uid", "4", "--allow-uid", "65534",
					    "--handshake-timeout", "3600", NULL };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct ut_server srv;
	struct ut_fc fc;
	struct ut_fault f;
	unsigned char v;
	char json[256], c, *p, want[128];
	int go[2], done[2], base, st, uffd, s;
	pid_t pid;

	ut_watchdog(60);
	ut_catch_signals();
	if (geteuid() != 0) {
		fprintf(stderr, "not root: no other user to be\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, 2 << 20, opts);
	CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
	ut_server_log_wait(&srv, "closed before the handshake");	/* (ut_server_start's) */
	base = ut_server_fds(&srv);
	CHECK(pipe(go) == 0 && pipe(done) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		tenant(&srv, go[0], done[1]);
	CHECK(read(done[0], &c, 1) == 1, "the tenant died");
	snprintf(want, sizeof(want), "client pid %d uid 65534: refused: uid 65534 has 4 connections "
		 "already (--max-per-uid)", (int)pid);
	ut_server_log_wait(&srv, want);

	/* root, meanwhile */
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	CHECK(write(go[1], "1", 1) == 1, "write");
	CHECK(read(done[0], &c, 1) == 1, "the tenant died");
	while (ut_server_fds(&srv) != base + 2)		/* root's VMM: socket, uffd */
		usleep(10000);
	CHECK(write(go[1], "2", 1) == 1, "write");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the tenant: status %#x", st);

	/* fork events (root alone may ask for them): refused, SIGBUS */
	uffd = ut_uffd_1m(UFFD_FEATURE_EVENT_FORK, 0, &p, json, sizeof(json));
	s = ut_send_refusable(srv.sock, json, strlen(json), uffd);
	CHECK(s >= 0, "fork events: refused before the handshake");
	/* logged with its pid, uid and the reason */
	snprintf(want, sizeof(want), "client pid %d uid 0: refused: a userfaultfd with fork events",
		 (int)getpid());
	ut_server_log_wait(&srv, want);
	CHECK(ut_read(p + 5 * 4096, &v, &f) == SIGBUS, "fork events: read %u, signal %d", v, f.sig);
	return UT_PASS;
}
