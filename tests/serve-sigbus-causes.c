// SPDX-License-Identifier: MIT
/* Description: a SIGBUS ufault-serve answers a Firecracker-style client with is counted by cause in its stats and logged once with it: a fault outside every region the client sent is "outside every region", not the store's */
#include "serve-test.h"

/* The count after @what in the newest "SIGBUS:" line of the log, once
 * there is one (the server looks each second while clients are). */
static unsigned long logged(struct ut_server *s, const char *what, unsigned long want)
{
	char log[1 << 16];

	for (;;) {
		char *p = log, *q, *line = NULL;

		ut_server_log_read(s, log, sizeof(log));
		while ((q = strstr(p, "SIGBUS: ")))
			line = p = q + 1;
		if (line && (q = strstr(line, what))) {
			unsigned long n = strtoul(q + strlen(what), NULL, 10);

			if (n >= want)
				return n;
		}
		usleep(50000);
	}
}

int main(void)
{
	const size_t len[2] = { 256 << 10, 256 << 10 };
	const uint64_t off[2] = { 0, 512 << 10 };
	struct ut_server srv;
	struct ut_fault f;
	struct ut_fc fc;
	unsigned char v;

	ut_watchdog(60);
	ut_catch_signals();
	ut_server_start(&srv, 1 << 20, NULL);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	fc.n = 1;		/* the second region is registered, not sent */
	ut_fc_handshake(&fc, srv.sock);
	CHECK(ut_read(fc.base[1] + 4096, &v, &f) == SIGBUS, "outside: signal %d", f.sig);
	CHECK_RET(logged(&srv, "outside every region ", 1), 1);
	CHECK_RET(logged(&srv, "store ", 0), 0);
	/* its regions are served */
	ut_fc_check(&fc, 0, 1);
	printf("pass: the SIGBUS logged with its cause\n");
	return UT_PASS;
}
