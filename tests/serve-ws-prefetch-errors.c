// SPDX-License-Identifier: MIT
/* Description: ufault-serve --prefetch with no file, a file that is no working set, or a record of another version of SOURCE logs why and serves its Firecracker clients lazily, with the right bytes */
#include "serve-test.h"
#include "ws-test.h"

#include <sys/stat.h>

#define SRC_SIZE	(8UL << 20)

/* A record of pages of @src made in this process (the library's own). */
static void make_record(const char *src, const char *rec)
{
	uint64_t pages[64];
	size_t i;

	for (i = 0; i < 64; i++)
		pages[i] = i * 7;
	CHECK_RET(ws_record_pages(src, SRC_SIZE, rec, pages, 64), 64);
}

/* A server with --prefetch @rec: its log says @why, a client is served. */
static void serve_lazily(const char *rec, const char *why)
{
	const size_t len[1] = { 4 << 20 };
	const uint64_t off[1] = { 2 << 20 };
	const char *opts[3] = { "--prefetch", rec, NULL };
	struct ut_server srv;
	struct ut_fc fc;
	ut_server_start(&srv, 4096, opts);
	ut_server_log_wait(&srv, why);
	ut_server_log_wait(&srv, "clients are served lazily");
	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 3);
	ut_fc_check(&fc, 0, 1);
	close(fc.sock);
	close(fc.uffd);
	munmap(fc.base[0], len[0]);
	ut_server_stop(&srv);
}

int main(void)
{
	char dir[64], src[128], rec[160], junk[160];
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
	int fd, fd2;

	ut_watchdog(120);
	snprintf(dir, sizeof(dir), "/tmp/ufault-wsserve-XXXXXX");
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	fd = ut_make_file("/dev/shm", SRC_SIZE, src, sizeof(src));
	ut_server_source = src;
	snprintf(rec, sizeof(rec), "%s/ws", dir);
	snprintf(junk, sizeof(junk), "%s/junk", dir);

	/* no file */
	serve_lazily(rec, "No such file or directory");

	/* not a working set: text, then a record cut short */
	fd2 = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd2 >= 0 && write(fd2, "not a working set, but long enough to be read as a header\n",
				59) == 59, "write %s", junk);
	close(fd2);
	serve_lazily(junk, "not a working-set file");
	make_record(src, rec);
	CHECK(truncate(rec, 60) == 0, "truncate: %s", strerror(errno));
	serve_lazily(rec, "not a working-set file");

	/* a record of another version: SOURCE's mtime changed since */
	make_record(src, rec);
	CHECK(futimens(fd, ts) == 0, "futimens: %s", strerror(errno));
	serve_lazily(rec, "another version of SOURCE");

	close(fd);
	unlink(rec);
	unlink(junk);
	unlink(src);
	rmdir(dir);
	return UT_PASS;
}
