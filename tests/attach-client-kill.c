// SPDX-License-Identifier: MIT
/* Description: ufault clients killed with SIGKILL mid-use (faulting, writing) and mid-handshake cost ufault-serve nothing: its fds come back to where they were, and another client goes on being served the right bytes */
#include "attach-test.h"

#define SIZE	(16 << 20)
#define PG	4096
#define ROUNDS	10

/* Touch pages at random for ever (reads, and writes to its own page). */
static void toucher(int in, int out, void *arg)
{
	const char *sock = arg;
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, sock, O_RDWR);
	volatile unsigned char *p;
	uint64_t x = (uint64_t)getpid();

	(void)in;
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	CHECK(p[0] == ut_pattern(0), "first page");
	ut_say(out, 0);
	for (;;) {
		size_t pg;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		pg = (size_t)(x >> 33) % (SIZE / PG);
		if (pg == 1)
			p[pg * PG] = 0x77;
		else if (p[pg * PG + 3] != ut_pattern(pg * PG + 3))
			_exit(1);
	}
}

/* Connect and send half a hello, then wait to be killed. */
static void half(int in, int out, void *arg)
{
	int fd = ut_connect(arg);

	(void)in;
	CHECK(fd >= 0, "connect");
	CHECK(write(fd, "UFATT", 5) == 5, "write");
	ut_say(out, 0);
	pause();
}

int main(void)
{
	struct ut_server srv;
	struct ut_client c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	int base, r, i;

	ut_watchdog(150);
	ut_server_start(&srv, SIZE, NULL);
	usleep(100 * 1000);
	base = ut_server_fd_count(&srv, true);
	for (r = 0; r < ROUNDS; r++) {
		ut_client_start(&c, r % 3 == 2 ? half : toucher, srv.sock);
		if (ut_hear(c.from) < 0)
			return ut_client_wait(&c) == UT_SKIP ? UT_SKIP : UT_FAIL;
		usleep((useconds_t)(r * 7000));
		kill(c.pid, SIGKILL);
		CHECK_RET(ut_client_wait(&c), 128 + SIGKILL);
	}
	/* everything of theirs freed (the server closes as it notices) */
	while (ut_server_fd_count(&srv, true) != base)
		usleep(10 * 1000);
	/* and another client is served the right bytes */
	obj = ut_attach(&mm, srv.sock, O_RDONLY);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (i = 0; i < SIZE; i += 3 * PG + 17)
		if (i / PG != 1)
			CHECK(p[i] == ut_pattern(i), "byte %d", i);
	CHECK(p[PG] == 0x77 || p[PG] == ut_pattern(PG), "page 1");
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
