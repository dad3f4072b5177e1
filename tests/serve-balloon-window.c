// SPDX-License-Identifier: MIT
/* Description: a Firecracker-style client reading in order into pages it removed (MADV_DONTNEED, never touched) reads zeros there: the readahead window a fault fills and copies over skips them; every other page of the window is SOURCE's */
#include "serve-test.h"

int main(void)
{
	const size_t len[1] = { 2 << 20 };
	const uint64_t off[1] = { 128 << 10 };
	struct ut_server srv;
	struct ut_fc fc;
	size_t i;
	char *m;

	ut_watchdog(60);
	ut_server_start(&srv, 4 << 20, NULL);
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	m = fc.base[0];
	/* a stream: pages 0-15 in order (the first window) */
	for (i = 0; i < 16; i++)
		CHECK((unsigned char)m[i * 4096] == ut_pattern(off[0] + i * 4096), "page %zu", i);
	/* removed before anything was read there: 20-39 and 60, inside the
	 * window the next fault fills and copies over (from page 16) */
	CHECK(madvise(m + 20 * 4096, 20 * 4096, MADV_DONTNEED) == 0, "madvise");
	CHECK(madvise(m + 60 * 4096, 4096, MADV_DONTNEED) == 0, "madvise");
	for (i = 16; i < len[0] / 4096; i++) {
		bool removed = (i >= 20 && i < 40) || i == 60;
		unsigned char want = removed ? 0 : ut_pattern(off[0] + i * 4096 + 9);
		unsigned char want2 = removed ? 0 : ut_pattern(off[0] + i * 4096 + 4095);

		CHECK((unsigned char)m[i * 4096 + 9] == want &&
		      (unsigned char)m[i * 4096 + 4095] == want2,
		      "page %zu%s: %u, want %u", i, removed ? " (removed)" : "",
		      (unsigned char)m[i * 4096 + 9], want);
	}
	return UT_PASS;
}
