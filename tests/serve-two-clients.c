// SPDX-License-Identifier: MIT
/* Description: two Firecracker-style client processes of one ufault-serve at once each read SOURCE's bytes at their own offsets */
#include "serve-test.h"

static int client(const char *sock, uint64_t off)
{
	const size_t len[1] = { 2 << 20 };
	struct ut_fc fc;

	ut_fc_map(&fc, 1, len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, sock);
	ut_fc_check(&fc, 0, 1);
	return UT_PASS;
}

int main(void)
{
	struct ut_server srv;
	pid_t pid[2];
	int i, st, rc = UT_PASS;

	ut_watchdog(60);
	ut_server_start(&srv, 8 << 20, NULL);
	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		CHECK(pid[i] >= 0, "fork");
		if (pid[i] == 0)
			_exit(client(srv.sock, (uint64_t)(i ? 1 : 5) << 20));
	}
	for (i = 0; i < 2; i++) {
		CHECK(waitpid(pid[i], &st, 0) == pid[i], "waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			rc = WIFEXITED(st) && WEXITSTATUS(st) == UT_SKIP ? UT_SKIP : UT_FAIL;
	}
	return rc;
}
