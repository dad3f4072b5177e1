// SPDX-License-Identifier: MIT
/* Description: a ufault client whose ufault-serve is killed (SIGKILL) and no new server comes within --orphan-timeout, or whose server and supervisor are both killed, or whose server exits (SIGINT), takes SIGBUS at its next access to a page the cache does not hold (after the wait: the access made while waiting too), never zeros and never a hang; pages cached before still read right, and calls to the server fail with -ENOTCONN */
#include "attach-test.h"

#include <pthread.h>

#define SIZE	(8 << 20)
#define PG	4096

struct reader {
	struct uf_object *obj;
	long ret;
};

/* A pread made while no server runs: it waits, then fails. */
static void *pread_thread(void *arg)
{
	struct reader *r = arg;
	char c;

	r->ret = uf_object_pread(r->obj, &c, 1, 5 * PG);
	return NULL;
}

static void run(int sig, const char *const *opts, bool super_too)
{
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p, v;
	struct ut_fault f;
	struct reader rd;
	pthread_t th;
	char c;
	int i, st;

	ut_server_start(&srv, SIZE, opts);
	obj = ut_attach(&mm, srv.sock, O_RDWR);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (i = 0; i < 16; i++)
		CHECK(p[i * PG] == ut_pattern(i * PG), "page %d before", i);
	p[PG + 1] = 0xEE;

	CHECK(kill(srv.pid, sig) == 0, "kill: %s", strerror(errno));
	CHECK(waitpid(srv.pid, &st, 0) == srv.pid, "waitpid: %s", strerror(errno));
	srv.pid = 0;
	ut_server_atexit.pid = 0;
	if (super_too)
		ut_super_stop(&srv);	/* nobody keeps SOCKET: no wait */
	rd.obj = obj;
	CHECK(pthread_create(&th, NULL, pread_thread, &rd) == 0, "pthread_create");

	/* the cache is ours still: what it holds reads right */
	CHECK(p[PG + 1] == 0xEE, "a written page");
	CHECK(p[3 * PG + 9] == ut_pattern(3 * PG + 9), "a cached page");
	/* holes: SIGBUS, each time, far and near (readahead may have brought
	 * the next window in: go well past it); after SIGKILL the first
	 * waits for a next server until --orphan-timeout */
	for (i = 0; i < 3; i++) {
		size_t off = SIZE - PG - (size_t)i * 64 * PG;

		CHECK_RET(ut_read(p + off, &v, &f), SIGBUS);
		CHECK(f.addr == p + off, "si_addr %p, want %p", f.addr, (void *)(p + off));
		CHECK_RET(ut_write(p + off, 1, &f), SIGBUS);
	}
	pthread_join(th, NULL);
	CHECK_RET(rd.ret, -ENOTCONN);
	CHECK_RET(uf_object_pread(obj, &c, 1, 0), -ENOTCONN);
	CHECK_RET(uf_object_sync(obj), -ENOTCONN);
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	CHECK_RET(uf_mmap(mm, PG, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), -ENOTCONN);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	ut_watchdog(120);
	ut_catch_signals();
	static const char *const orphan[] = { "--orphan-timeout", "1", NULL };

	run(SIGKILL, orphan, false);
	/* the supervisor killed too (the default --orphan-timeout: what ends
	 * the wait is SOCKET with nobody listening) */
	run(SIGKILL, NULL, true);
	/* an orderly exit (SIGINT: at once, clients left to SIGBUS) */
	run(SIGINT, NULL, false);
	return UT_PASS;
}
