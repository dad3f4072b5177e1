/* Description: ufault-serve with an http:// SOURCE killed with SIGKILL and
 * started again on the same SOCKET and URL: its Firecracker-style client
 * goes on with the right bytes -- the pages read before from the cache
 * the supervisor kept, the rest from nginx through the new server -- as it
 * does for a file. */
#define _GNU_SOURCE
#include "http-test.h"
#include "serve-test.h"

#define SIZE	(12UL << 20)

int main(void)
{
	const size_t len[2] = { 4 << 20, 1 << 20 };
	const uint64_t off[2] = { 1 << 20, 8 << 20 };
	unsigned char *buf;
	struct ut_server srv;
	struct ht_server hs;
	struct ut_fc fc;
	char url[256];
	size_t pg;

	ht_start(&hs, NULL);
	ut_watchdog(120);
	buf = ht_pattern(SIZE, 0);
	ht_put(&hs, "mem", buf, SIZE, 0);
	ht_url(&hs, url, sizeof(url), "mem");

	ut_server_source = url;
	ut_server_start(&srv, 4096, NULL);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);

	/* half of region 0 read */
	for (pg = 0; pg < 512; pg++)
		CHECK((unsigned char)fc.base[0][pg * 4096 + 9] == buf[off[0] + pg * 4096 + 9],
		      "page %zu", pg);

	ut_server_stop(&srv);
	ut_server_restart(&srv, NULL);
	ut_server_log_wait(&srv, "taken over, 2 regions");

	/* every page of region 0, then region 1 */
	for (pg = 0; pg < len[0] / 4096; pg++)
		CHECK(!memcmp(fc.base[0] + pg * 4096, buf + off[0] + pg * 4096, 4096),
		      "region 0 page %zu after the restart", pg);
	ut_fc_check(&fc, 1, 1);
	free(buf);
	printf("ok: a restarted ufault-serve went on serving from nginx\n");
	return UT_PASS;
}
