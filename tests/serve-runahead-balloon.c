// SPDX-License-Identifier: MIT
/* Description: a Firecracker-style client reading its memory in order, while the server copies the windows ahead of it in the background, reads zeros in every range it removed (MADV_DONTNEED) just ahead of where it reads, and its own bytes in the pages it wrote ahead; every other page is SOURCE's */
#include "serve-test.h"

#define NPAGES	6144		/* 24 MiB: a dozen readahead windows */
#define BLOCK	512		/* pages read between removals */
#define ROUNDS	4		/* clients, one after the other */

static bool removed[NPAGES], wrote[NPAGES];

/* One client: read the region in order, removing and writing ahead. */
static void one_client(struct ut_server *srv, size_t round)
{
	const size_t len[1] = { (size_t)NPAGES * 4096 };
	const uint64_t off[1] = { 1 << 20 };
	struct ut_fc fc;
	size_t i, b;
	char *m;

	memset(removed, 0, sizeof(removed));
	memset(wrote, 0, sizeof(wrote));
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv->sock);
	m = fc.base[0];
	for (b = 0; b < NPAGES / BLOCK; b++) {
		size_t at = (b + 1) * BLOCK + (b * 37 + round * 101) % 300;
		size_t n = 20 + (b * 13) % 40;

		/* from the third block on (the stream is run ahead of by
		 * then): remove a range inside the next window or two, which
		 * the server may be copying right now, and write a page
		 * further on */
		if (b >= 2 && at + n < NPAGES) {
			CHECK(madvise(m + at * 4096, n * 4096, MADV_DONTNEED) == 0, "madvise");
			for (i = at; i < at + n; i++)
				removed[i] = true;
			i = at + n + BLOCK / 2;
			if (i < NPAGES && !removed[i]) {
				m[i * 4096 + 100] = (char)0xee;
				wrote[i] = true;
			}
		}
		for (i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
			unsigned char want = removed[i] ? 0 : ut_pattern(off[0] + i * 4096 + 9);
			unsigned char want2 = removed[i] ? 0 : ut_pattern(off[0] + i * 4096 + 4095);
			unsigned char want3 = removed[i] ? 0 : wrote[i] ? 0xee :
					      ut_pattern(off[0] + i * 4096 + 100);

			CHECK((unsigned char)m[i * 4096 + 9] == want &&
			      (unsigned char)m[i * 4096 + 4095] == want2 &&
			      (unsigned char)m[i * 4096 + 100] == want3,
			      "client %zu page %zu%s%s: %u %u %u, want %u %u %u", round, i,
			      removed[i] ? " (removed)" : "", wrote[i] ? " (written)" : "",
			      (unsigned char)m[i * 4096 + 9], (unsigned char)m[i * 4096 + 4095],
			      (unsigned char)m[i * 4096 + 100], want, want2, want3);
		}
	}
	munmap(m, len[0]);
	close(fc.uffd);
	close(fc.sock);
}

int main(void)
{
	struct ut_server srv;
	size_t round;

	ut_watchdog(120);
	ut_server_start(&srv, 32 << 20, NULL);
	/* the first client's windows are read from SOURCE, the others' from
	 * the warm cache (the copies ahead go faster) */
	for (round = 0; round < ROUNDS; round++)
		one_client(&srv, round);
	return UT_PASS;
}
