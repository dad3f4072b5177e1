// SPDX-License-Identifier: MIT
/* Description: with the server's table of 1024 clients full of idle connections, the next VMM is not left in the listen queue: it is refused with a log line naming its pid, uid and the reason, and fails closed (EPIPE at its handshake, or SIGBUS at its first touch, never a hang); a ufault client there is told -EAGAIN; once the idle connections go, a VMM is served again */
#include "serve-test.h"

#include <sys/resource.h>

#define TABLE	1024

/* The VMM past the table, in a process of its own (its pid is the one
 * the log must name): exits 0 on EPIPE or SIGBUS at its touch. */
static pid_t late_vmm(const char *sock)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct ut_fault f;
		unsigned char v;
		char json[256], *p;
		int uffd = ut_uffd_1m(UFFD_FEATURE_EVENT_REMOVE, 0, &p, json, sizeof(json)), s;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		ut_catch_signals();
		s = ut_send_refusable(sock, json, strlen(json), uffd);
		if (s >= 0)
			CHECK(ut_read(p + 4096, &v, &f) == SIGBUS, "read %u, signal %d", v, f.sig);
		fprintf(stderr, "the VMM past the table: %s\n", s < 0 ? "EPIPE" : "SIGBUS");
		_exit(0);
	}
	return pid;
}

int main(void)
{
	static const char *const opts[] = { "--max-per-uid", "1024", "--handshake-timeout",
					    "3600", NULL };
	struct rlimit rl = { 8192, 8192 };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct ut_fc fc;
	char want[160];
	int idle[TABLE], base, st, i;
	pid_t pid;

	ut_watchdog(120);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: cannot raise the fd limit past the table\n");
		return UT_SKIP;
	}
	/* the server inherits it: room for the table and more */
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit: %s", strerror(errno));
	ut_server_start(&srv, 2 << 20, opts);
	ut_server_log_wait(&srv, "closed before the handshake");	/* (ut_server_start's) */
	base = ut_server_fds(&srv);
	for (i = 0; i < TABLE; i++)
		CHECK((idle[i] = ut_connect(srv.sock)) >= 0, "connect %d: %s", i, strerror(errno));
	while (ut_server_fds(&srv) < base + TABLE)
		usleep(10000);
	fprintf(stderr, "%d idle connections taken\n", TABLE);

	pid = late_vmm(srv.sock);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the VMM past the table: status %#x", st);
	snprintf(want, sizeof(want), "client pid %d uid 0: refused: too many clients", (int)pid);
	ut_server_log_wait(&srv, want);

	/* a ufault client is told, and does not wait */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_attach(mm, srv.sock, O_RDONLY, &obj), -EAGAIN);

	for (i = 0; i < TABLE; i++)
		close(idle[i]);
	/* the server has seen them go (else the VMM below may still find the
	 * table full, and be refused as it should be) */
	while (ut_server_fds(&srv) > base)
		usleep(10000);
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	uf_mm_destroy(mm);
	printf("pass: the connection past a full table was answered and failed closed\n");
	return UT_PASS;
}
