// SPDX-License-Identifier: MIT
/* Description: Firecracker-style clients killed with SIGKILL while ufault-serve --prefetch copies their working set cost the server nothing (its fds come back, a new client gets the right bytes), and the server exits on SIGTERM, SIGTERM while a set is being copied */
#include "serve-test.h"
#include "ws-test.h"

#define SRC_SIZE	(32UL << 20)
#define NSET		4096
#define ROUNDS		12

/* A record of NSET pages of @src scattered in a random order. */
static void make_record(const char *src, const char *rec)
{
	static uint64_t pages[NSET];
	uint64_t x = 12345;
	size_t i;

	for (i = 0; i < NSET; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		pages[i] = (x >> 33) % (SRC_SIZE / 4096);
	}
	CHECK(ws_record_pages(src, SRC_SIZE, rec, pages, NSET) > NSET / 2, "record_stop");
}

/* A client: handshake, tell the parent, touch pages until killed. */
static void client(const char *sock, int wfd)
{
	const size_t len[1] = { SRC_SIZE };
	const uint64_t off[1] = { 0 };
	struct ut_fc fc;
	uint64_t x = (uint64_t)getpid();

	ut_fc_map(&fc, 1, len, off);
	if (fc.uffd < 0)
		_exit(UT_SKIP);
	ut_fc_handshake(&fc, sock);
	if (write(wfd, "x", 1) != 1)
		_exit(1);
	for (;;) {
		size_t pg;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		pg = (size_t)(x >> 33) % (len[0] / 4096);
		if ((unsigned char)fc.base[0][pg * 4096] != ut_pattern(pg * 4096))
			_exit(1);
		usleep(100);
	}
}

static pid_t spawn(const char *sock)
{
	int p[2], st;
	pid_t pid;
	char c;

	CHECK(pipe(p) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(p[0]);
		client(sock, p[1]);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		if (WIFEXITED(st) && WEXITSTATUS(st) == UT_SKIP)
			exit(UT_SKIP);
		CHECK(0, "client failed before its kill: status %#x", st);
	}
	close(p[0]);
	return pid;
}

int main(void)
{
	const size_t len[1] = { 4 << 20 };
	const uint64_t off[1] = { 8 << 20 };
	char dir[64], src[128], rec[160];
	const char *opts[3] = { "--prefetch", rec, NULL };
	struct ut_server srv;
	struct ut_fc fc;
	int base, r, st, fd;
	pid_t pid;

	ut_watchdog(150);
	snprintf(dir, sizeof(dir), "/tmp/ufault-wsserve-XXXXXX");
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	fd = ut_make_file("/dev/shm", SRC_SIZE, src, sizeof(src));
	close(fd);
	snprintf(rec, sizeof(rec), "%s/ws", dir);
	make_record(src, rec);
	ut_server_source = src;
	ut_server_start(&srv, 4096, opts);
	ut_server_log_wait(&srv, "closed before the handshake");
	base = ut_server_fds(&srv);

	for (r = 0; r < ROUNDS; r++) {
		pid = spawn(srv.sock);
		ut_client_kill(pid, (useconds_t)(r * 1597 % 20000), r);	/* in the copy */
	}
	/* each death noticed, each push ended */
	ut_server_serves_after(&srv, base, len, off, &fc);

	/* SIGTERM waits for the clients; a second one exits while a set is
	 * being copied into a live client */
	pid = spawn(srv.sock);
	CHECK(kill(srv.pid, SIGTERM) == 0, "kill");
	ut_server_log_wait(&srv, "no new clients");
	CHECK(kill(srv.pid, SIGTERM) == 0, "kill");
	CHECK(waitpid(srv.pid, &st, 0) == srv.pid, "waitpid server");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: status %#x", st);
	srv.pid = 0;
	ut_server_atexit.pid = 0;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(fc.sock);
	close(fc.uffd);
	unlink(rec);
	unlink(src);
	rmdir(dir);
	return UT_PASS;
}
