// SPDX-License-Identifier: MIT
/* Description: a VMM whose handshake ufault-serve refuses after its userfaultfd arrived (a region past SOURCE's end, a page size it does not serve, not JSON, a uid not allowed) gets SIGBUS at its faults, never a hang: the server keeps the userfaultfd and poisons each fault until the VMM's socket closes; the refusal and the first SIGBUS are logged with pid, uid and reason and counted in --stats, and a good VMM is still served */
#include "serve-test.h"

#include <grp.h>
#include <pthread.h>
#include <sys/stat.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

struct toucher {
	const volatile char *p;
	int sig;
};

static void *touch(void *arg)
{
	struct toucher *t = arg;
	struct ut_fault f;
	unsigned char v;

	t->sig = ut_read(t->p, &v, &f);
	return NULL;
}

/* Send @msg with @fc's userfaultfd; the server refuses it: its pages
 * (two threads, two pages) get SIGBUS; then its socket closes. */
static void refused(struct ut_server *srv, struct ut_fc *fc, const char *msg, const char *why)
{
	struct toucher t = { .p = fc->base[0] + 3 * 4096 };
	struct ut_fault f;
	unsigned char v;
	pthread_t th;
	char want[160];

	fc->sock = ut_send_handshake(srv->sock, msg, strlen(msg), fc->uffd);
	snprintf(want, sizeof(want), "client pid %d uid 0: refused: %s", (int)getpid(), why);
	ut_server_log_wait(srv, want);
	CHECK(pthread_create(&th, NULL, touch, &t) == 0, "pthread_create");
	CHECK(ut_read(fc->base[0] + 5 * 4096 + 9, &v, &f) == SIGBUS, "%s: read %u, signal %d", why,
	      v, f.sig);
	CHECK(f.addr == fc->base[0] + 5 * 4096 + 9, "si_addr %p", f.addr);
	pthread_join(th, NULL);
	CHECK(t.sig == SIGBUS, "%s: the other thread: signal %d", why, t.sig);
	close(fc->sock);
}

/* As uid 65534, which the server does not allow: its handshake either
 * never reaches the server (EPIPE: the connection was shut first) or
 * its faults get SIGBUS; never a hang. */
static void other_uid(struct ut_server *srv)
{
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
		char json[256], cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm;
		struct ut_fault f;
		unsigned char v;
		char *p;
		int uffd, s;

		CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0,
		      "setuid: %s", strerror(errno));
		prctl(PR_SET_DUMPABLE, 1);
		uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
		CHECK(uffd >= 0 && ioctl(uffd, UFFDIO_API, &api) == 0, "userfaultfd: %s",
		      strerror(errno));
		p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		reg.range.start = (unsigned long)p;
		reg.range.len = 1 << 16;
		CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0, "register: %s", strerror(errno));
		snprintf(json, sizeof(json),
			 "[{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":0,\"page_size\":4096}]",
			 (unsigned long)p);
		iov = (struct iovec){ json, strlen(json) };
		memset(cbuf, 0, sizeof(cbuf));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
		s = ut_connect(srv->sock);
		CHECK(s >= 0, "connect: %s", strerror(errno));
		if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0) {
			CHECK(errno == EPIPE || errno == ECONNRESET, "sendmsg: %s", strerror(errno));
			_exit(3);	/* never reached the server */
		}
		ut_catch_signals();
		CHECK(ut_read(p + 4096, &v, &f) == SIGBUS, "uid 65534: read %u, signal %d", v, f.sig);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 3), "uid 65534: status %#x", st);
	fprintf(stderr, "uid 65534: %s\n", WEXITSTATUS(st) ? "refused before its handshake"
							  : "SIGBUS after refusal");
}

int main(void)
{
	static const char *const opts[] = { "--allow-uid", "65533", "--stats", "1", NULL };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct ut_server srv;
	struct ut_fc fc;
	char msg[512], log[1 << 16];
	int base;

	ut_watchdog(90);
	ut_catch_signals();
	ut_server_start(&srv, 2 << 20, opts);
	base = ut_server_fds(&srv);

	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":1048576,\"offset\":1048576000,"
		 "\"page_size\":4096}]", (unsigned long)fc.base[0]);
	refused(&srv, &fc, msg, "a region past SOURCE's end");

	ut_fc_map(&fc, 1, &len, &off);
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":1048576,\"offset\":0,\"page_size\":8192}]",
		 (unsigned long)fc.base[0]);
	refused(&srv, &fc, msg, "region 0: page size 8192 not served");

	ut_fc_map(&fc, 1, &len, &off);
	refused(&srv, &fc, "GET / HTTP/1.0\r\n\r\n", "not a JSON array");

	if (geteuid() == 0) {
		CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
		other_uid(&srv);
	}

	/* the refused have gone: the server holds nothing of theirs */
	while (ut_server_fds(&srv) != base)
		usleep(10000);
	/* counted: a stats line with at least 3 failed closed, 6 SIGBUS */
	for (;;) {
		char *p, *q;
		unsigned long held = 0, bus = 0;

		ut_server_log_read(&srv, log, sizeof(log));
		q = strstr(log, "stats: ");
		for (p = q; p; p = strstr(p + 1, "stats: "))
			q = p;
		if (q && (p = strstr(q, "refused ")) && (p = strchr(p, '('))) {
			held = strtoul(p + 1, &p, 10);
			if ((p = strstr(p, "closed, ")))
				bus = strtoul(p + 8, NULL, 10);
		}
		if (held >= 3 && bus >= 6)
			break;
		usleep(100000);
	}
	CHECK(strstr(log, ": SIGBUS at "), "no SIGBUS logged:\n%s", log);

	ut_fc_map(&fc, 1, &len, &off);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	return UT_PASS;
}
