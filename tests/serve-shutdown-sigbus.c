// SPDX-License-Identifier: MIT
/* Description: SIGTERM makes ufault-serve stop accepting while it goes on serving its Firecracker-style client; a second SIGTERM ends it, and the client's pages not yet received give SIGBUS (poison), never zeros or a hang; once its clients have gone a SIGTERM'd server exits 0 */
#include "serve-test.h"

#include <sys/stat.h>

static int wait_exit(struct ut_server *srv)
{
	int st;

	CHECK(waitpid(srv->pid, &st, 0) == srv->pid, "waitpid");
	ut_server_atexit.pid = 0;
	srv->pid = 0;
	return st;
}

int main(void)
{
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

	CHECK(kill(srv.pid, SIGTERM) == 0, "kill");
	ut_server_log_wait(&srv, "no new clients");
	CHECK(stat(srv.sock, &sb) < 0 && errno == ENOENT, "the socket is still there");
	/* still served */
	CHECK((unsigned char)fc.base[0][100 * 4096 + 3] == ut_pattern(100 * 4096 + 3), "page 100");

	CHECK(kill(srv.pid, SIGTERM) == 0, "kill");
	st = wait_exit(&srv);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %#x", st);
	/* received before: the client's; not received: SIGBUS */
	CHECK(ut_read(fc.base[0] + 100 * 4096 + 3, &v, &f) == 0 && v == ut_pattern(100 * 4096 + 3),
	      "page 100 after the server");
	CHECK(ut_read(fc.base[0] + 200 * 4096, &v, &f) == SIGBUS, "page 200: %d", f.sig);
	CHECK(ut_read(fc.base[0] + 255 * 4096 + 1, &v, &f) == SIGBUS, "page 255: %d", f.sig);

	/* a server whose client has gone exits at SIGTERM by itself */
	ut_server_start(&srv, 2 << 20, NULL);
	ut_fc_map(&fc, 1, len, off);
	ut_fc_handshake(&fc, srv.sock);
	CHECK((unsigned char)fc.base[0][7] == ut_pattern(7), "page 0");
	CHECK(kill(srv.pid, SIGTERM) == 0, "kill");
	ut_server_log_wait(&srv, "no new clients");
	close(fc.sock);
	st = wait_exit(&srv);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %#x", st);
	ut_server_log_wait(&srv, "every client has gone");
	return UT_PASS;
}
