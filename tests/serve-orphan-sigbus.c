// SPDX-License-Identifier: MIT
/* Description: ufault-serve killed with SIGKILL and no new server within --orphan-timeout: the Firecracker-style client's next access to a page it never received gets SIGBUS, as does a thread already waiting in a fault -- never zeros, never a hang; pages it had read stay, a range its balloon removed reads zeros, and SOCKET is gone until a new server makes it again */
#include "serve-test.h"

#include <pthread.h>

struct toucher {
	const volatile char *p;
	int sig;
};

static void *touch(void *arg)
{
	struct toucher *t = arg;
	struct ut_fault f;
	unsigned char v;

	t->sig = ut_read(t->p, &v, &f);
	return NULL;
}

int main(void)
{
	static const char *const opts[] = { "--orphan-timeout", "2", NULL };
	const size_t len[1] = { 1 << 20 };
	const uint64_t off[1] = { 0 };
	struct toucher t = { 0 };
	struct ut_server srv;
	struct ut_fault f;
	struct ut_fc fc, fc2;
	unsigned char v;
	unsigned char vec[256];
	size_t pg, n, miss[4];
	pthread_t th;

	ut_watchdog(60);
	ut_catch_signals();
	ut_server_start(&srv, 2 << 20, opts);
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	/* pages 0-63 in a scattered order (37 is prime to 64): no stream
	 * for the server to run ahead of, past what the client reads */
	for (n = 0; n < 64; n++) {
		pg = n * 37 % 64;
		CHECK((unsigned char)fc.base[0][pg * 4096] == ut_pattern(pg * 4096), "page %zu", pg);
	}
	CHECK(madvise(fc.base[0], 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	CHECK(madvise(fc.base[0] + 64 * 4096, 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	while (ut_super_status(&srv, "removed ") < 32)
		;

	ut_server_stop(&srv);
	/* four pages past 80 it never received (the run-ahead may have
	 * copied some past what it read, before the kill) */
	CHECK(mincore(fc.base[0], len[0], vec) == 0, "mincore");
	for (pg = 80, n = 0; pg < 256 && n < 4; pg++)
		if (!(vec[pg] & 1))
			miss[n++] = pg;
	CHECK(n == 4, "only %zu pages past 80 missing", n);
	t.p = fc.base[0] + miss[1] * 4096;
	CHECK(pthread_create(&th, NULL, touch, &t) == 0, "pthread_create");
	CHECK(ut_read(fc.base[0] + miss[0] * 4096 + 7, &v, &f) == SIGBUS, "page %zu: %d (%u)",
	      miss[0], f.sig, v);
	CHECK(f.addr == fc.base[0] + miss[0] * 4096 + 7, "si_addr %p", f.addr);
	pthread_join(th, NULL);
	CHECK(t.sig == SIGBUS, "the waiting thread: %d", t.sig);
	CHECK(ut_read(fc.base[0] + miss[2] * 4096, &v, &f) == SIGBUS, "page %zu: %d", miss[2], f.sig);

	for (pg = 0; pg < 80; pg++) {
		CHECK(ut_read(fc.base[0] + pg * 4096 + 1, &v, &f) == 0, "page %zu: %d", pg, f.sig);
		CHECK(v == (pg < 16 || pg >= 64 ? 0 : ut_pattern(pg * 4096 + 1)), "page %zu: %u", pg, v);
	}
	ut_server_log_wait(&srv, "SIGBUS from now on");
	CHECK(ut_connect(srv.sock) < 0, "SOCKET still takes clients");

	/* a server after that serves new clients; the old one stays failed */
	ut_server_restart(&srv, opts);
	ut_fc_map(&fc2, 1, len, off);
	ut_fc_handshake(&fc2, srv.sock);
	ut_fc_check(&fc2, 0, 1);
	CHECK(ut_read(fc.base[0] + miss[3] * 4096, &v, &f) == SIGBUS, "page %zu: %d", miss[3], f.sig);
	return UT_PASS;
}
