// SPDX-License-Identifier: MIT
/* Description: Firecracker-style clients killed with SIGKILL while reading their memory in order, as the server copies the windows ahead of them in the background, cost ufault-serve nothing: its open fds come back to where they were, and a new client reading in order is served SOURCE's bytes */
#include "serve-test.h"

#define ROUNDS	12
#define LEN	(32UL << 20)

/* Read the region in order once (telling the parent through @wfd once
 * the first window was right), then wait to be killed. */
static void reader(const char *sock, int wfd)
{
	const size_t len[1] = { LEN };
	const uint64_t off[1] = { 0 };
	struct ut_fc fc;
	size_t i;

	ut_fc_map(&fc, 1, len, off);
	if (fc.uffd < 0)
		_exit(UT_SKIP);
	ut_fc_handshake(&fc, sock);
	for (i = 0; i < LEN / 4096; i++) {
		if ((unsigned char)fc.base[0][i * 4096] != ut_pattern(i * 4096))
			_exit(1);
		if (i == 16 && write(wfd, "x", 1) != 1)
			_exit(1);
	}
	pause();
	_exit(0);
}

int main(void)
{
	const size_t len[1] = { LEN };
	const uint64_t off[1] = { 0 };
	struct ut_server srv;
	struct ut_fc fc;
	int base, r, p[2], st;
	char c;

	ut_watchdog(120);
	ut_server_start(&srv, LEN, NULL);
	ut_server_log_wait(&srv, "closed before the handshake");
	base = ut_server_fds(&srv);
	for (r = 0; r < ROUNDS; r++) {
		pid_t pid;

		CHECK(pipe(p) == 0, "pipe");
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			close(p[0]);
			reader(srv.sock, p[1]);
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1) {
			CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
			if (WIFEXITED(st) && WEXITSTATUS(st) == UT_SKIP)
				return UT_SKIP;
			CHECK(0, "client %d failed before its kill: status %#x", r, st);
		}
		close(p[0]);
		ut_client_kill(pid, (useconds_t)(r * 3137 % 40000), r);	/* in its reading */
	}
	/* each death noticed: the socket's EOF, the address space reaped
	 * once the copies ahead into it are over */
	ut_server_serves_after(&srv, base, len, off, &fc);
	return UT_PASS;
}
