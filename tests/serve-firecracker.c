// SPDX-License-Identifier: MIT
/* Description: a Firecracker-style client (anonymous regions, its own userfaultfd, the JSON handshake) reads SOURCE's bytes at each region's offset from ufault-serve */
#include "serve-test.h"

int main(void)
{
	const size_t len[2] = { 4 << 20, 1 << 20 };
	const uint64_t off[2] = { 1 << 20, 8 << 20 };
	struct ut_server srv;
	struct ut_fc fc;
	size_t p;

	ut_watchdog(60);
	ut_server_start(&srv, 12 << 20, NULL);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);

	/* random pages of the first region, then all of both in order */
	for (p = 0; p < 64; p++) {
		size_t pg = (p * 2654435761u) % (len[0] / 4096);
		uint64_t so = off[0] + pg * 4096 + 100;

		CHECK((unsigned char)fc.base[0][pg * 4096 + 100] == ut_pattern(so),
		      "random page %zu", pg);
	}
	ut_fc_check(&fc, 0, 1);
	ut_fc_check(&fc, 1, 1);
	/* a write is the client's own */
	fc.base[1][5] = (char)(ut_pattern(off[1] + 5) ^ 0xff);
	CHECK((unsigned char)fc.base[1][5] == (ut_pattern(off[1] + 5) ^ 0xff), "write");
	ut_server_log_wait(&srv, "served, 2 regions");
	return UT_PASS;
}
