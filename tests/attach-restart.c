// SPDX-License-Identifier: MIT
/* Description: ufault-serve killed with SIGKILL and started again on the same SOCKET and SOURCE (twice, the second under a cache budget): its ufault clients (O_RDONLY and O_RDWR) go on without restarting -- pages cached before read right, pages never cached are faulted in from the new server (a fault and a pread made while no server ran wait and complete), and a shared write and a pwrite made before the kill reach SOURCE at a sync after the restart */
#include "attach-test.h"

#define SIZE	(8 << 20)
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

enum { READ = 1, WRITE, SYNC, PREAD, PWRITE, CHECK_ALL, WRITE20 };

struct cl_arg {
	const char *sock;
	int oflags;
};

/* READ k: byte 1 of page k through the mapping; WRITE k: 0x5A + k over
 * page k; SYNC: uf_object_sync; PREAD k: byte 3 of page k by
 * uf_object_pread; PWRITE k: 0xC3 at byte 5 of page k; WRITE20 k: k over
 * page 20; CHECK_ALL k: every page against SOURCE's pattern (page 20
 * holding k, page 30 the pwrite), the number of pages wrong. */
static void client(int in, int out, void *argp)
{
	const struct cl_arg *arg = argp;
	bool rw = arg->oflags == O_RDWR;
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, arg->sock, arg->oflags);
	unsigned char *p, c;
	long w;

	ut_watchdog(120);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | (rw ? PROT_WRITE : 0), UF_MAP_SHARED, obj, 0,
			  (void **)&p), 0);
	ut_say(out, 0);
	while ((w = ut_hear(in)) > 0) {
		long k = ut_hear(in), ret = 0, pg;

		switch (w) {
		case READ:
			ret = p[k * PG + 1];
			break;
		case WRITE:
			memset(p + k * PG, (int)(0x5A + k), PG);
			break;
		case WRITE20:
			memset(p + 20 * PG, (int)k, PG);
			break;
		case SYNC:
			ret = uf_object_sync(obj);
			break;
		case PREAD:
			ret = uf_object_pread(obj, &c, 1, (uint64_t)k * PG + 3);
			ret = ret == 1 ? c : ret < 0 ? ret : -1000;
			break;
		case PWRITE:
			c = 0xC3;
			ret = uf_object_pwrite(obj, &c, 1, (uint64_t)k * PG + 5);
			break;
		case CHECK_ALL:
			for (pg = 0; pg < SIZE / PG; pg++) {
				unsigned char want = pg == 20 ? (unsigned char)k : ut_pattern(pg * PG + 9);

				ret += p[pg * PG + 9] != want;
				if (pg == 30)
					ret += p[pg * PG + 5] != 0xC3;
			}
			break;
		}
		ut_say(out, ret);
	}
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void kill_server(struct ut_server *srv)
{
	int st;

	CHECK(kill(srv->pid, SIGKILL) == 0, "kill: %s", strerror(errno));
	CHECK(waitpid(srv->pid, &st, 0) == srv->pid, "waitpid: %s", strerror(errno));
	srv->pid = 0;
	ut_server_atexit.pid = 0;
}

int main(void)
{
	static const char *const budget[] = { "--budget", "2M", NULL };
	struct ut_server srv;
	struct ut_client r, w;
	struct cl_arg ra, wa;
	int st, i;

	ut_server_start(&srv, SIZE, NULL);
	ra = (struct cl_arg){ srv.sock, O_RDONLY };
	wa = (struct cl_arg){ srv.sock, O_RDWR };
	/* the clients first: no thread of the test's may be there at a fork
	 * (ThreadSanitizer) */
	ut_client_start(&r, client, &ra);
	ut_client_start(&w, client, &wa);
	ut_watchdog(120);
	if (ut_hear(r.from) < 0 || ut_hear(w.from) < 0) {
		st = ut_client_wait(&r);
		return st == UT_SKIP ? UT_SKIP : UT_FAIL;
	}
	/* cached before the kill: pages 0-15, and W's writes */
	for (i = 0; i < 16; i++)
		CHECK_RET(ut_ask(&r, READ, i), ut_pattern((uint64_t)i * PG + 1));
	CHECK_RET(ut_ask(&w, WRITE, 20), 0);
	CHECK_RET(ut_ask(&w, PWRITE, 30), 1);
	CHECK(file_byte(srv.src, 20 * PG + 1) == ut_pattern(20 * PG + 1), "written before a sync");

	kill_server(&srv);
	/* what the cache holds reads right with no server */
	CHECK_RET(ut_ask(&r, READ, 5), ut_pattern(5 * PG + 1));
	CHECK_RET(ut_ask(&r, READ, 20), 0x5A + 20);
	/* a fault and a pread with no server: they wait */
	ut_say(r.to, READ);
	ut_say(r.to, 1800);
	ut_say(w.to, PREAD);
	ut_say(w.to, 1500);
	usleep(100000);

	ut_server_restart(&srv, NULL);
	ut_server_log_wait(&srv, "pages adopted");
	CHECK_RET(ut_hear(r.from), ut_pattern(1800 * PG + 1));
	CHECK_RET(ut_hear(w.from), ut_pattern(1500 * PG + 3));
	/* the shared write and the pwrite made before the kill reach SOURCE */
	CHECK_RET(ut_ask(&w, SYNC, 0), 0);
	CHECK(file_byte(srv.src, 20 * PG + 100) == 0x5A + 20, "a shared write lost");
	CHECK(file_byte(srv.src, 30 * PG + 5) == 0xC3, "a pwrite lost");
	/* every page, both clients, faulted from the new server */
	CHECK_RET(ut_ask(&r, CHECK_ALL, 0x5A + 20), 0);
	CHECK_RET(ut_ask(&w, CHECK_ALL, 0x5A + 20), 0);

	/* and once more, the next server under a cache budget a quarter of
	 * the adopted cache: what it evicts is written back first, and read
	 * again from SOURCE */
	CHECK_RET(ut_ask(&w, WRITE20, 0x77), 0);
	kill_server(&srv);
	ut_server_restart(&srv, budget);
	CHECK_RET(ut_ask(&r, PREAD, 2047), ut_pattern(2047 * PG + 3));
	CHECK_RET(ut_ask(&r, CHECK_ALL, 0x77), 0);
	CHECK_RET(ut_ask(&w, CHECK_ALL, 0x77), 0);
	CHECK_RET(ut_ask(&r, READ, 20), 0x77);
	CHECK_RET(ut_ask(&w, SYNC, 0), 0);
	CHECK(file_byte(srv.src, 20 * PG + 7) == 0x77, "a shared write lost");

	ut_say(r.to, 0);
	ut_say(w.to, 0);
	CHECK_RET(ut_client_wait(&r), 0);
	CHECK_RET(ut_client_wait(&w), 0);
	return UT_PASS;
}
