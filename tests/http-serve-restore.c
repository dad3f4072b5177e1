/* Description: ufault-serve with an http:// SOURCE served by nginx: a
 * Firecracker-style client (anonymous regions, its own userfaultfd, the
 * JSON handshake) reads the object's bytes at each region's offset, in
 * random pages and then in order, and the server's --stats line counts
 * the range GETs it sent; with nginx killed, a page not read yet gives
 * the client SIGBUS after the deadline and the server logs the cause. */
#define _GNU_SOURCE
#include "http-test.h"
#include "serve-test.h"

#define SIZE	(32UL << 20)

int main(void)
{
	/* region 2 is read only once nginx is gone */
	const size_t len[3] = { 4 << 20, 1 << 20, 1 << 20 };
	const uint64_t off[3] = { 1 << 20, 8 << 20, 24 << 20 };
	const char *const extra[] = { "--stats", "1", NULL };
	unsigned char *buf;
	struct ut_server srv;
	struct ht_server hs;
	struct ut_fc fc;
	char url[256];
	size_t i, p;

	ht_start(&hs, NULL);
	ut_watchdog(120);
	buf = ht_pattern(SIZE, 0);
	ht_put(&hs, "mem", buf, SIZE, 0);
	ht_url(&hs, url, sizeof(url), "mem");

	setenv("UFAULT_HTTP_DEADLINE_MS", "1000", 1);	/* for ufault-serve */
	ut_server_source = url;
	ut_server_start(&srv, 4096, extra);
	ut_fc_map(&fc, 3, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);

	for (p = 0; p < 64; p++) {
		size_t pg = (p * 2654435761u) % (len[0] / 4096);
		uint64_t so = off[0] + pg * 4096 + 100;

		CHECK((unsigned char)fc.base[0][pg * 4096 + 100] == buf[so], "random page %zu", pg);
	}
	for (i = 0; i < len[1]; i += 4096)
		CHECK(!memcmp(fc.base[1] + i, buf + off[1] + i, 4096), "region 1 +%zu", i);
	ut_fc_check(&fc, 0, 1);
	ut_server_log_wait(&srv, "served, 3 regions");
	ut_server_log_wait(&srv, "http: ");

	/* the web server dies: a page not read yet is SIGBUS, and logged */
	ut_catch_signals();
	ht_kill(&hs);
	{
		struct ut_fault f;
		unsigned char v;

		CHECK(ut_read(fc.base[2] + 100 * 4096, &v, &f) == SIGBUS,
		      "region 2 with nginx gone: signal %d, want SIGBUS", f.sig);
	}
	ut_server_log_wait(&srv, "failed reads (their faults got SIGBUS); the last: "
			   "Input/output error (Couldn't connect to server)");
	free(buf);
	printf("ok: ufault-serve restored from nginx\n");
	return UT_PASS;
}
