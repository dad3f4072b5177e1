// SPDX-License-Identifier: MIT
/* Description: Firecracker-style clients killed with SIGKILL mid-fault and mid-handshake cost ufault-serve nothing: its open fds come back to where they were, and a new client is served */
#include "serve-test.h"

#define ROUNDS	20

/* Touch pages at random for ever (the parent kills it), after telling
 * the parent through @wfd that the first ones were right. */
static void toucher(const char *sock, int wfd)
{
	const size_t len[1] = { 8 << 20 };
	const uint64_t off[1] = { 0 };
	struct ut_fc fc;
	uint64_t x = (uint64_t)getpid();

	ut_fc_map(&fc, 1, len, off);
	if (fc.uffd < 0)
		_exit(UT_SKIP);
	ut_fc_handshake(&fc, sock);
	ut_fc_check(&fc, 0, 509);
	if (write(wfd, "x", 1) != 1)
		_exit(1);
	for (;;) {
		size_t pg;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		pg = (size_t)(x >> 33) % (len[0] / 4096);
		if ((unsigned char)fc.base[0][pg * 4096] != ut_pattern(pg * 4096))
			_exit(1);
	}
}

/* Connect, send half a handshake (with the fd), and wait to be killed. */
static void half(const char *sock, int wfd)
{
	const size_t len[1] = { 1 << 20 };
	const uint64_t off[1] = { 0 };
	struct ut_fc fc;
	char json[512];

	ut_fc_map(&fc, 1, len, off);
	if (fc.uffd < 0)
		_exit(UT_SKIP);
	ut_fc_json(&fc, json, sizeof(json));
	fc.sock = ut_send_handshake(sock, json, strlen(json) / 2, fc.uffd);
	if (write(wfd, "x", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

int main(void)
{
	const size_t len[1] = { 1 << 20 };
	const uint64_t off[1] = { 3 << 20 };
	struct ut_server srv;
	struct ut_fc fc;
	int base, r, p[2], st;
	char c;

	ut_watchdog(120);
	ut_server_start(&srv, 8 << 20, NULL);
	ut_server_log_wait(&srv, "closed before the handshake");
	base = ut_server_fds(&srv);
	for (r = 0; r < ROUNDS; r++) {
		pid_t pid;

		CHECK(pipe(p) == 0, "pipe");
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			close(p[0]);
			if (r % 4 == 3)
				half(srv.sock, p[1]);
			toucher(srv.sock, p[1]);
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1) {
			CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
			if (WIFEXITED(st) && WEXITSTATUS(st) == UT_SKIP)
				return UT_SKIP;
			CHECK(0, "client %d failed before its kill: status %#x", r, st);
		}
		close(p[0]);
		ut_client_kill(pid, (useconds_t)(r * 397 % 3000), r);	/* in its faults */
	}
	/* each death noticed: the socket's EOF, the address space reaped */
	ut_server_serves_after(&srv, base, len, off, &fc);
	return UT_PASS;
}
