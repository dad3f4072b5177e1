// SPDX-License-Identifier: MIT
/* Description: ufault-serve makes SOCKET and SOCKET.ctl without following a symlink and without replacing anything but a stale socket of its own user: a regular file, a symlink, or another user's socket at either path stops the start with a log line and is left as it was; the sockets it makes have the mode it chose (0600 with no --allow-uid), and a stale socket of its own is replaced */
#include "serve-test.h"

#include <sys/stat.h>

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "%s: %s", path,
	      strerror(errno));
	close(fd);
}

static void check_file(const char *path, const char *text, mode_t mode)
{
	char buf[64] = { 0 };
	struct stat st;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) >= 0, "%s: %s", path, strerror(errno));
	close(fd);
	CHECK(!strcmp(buf, text), "%s now holds \"%s\"", path, buf);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == mode, "%s: mode %o", path,
	      st.st_mode & 07777);
}

/* A socket bound at @path and closed: stale, owned by @uid. */
static void stale_socket(const char *path, uid_t uid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind %s: %s", path,
	      strerror(errno));
	close(fd);
	CHECK(lchown(path, uid, uid) == 0, "lchown: %s", strerror(errno));
}

/* Starting fails, and the log says why. */
static void refused(struct ut_server *srv, const char *what, const char *logged)
{
	char log[1 << 16];
	int st = ut_server_second(srv, NULL);

	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s: the server started (status %#x)", what,
	      st);
	ut_server_log_read(srv, log, sizeof(log));
	CHECK(strstr(log, logged), "%s: the log does not say \"%s\":\n%s", what, logged, log);
}

int main(void)
{
	char ctl[160], target[160], log[1 << 16];
	const size_t len = 64 << 10;
	const uint64_t off = 0;
	struct ut_server srv;
	struct ut_fc fc;
	struct stat st;

	ut_watchdog(60);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: cannot make another user's socket\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, 1 << 20, NULL);
	snprintf(ctl, sizeof(ctl), "%s.ctl", srv.sock);
	snprintf(target, sizeof(target), "%s/target", srv.dir);
	CHECK(lstat(srv.sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
	      "SOCKET: mode %o", st.st_mode & 07777);
	CHECK(lstat(ctl, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
	      "SOCKET.ctl: mode %o", st.st_mode & 07777);
	ut_server_stop(&srv);
	ut_super_stop(&srv);
	unlink(srv.sock);
	unlink(ctl);

	/* a regular file at SOCKET.ctl: not removed, not replaced */
	write_file(ctl, "mine\n");
	refused(&srv, "a file at SOCKET.ctl", "not a socket");
	check_file(ctl, "mine\n", 0644);
	CHECK(lstat(srv.sock, &st) < 0, "SOCKET made though the start failed");
	unlink(ctl);

	/* a symlink at either path: the file it names is left alone */
	write_file(target, "target\n");
	CHECK(symlink(target, ctl) == 0, "symlink: %s", strerror(errno));
	refused(&srv, "a symlink at SOCKET.ctl", "not a socket");
	check_file(target, "target\n", 0644);
	CHECK(lstat(ctl, &st) == 0 && S_ISLNK(st.st_mode), "the symlink at SOCKET.ctl went");
	unlink(ctl);
	CHECK(symlink(target, srv.sock) == 0, "symlink: %s", strerror(errno));
	refused(&srv, "a symlink at SOCKET", "not a socket");
	check_file(target, "target\n", 0644);
	CHECK(lstat(srv.sock, &st) == 0 && S_ISLNK(st.st_mode), "the symlink at SOCKET went");
	unlink(srv.sock);

	/* another user's stale sockets: left there */
	stale_socket(ctl, 65534);
	refused(&srv, "another user's SOCKET.ctl", "another user's");
	CHECK(lstat(ctl, &st) == 0 && st.st_uid == 65534, "another user's SOCKET.ctl replaced");
	unlink(ctl);
	stale_socket(srv.sock, 65534);
	refused(&srv, "another user's SOCKET", "another user's");
	CHECK(lstat(srv.sock, &st) == 0 && st.st_uid == 65534, "another user's SOCKET replaced");
	unlink(srv.sock);

	/* stale sockets of its own: replaced, and served */
	stale_socket(ctl, geteuid());
	stale_socket(srv.sock, geteuid());
	ut_server_restart(&srv, NULL);
	ut_server_log_read(&srv, log, sizeof(log));
	CHECK(strstr(log, "replaced a stale socket"), "%s", log);
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	unlink(target);
	return UT_PASS;
}
