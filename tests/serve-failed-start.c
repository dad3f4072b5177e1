// SPDX-License-Identifier: MIT
/* Description: a ufault-serve that cannot start (a --pidfile it cannot write, checked before anything starts; a --record it cannot make, found once the supervisor runs) exits non-zero leaving no process, no SOCKET, no SOCKET.ctl and no pidfile, and a retry on the same SOCKET with another SOURCE serves */
#include "serve-test.h"

#include <sys/stat.h>

/* Nothing of the failed server is left: no file, no process (this test
 * is a child subreaper: a supervisor left running would be its child;
 * one that exits is reaped here, at once, before the watchdog). */
static void nothing_left(struct ut_server *s, const char *what)
{
	char ctl[160];
	struct stat st;
	int status;
	pid_t p;

	snprintf(ctl, sizeof(ctl), "%s.ctl", s->sock);
	CHECK(lstat(s->sock, &st) < 0 && errno == ENOENT, "%s: SOCKET left behind", what);
	CHECK(lstat(ctl, &st) < 0 && errno == ENOENT, "%s: SOCKET.ctl left behind", what);
	while ((p = waitpid(-1, &status, 0)) > 0)
		fprintf(stderr, "%s: pid %d reaped after the server exited\n", what, (int)p);
	CHECK(errno == ECHILD, "waitpid: %s", strerror(errno));
}

int main(void)
{
	const char *bad_pid[] = { "--orphan-timeout", "600", "--pidfile", NULL, NULL };
	const char *bad_rec[] = { "--orphan-timeout", "600", "--record", NULL, NULL };
	const char *good[] = { "--pidfile", NULL, NULL };
	char nodir[192], pidfile[192], src2[128], log[1 << 16];
	struct ut_server srv;
	struct ut_fc fc;
	const size_t len = 64 << 10;
	const uint64_t off = 0;
	struct stat st;
	int status, fd;

	ut_watchdog(60);
	/* a server that starts: its files, then stop it to set up the next */
	ut_server_start(&srv, 1 << 20, NULL);
	ut_server_stop(&srv);
	ut_super_stop(&srv);
	unlink(srv.sock);
	snprintf(nodir, sizeof(nodir), "%s/no/such/dir/pid", srv.dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", srv.dir);
	{
		char ctl[160];

		snprintf(ctl, sizeof(ctl), "%s.ctl", srv.sock);
		unlink(ctl);
	}

	bad_pid[3] = nodir;
	status = ut_server_second(&srv, bad_pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 0, "bad --pidfile: status %#x", status);
	nothing_left(&srv, "bad --pidfile");
	ut_server_log_read(&srv, log, sizeof(log));
	CHECK(strstr(log, "no/such/dir/pid"), "the log does not name the pidfile: %s", log);

	bad_rec[3] = nodir;
	status = ut_server_second(&srv, bad_rec);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 0, "bad --record: status %#x", status);
	nothing_left(&srv, "bad --record");

	/* the retry, with another SOURCE: served, and its pidfile written */
	fd = ut_make_file("/dev/shm", 1 << 20, src2, sizeof(src2));
	close(fd);
	unlink(srv.src);
	memcpy(srv.src, src2, sizeof(srv.src));
	good[1] = pidfile;
	ut_server_restart(&srv, good);
	CHECK(stat(pidfile, &st) == 0, "%s: %s", pidfile, strerror(errno));
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	ut_server_stop(&srv);
	ut_super_stop(&srv);
	unlink(pidfile);
	return UT_PASS;
}
