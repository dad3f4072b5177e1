// SPDX-License-Identifier: MIT
/* Description: ufault-serve killed with SIGKILL and restarted twice in a row: a range the Firecracker-style client's balloon removes while no server runs (its madvise waits for the next server) and one it removes under the second server still read zeros under the third; every other page reads SOURCE's bytes */
#include "serve-test.h"

#include <pthread.h>

struct remover {
	char *p;
	size_t len;
	int ret;
	int done;		/* atomic */
};

static void *do_remove(void *arg)
{
	struct remover *r = arg;

	r->ret = madvise(r->p, r->len, MADV_DONTNEED);
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Pages 300-315 removed with no server, 400-415 (once @both) under the
 * second server. */
static bool removed(size_t pg, bool both)
{
	return (pg >= 300 && pg < 316) || (both && pg >= 400 && pg < 416);
}

static void check(const struct ut_fc *fc, size_t from, size_t to, bool both)
{
	size_t pg;

	for (pg = from; pg < to; pg++) {
		unsigned char a = (unsigned char)fc->base[0][pg * 4096 + 17];

		if (removed(pg, both))
			CHECK(a == 0, "removed page %zu: %u", pg, a);
		else
			CHECK(a == ut_pattern(fc->offset[0] + pg * 4096 + 17), "page %zu: %u", pg, a);
	}
}

int main(void)
{
	const size_t len[1] = { 4 << 20 };
	const uint64_t off[1] = { 64 << 10 };
	struct remover r = { 0 };
	struct ut_server srv;
	struct ut_fc fc;
	pthread_t th;

	ut_watchdog(60);
	ut_server_start(&srv, 8 << 20, NULL);
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	check(&fc, 0, 256, false);

	/* no server: the balloon's madvise waits for one */
	ut_server_stop(&srv);
	r.p = fc.base[0] + 300 * 4096;
	r.len = 16 * 4096;
	CHECK(pthread_create(&th, NULL, do_remove, &r) == 0, "pthread_create");
	ut_server_restart(&srv, NULL);
	pthread_join(th, NULL);
	CHECK(r.ret == 0, "madvise: %s", strerror(errno));

	/* under the second server */
	check(&fc, 256, 512, false);
	CHECK(madvise(fc.base[0] + 400 * 4096, 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	while (ut_super_status(&srv, "removed ") < 32)
		;

	ut_server_stop(&srv);
	ut_server_restart(&srv, NULL);
	check(&fc, 0, len[0] / 4096, true);
	return UT_PASS;
}
