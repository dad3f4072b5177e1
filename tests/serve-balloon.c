// SPDX-License-Identifier: MIT
/* Description: after MADV_DONTNEED (Firecracker's balloon: UFFD_EVENT_REMOVE) a Firecracker-style client reads zeros there, touched or not before, and what it writes after; the rest is still SOURCE's */
#include "serve-test.h"

int main(void)
{
	const size_t len[1] = { 1 << 20 };
	const uint64_t off[1] = { 64 << 10 };
	struct ut_server srv;
	struct ut_fc fc;
	char *m;
	size_t i;

	ut_watchdog(60);
	ut_server_start(&srv, 2 << 20, NULL);
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	m = fc.base[0];
	/* pages 0-15 touched, then removed; 32-47 removed untouched */
	for (i = 0; i < 16; i++)
		CHECK((unsigned char)m[i * 4096] == ut_pattern(off[0] + i * 4096), "page %zu", i);
	CHECK(madvise(m, 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	CHECK(madvise(m + 32 * 4096, 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	for (i = 0; i < 16; i++) {
		CHECK(m[i * 4096] == 0 && m[i * 4096 + 4095] == 0, "removed page %zu not zero", i);
		CHECK(m[(32 + i) * 4096 + 7] == 0, "removed untouched page %zu not zero", 32 + i);
	}
	/* written after the removal: the client's own, and removed again: zeros */
	m[40 * 4096 + 1] = 0x5a;
	CHECK(m[40 * 4096 + 1] == 0x5a, "write lost");
	CHECK(madvise(m + 40 * 4096, 4096, MADV_DONTNEED) == 0, "madvise");
	CHECK(m[40 * 4096 + 1] == 0, "removed twice: not zero");
	/* a write fault on a removed page never touched */
	m[44 * 4096 + 9] = 3;
	CHECK(m[44 * 4096 + 9] == 3 && m[44 * 4096] == 0, "write to a removed page");
	/* the rest of the region is SOURCE's */
	for (i = 16; i < 32; i++)
		CHECK((unsigned char)m[i * 4096 + 5] == ut_pattern(off[0] + i * 4096 + 5), "page %zu", i);
	for (i = 48; i < len[0] / 4096; i++)
		CHECK((unsigned char)m[i * 4096 + 5] == ut_pattern(off[0] + i * 4096 + 5), "page %zu", i);
	return UT_PASS;
}
