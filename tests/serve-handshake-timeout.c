// SPDX-License-Identifier: MIT
/* Description: with --handshake-timeout 1, connections that never send their handshake are closed by the server (each counted), one that sent its userfaultfd with half a handshake gets SIGBUS at its touch (failed closed, not left hanging), and a real VMM is then served */
#include "serve-test.h"

#define IDLE 40

int main(void)
{
	static const char *const opts[] = { "--handshake-timeout", "1", "--stats", "1", NULL };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct ut_server srv;
	struct ut_fc fc, half;
	struct ut_fault f;
	unsigned char v;
	int idle[IDLE], i, closed = 0;
	char c, log[1 << 16], *p;

	ut_watchdog(60);
	ut_catch_signals();
	ut_server_start(&srv, 2 << 20, opts);
	for (i = 0; i < IDLE; i++) {
		idle[i] = ut_connect(srv.sock);
		CHECK(idle[i] >= 0, "connect %d: %s", i, strerror(errno));
	}
	/* its uffd and the start of a handshake, never the rest */
	ut_fc_map(&half, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&half);
	half.sock = ut_send_handshake(srv.sock, "[{\"base_host_virt_addr\":", 24, half.uffd);

	/* each idle connection is closed by the server (EOF), none hangs */
	for (i = 0; i < IDLE; i++) {
		ssize_t n = recv(idle[i], &c, 1, 0);

		closed += n == 0;
		close(idle[i]);
	}
	CHECK(closed == IDLE, "%d of %d idle connections closed", closed, IDLE);
	CHECK(ut_read(half.base[0] + 7 * 4096, &v, &f) == SIGBUS, "half a handshake: read %u, "
	      "signal %d", v, f.sig);
	close(half.sock);

	ut_fc_map(&fc, 1, &len, &off);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);

	/* counted: a stats line with the timeouts (IDLE + 1 at least) */
	for (;;) {
		char *q = NULL;

		ut_server_log_read(&srv, log, sizeof(log));
		for (p = strstr(log, "stats: "); p; p = strstr(p + 1, "stats: "))
			q = p;
		if (q && (p = strstr(q, " sigbus, ")) && (p = strstr(p + 1, " sigbus, ")) &&
		    strtoul(p + 9, NULL, 10) >= IDLE + 1)
			break;
		usleep(100000);
	}
	CHECK(strstr(log, "no handshake within 1 s"), "%s", log);
	return UT_PASS;
}
