// SPDX-License-Identifier: MIT
/* Description: two ufault clients (processes) of one ufault-serve object see each other's writes through their shared mappings at once, read SOURCE's bytes, and a page one client cached is mapped in the other with no fault (served while the server is stopped) */
#include "attach-test.h"

#define SIZE	(8 << 20)
#define PG	4096

/* Words: 1 = write your page, 2 = check the other's, 3 = read the
 * cached run, 0 = done.  The client answers each with 0 or an error. */
static void client(int in, int out, void *arg)
{
	const char *sock = arg;
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, sock, O_RDWR);
	volatile unsigned char *p;
	long w;

	ut_watchdog(60);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	CHECK(p[3 * PG + 5] == ut_pattern(3 * PG + 5), "SOURCE's byte");
	ut_say(out, getpid());
	while ((w = ut_hear(in)) > 0) {
		long ok = 0, k = ut_hear(in);
		size_t i;

		switch (w) {
		case 1:		/* write byte 0xA0 + k over page 100 + k */
			memset((void *)(p + (100 + k) * PG), (int)(0xA0 + k), PG);
			break;
		case 2:		/* page 100 + k shows the other's bytes */
			for (i = 0; i < PG; i++)
				if (p[(100 + k) * PG + i] != 0xA0 + k)
					ok = 1;
			break;
		case 3:		/* read pages [512, 512 + k): the pattern */
			for (i = 512 * PG; i < (512 + (size_t)k) * PG; i += 512)
				if (p[i] != ut_pattern(i))
					ok = 1;
			break;
		}
		ut_say(out, ok);
	}
	CHECK_RET(uf_munmap(mm, (void *)p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ut_server srv;
	struct ut_client a, b;
	int ra, rb;

	/* the clients first: no thread of the test's may be there at a fork
	 * (ThreadSanitizer) */
	ut_server_start(&srv, SIZE, NULL);
	ut_client_start(&a, client, srv.sock);
	ut_client_start(&b, client, srv.sock);
	ut_watchdog(120);
	if (ut_hear(a.from) < 0 || ut_hear(b.from) < 0) {
		ra = ut_client_wait(&a);
		rb = ut_client_wait(&b);
		if (ra == UT_SKIP || rb == UT_SKIP)
			return UT_SKIP;
		CHECK(0, "a client failed to start: %d %d", ra, rb);
	}
	/* each writes, the other sees it at once (no sync in between) */
	CHECK_RET(ut_ask(&a, 1, 0), 0);
	CHECK_RET(ut_ask(&b, 2, 0), 0);
	CHECK_RET(ut_ask(&b, 1, 1), 0);
	CHECK_RET(ut_ask(&a, 2, 1), 0);
	/* A brings 64 pages into the cache; with the server stopped, B maps
	 * them: no fault reaches the server (one would hang B: watchdog) */
	CHECK_RET(ut_ask(&a, 3, 64), 0);
	CHECK(kill(srv.pid, SIGSTOP) == 0, "SIGSTOP: %s", strerror(errno));
	CHECK_RET(ut_ask(&b, 3, 64), 0);
	CHECK(kill(srv.pid, SIGCONT) == 0, "SIGCONT: %s", strerror(errno));
	ut_say(a.to, 0);
	ut_say(b.to, 0);
	CHECK_RET(ut_client_wait(&a), 0);
	CHECK_RET(ut_client_wait(&b), 0);
	return UT_PASS;
}
