// SPDX-License-Identifier: MIT
/* Description: SIGTERM to ufault-serve's supervisor is SIGTERM to the server, never a second one: it stops accepting, goes on serving its Firecracker-style client, and both exit 0 once the client has gone; with no server running, the supervisor's SIGTERM fails the client closed at once (SIGBUS, not after the orphan timeout) */
#include "serve-test.h"

#include <sys/stat.h>

static int wait_pid(pid_t *pid)
{
	int st;

	CHECK(waitpid(*pid, &st, 0) == *pid, "waitpid: %s", strerror(errno));
	if (ut_server_atexit.pid == *pid)
		ut_server_atexit.pid = 0;
	if (ut_server_atexit.super_pid == *pid)
		ut_server_atexit.super_pid = 0;
	*pid = 0;
	return st;
}

int main(void)
{
	static const char *const opts[] = { "--orphan-timeout", "600", NULL };
	const size_t len[1] = { 1 << 20 };
	const uint64_t off[1] = { 0 };
	struct ut_server srv;
	struct ut_fault f;
	struct ut_fc fc;
	struct stat sb;
	unsigned char v;
	int st;

	ut_watchdog(60);
	ut_catch_signals();
	ut_server_start(&srv, 2 << 20, NULL);
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	CHECK((unsigned char)fc.base[0][0] == ut_pattern(0), "page 0");

	CHECK(kill(srv.super_pid, SIGTERM) == 0, "kill");
	ut_server_log_wait(&srv, "no new clients");
	CHECK(stat(srv.sock, &sb) < 0 && errno == ENOENT, "the socket is still there");
	CHECK((unsigned char)fc.base[0][100 * 4096 + 3] == ut_pattern(100 * 4096 + 3), "page 100");
	close(fc.sock);
	st = wait_pid(&srv.pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %#x", st);
	st = wait_pid(&srv.super_pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "supervisor status %#x", st);

	/* a service manager signals both: the server's SIGTERM first, then
	 * the supervisor's passed on is not a second one ("exit now") */
	ut_server_start(&srv, 2 << 20, NULL);
	ut_fc_map(&fc, 1, len, off);
	ut_fc_handshake(&fc, srv.sock);
	CHECK((unsigned char)fc.base[0][0] == ut_pattern(0), "page 0");
	CHECK(kill(srv.pid, SIGTERM) == 0, "kill");
	ut_server_log_wait(&srv, "no new clients");
	CHECK(kill(srv.super_pid, SIGTERM) == 0, "kill");
	ut_server_log_wait(&srv, "SIGTERM from the supervisor: stopping already");
	CHECK((unsigned char)fc.base[0][101 * 4096 + 3] == ut_pattern(101 * 4096 + 3), "page 101");
	close(fc.sock);
	st = wait_pid(&srv.pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %#x", st);
	st = wait_pid(&srv.super_pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "supervisor status %#x", st);

	/* no server: SIGTERM fails the client closed now */
	ut_server_start(&srv, 2 << 20, opts);
	ut_fc_map(&fc, 1, len, off);
	ut_fc_handshake(&fc, srv.sock);
	CHECK((unsigned char)fc.base[0][5] == ut_pattern(5), "page 0");
	ut_server_stop(&srv);
	CHECK(kill(srv.super_pid, SIGTERM) == 0, "kill");
	CHECK(ut_read(fc.base[0] + 200 * 4096, &v, &f) == SIGBUS, "page 200: %d", f.sig);
	CHECK(ut_read(fc.base[0] + 5, &v, &f) == 0 && v == ut_pattern(5), "page 0 after");
	return UT_PASS;
}
