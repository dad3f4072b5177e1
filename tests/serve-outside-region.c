// SPDX-License-Identifier: MIT
/* Description: a Firecracker-style client's fault in a range it registered but left out of its handshake gets SIGBUS from ufault-serve (poison), never zeros or a hang; its regions are still served */
#include "serve-test.h"

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
	CHECK(ut_read(fc.base[1] + 4096, &v, &f) == SIGBUS, "outside again: signal %d", f.sig);
	ut_fc_check(&fc, 0, 1);
	return UT_PASS;
}
