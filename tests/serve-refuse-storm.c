// SPDX-License-Identifier: MIT
/* Description: a tenant that reconnects as fast as ufault-serve refuses it (over --max-per-uid) does not fill the log: past 20 refusals in a second the rest are counted on one line, every refusal is still counted in --stats, and a VMM is served meanwhile */
#include "serve-test.h"

#define STORM 600

int main(void)
{
	static const char *const opts[] = { "--max-per-uid", "2", "--handshake-timeout", "3600",
					    "--stats", "1", NULL };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct ut_server srv;
	struct ut_fc fc;
	char log[1 << 16], c, *p;
	int hold, i, lines = 0;

	ut_watchdog(60);
	ut_server_start(&srv, 2 << 20, opts);
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);		/* root's first */
	ut_fc_check(&fc, 0, 1);
	hold = ut_connect(srv.sock);			/* its second */
	CHECK(hold >= 0, "connect");
	ut_server_log_wait(&srv, "uid 0 connected");
	for (i = 0; i < STORM; i++) {
		int s = ut_connect(srv.sock);

		CHECK(s >= 0, "connect %d: %s", i, strerror(errno));
		CHECK(recv(s, &c, 1, 0) == 0, "connection %d not refused", i);
		close(s);
	}
	ut_server_log_wait(&srv, "more connections refused in a second");
	ut_server_log_read(&srv, log, sizeof(log));
	for (p = strstr(log, "(--max-per-uid)"); p; p = strstr(p + 1, "(--max-per-uid)"))
		lines++;
	fprintf(stderr, "%d refusals, %d logged one by one\n", STORM, lines);
	CHECK(lines < STORM, "every refusal logged: %d lines", lines);
	/* counted all the same */
	for (;;) {
		char *q = NULL;

		ut_server_log_read(&srv, log, sizeof(log));
		for (p = strstr(log, "stats: "); p; p = strstr(p + 1, "stats: "))
			q = p;
		if (q && (p = strstr(q, "refused ")) && strtoul(p + 8, NULL, 10) >= STORM)
			break;
		usleep(100000);
	}
	close(hold);
	return UT_PASS;
}
