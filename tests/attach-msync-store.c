// SPDX-License-Identifier: MIT
/* Description: what a ufault client writes through its shared mapping of an attached object reaches SOURCE (read with plain pread) at its uf_msync(), at another client's uf_object_sync(), and at the server's own sync when it exits */
#include "attach-test.h"

#define SIZE	(4 << 20)
#define PG	4096

static unsigned char file_byte(const char *path, uint64_t off)
{
	int fd = open(path, O_RDONLY);
	unsigned char c = 0;

	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	CHECK(pread(fd, &c, 1, (off_t)off) == 1, "pread: %s", strerror(errno));
	close(fd);
	return c;
}

/* 1 k: write 0x5A + k over page k and uf_msync it; 2 k: write page k,
 * no sync; 3: uf_object_sync; 0: done. */
static void client(int in, int out, void *arg)
{
	const char *sock = arg;
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, sock, O_RDWR);
	unsigned char *p;
	long w;

	ut_watchdog(60);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	ut_say(out, 0);
	while ((w = ut_hear(in)) > 0) {
		long k = ut_hear(in), ret = 0;

		if (w == 1 || w == 2)
			memset(p + k * PG, (int)(0x5A + k), PG);
		if (w == 1)
			ret = uf_msync(mm, p + k * PG, PG, UF_MS_SYNC);
		if (w == 3)
			ret = uf_object_sync(obj);
		ut_say(out, ret);
	}
	/* unsynced writes stay in the cache: the server's sync has them */
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ut_server srv;
	struct ut_client a, b;
	int st;

	/* the clients first: no thread of the test's may be there at a fork
	 * (ThreadSanitizer) */
	ut_server_start(&srv, SIZE, NULL);
	ut_client_start(&a, client, srv.sock);
	ut_client_start(&b, client, srv.sock);
	ut_watchdog(120);
	if (ut_hear(a.from) < 0 || ut_hear(b.from) < 0) {
		st = ut_client_wait(&a);
		return st == UT_SKIP ? UT_SKIP : UT_FAIL;
	}
	CHECK(file_byte(srv.src, 7 * PG) == ut_pattern(7 * PG), "SOURCE before");
	/* a client's uf_msync */
	CHECK_RET(ut_ask(&a, 1, 7), 0);
	CHECK(file_byte(srv.src, 7 * PG + 100) == 0x5A + 7, "msync'ed page not in SOURCE");
	/* written by A, synced by B's uf_object_sync */
	CHECK_RET(ut_ask(&a, 2, 9), 0);
	CHECK_RET(ut_ask(&b, 3, 0), 0);
	CHECK(file_byte(srv.src, 9 * PG + 5) == 0x5A + 9, "A's page not in SOURCE after B's sync");
	/* written, never synced by a client: the server's sync at exit */
	CHECK_RET(ut_ask(&b, 2, 11), 0);
	ut_say(a.to, 0);
	ut_say(b.to, 0);
	CHECK_RET(ut_client_wait(&a), 0);
	CHECK_RET(ut_client_wait(&b), 0);
	CHECK(kill(srv.pid, SIGTERM) == 0, "SIGTERM: %s", strerror(errno));
	CHECK(waitpid(srv.pid, &st, 0) == srv.pid, "waitpid: %s", strerror(errno));
	srv.pid = 0;
	ut_server_atexit.pid = 0;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server exit status %d", st);
	CHECK(file_byte(srv.src, 11 * PG + 1) == 0x5A + 11, "B's unsynced page not in SOURCE");
	CHECK(file_byte(srv.src, 12 * PG + 1) == ut_pattern(12 * PG + 1), "a page nobody wrote");
	return UT_PASS;
}
