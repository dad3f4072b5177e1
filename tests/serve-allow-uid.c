// SPDX-License-Identifier: MIT
/* Description: --allow-uid and --allow-gid admit jailed VMMs as real other users: uid 65534 (--allow-uid), a user whose group (primary, or supplementary) is --allow-gid, and root and the server's own uid always, are served; SOCKET is mode 0666 so that they can connect; a user not allowed connects, is refused, and the log names its pid, uid and the reason */
#include "serve-test.h"

#include <grp.h>
#include <sys/stat.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* In a child: become @uid / @gid (with @sup as the one supplementary
 * group, or none), as a jailer would. */
static void become(uid_t uid, gid_t gid, gid_t sup)
{
	CHECK(setgroups(sup ? 1 : 0, &sup) == 0, "setgroups: %s", strerror(errno));
	CHECK(setgid(gid) == 0 && setuid(uid) == 0, "setuid: %s", strerror(errno));
	prctl(PR_SET_DUMPABLE, 1);
}

/* A Firecracker-style client as an unprivileged user: its userfaultfd is
 * user-mode-only (vm.unprivileged_userfaultfd is 0 here). */
static void fc_map_user(struct ut_fc *fc, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

	memset(fc, 0, sizeof(*fc));
	fc->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	CHECK(fc->uffd >= 0, "userfaultfd as uid %u: %s", (unsigned)getuid(), strerror(errno));
	CHECK(ioctl(fc->uffd, UFFDIO_API, &api) == 0, "UFFDIO_API: %s", strerror(errno));
	fc->n = 1;
	fc->base[0] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(fc->base[0] != MAP_FAILED, "mmap");
	fc->len[0] = len;
	reg.range.start = (unsigned long)fc->base[0];
	reg.range.len = len;
	CHECK(ioctl(fc->uffd, UFFDIO_REGISTER, &reg) == 0, "UFFDIO_REGISTER: %s", strerror(errno));
}

/* A child as @uid/@gid/@sup: served (its bytes read back), or, with
 * !@allowed, refused: it sends its handshake and waits for the server's
 * log line naming it. */
static void client(struct ut_server *srv, uid_t uid, gid_t gid, gid_t sup, bool allowed)
{
	char want[96];
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct ut_fc fc;

		become(uid, gid, sup);
		fc_map_user(&fc, 256 << 10);
		if (allowed) {
			ut_fc_handshake(&fc, srv->sock);
			ut_fc_check(&fc, 0, 1);
		} else {
			/* it connects (and may find the connection closed
			 * before its handshake is sent: EPIPE) */
			int s = ut_connect(srv->sock);

			CHECK(s >= 0, "connect as uid %u: %s", (unsigned)uid, strerror(errno));
			if (send(s, "[", 1, MSG_NOSIGNAL) < 0)
				CHECK(errno == EPIPE || errno == ECONNRESET, "send: %s", strerror(errno));
		}
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "client uid %u gid %u: status %#x", (unsigned)uid, (unsigned)gid, st);
	if (allowed) {
		snprintf(want, sizeof(want), "client pid %d: served", (int)pid);
		ut_server_log_wait(srv, want);
	} else {
		snprintf(want, sizeof(want), "client pid %d uid %u: refused: not allowed (uid %u gid %u",
			 (int)pid, (unsigned)uid, (unsigned)uid, (unsigned)gid);
		ut_server_log_wait(srv, want);
	}
}

int main(void)
{
	static const char *const opts[] = { "--allow-uid", "65534", "--allow-gid", "65531",
					    "--allow-uid", "65000", NULL };
	const size_t len = 256 << 10;
	const uint64_t off = 0;
	struct ut_server srv;
	struct ut_fc fc;
	struct stat st;

	ut_watchdog(60);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: no other user to be\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, 1 << 20, opts);
	CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
	CHECK(lstat(srv.sock, &st) == 0 && (st.st_mode & 0777) == 0666, "SOCKET: mode %o",
	      st.st_mode & 07777);

	/* root, always */
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);

	client(&srv, 65534, 65534, 0, true);		/* --allow-uid */
	client(&srv, 65532, 65531, 0, true);		/* --allow-gid, primary */
	client(&srv, 65530, 65530, 65531, true);	/* --allow-gid, supplementary */
	client(&srv, 65533, 65533, 65529, false);	/* none of them */
	return UT_PASS;
}
