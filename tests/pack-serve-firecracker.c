// SPDX-License-Identifier: MIT
/* Description: ufault-serve given a packed SOURCE (ufault-pack's format, known by its magic number) serves a Firecracker-style client the original bytes at each region's offset, zero pages included, and goes on doing so after it is killed and started again (the takeover) */
#include "pack-test.h"
#include "serve-test.h"

#define SIZE	(12u << 20)

static enum pt_kind kind(uint64_t pg)
{
	return pg % 5 == 2 || (pg >= 700 && pg < 900) ? PT_ZERO : PT_PATTERN;
}

/* The byte at @off of the image: the pattern, or zero. */
static unsigned char want(uint64_t off)
{
	return kind(off / UF_PAGE_SIZE) == PT_ZERO ? 0 : ut_pattern(off);
}

int main(void)
{
	const size_t len[2] = { 4 << 20, 1 << 20 };
	const uint64_t off[2] = { 1 << 20, 8 << 20 };
	struct pt_image im;
	struct ut_server srv;
	struct ut_fc fc;

	ut_watchdog(60);
	pt_make(&im, SIZE, kind, 0);
	ut_server_source = im.packed;
	ut_server_start(&srv, 4096, NULL);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);

	/* random pages of the first region, then all of both in order */
	for (size_t p = 0; p < 64; p++) {
		size_t pg = (p * 2654435761u) % (len[0] / 4096);
		uint64_t so = off[0] + pg * 4096 + 100;

		CHECK((unsigned char)fc.base[0][pg * 4096 + 100] == want(so), "random page %zu", pg);
	}
	ut_server_log_wait(&srv, "packed snapshot");

	/* killed and started again on the same SOCKET and SOURCE */
	ut_server_stop(&srv);
	ut_server_restart(&srv, NULL);
	ut_server_log_wait(&srv, "taken over, 2 regions");
	for (unsigned int i = 0; i < 2; i++) {
		for (size_t o = 0; o < len[i]; o += 4096) {
			uint64_t so = off[i] + o;

			CHECK((unsigned char)fc.base[i][o] == want(so) &&
			      (unsigned char)fc.base[i][o + 4095] == want(so + 4095),
			      "region %u +%zu: %u, want %u", i, o, (unsigned char)fc.base[i][o], want(so));
		}
	}
	return UT_PASS;
}
