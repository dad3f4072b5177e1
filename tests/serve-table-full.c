// SPDX-License-Identifier: MIT
/* Description: with the server's table of 1024 clients full of idle connections, the next VMM is not left in the listen queue: it is refused with a log line naming its pid, uid and the reason, and fails closed (EPIPE at its handshake, or SIGBUS at its first touch, never a hang); a ufault client there is told -EAGAIN; once the idle connections go, a VMM is served again */
#include "serve-test.h"

#include <sys/resource.h>

#define TABLE	1024

/* A userfaultfd, 1 MiB registered at *@p, and the JSON for it. */
static int uffd_map(char **p, char *json, size_t cap)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	CHECK(uffd >= 0 && ioctl(uffd, UFFDIO_API, &api) == 0, "userfaultfd: %s", strerror(errno));
	*p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(*p != MAP_FAILED, "mmap");
	reg.range.start = (unsigned long)*p;
	reg.range.len = 1 << 20;
	CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0, "register: %s", strerror(errno));
	snprintf(json, cap,
		 "[{\"base_host_virt_addr\":%lu,\"size\":1048576,\"offset\":0,\"page_size\":4096}]",
		 (unsigned long)*p);
	return uffd;
}

/* sendmsg @json with @uffd on a new connection; -1: EPIPE (refused
 * before it was read), else the socket. */
static int send_uffd(const char *sock, const char *json, int uffd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)json, strlen(json) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int s = ut_connect(sock);

	CHECK(s >= 0, "connect: %s", strerror(errno));
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0) {
		CHECK(errno == EPIPE || errno == ECONNRESET, "sendmsg: %s", strerror(errno));
		close(s);
		return -1;
	}
	return s;
}

/* The VMM past the table, in a process of its own (its pid is the one
 * the log must name): exits 0 on EPIPE or SIGBUS at its touch. */
static pid_t late_vmm(const char *sock)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct ut_fault f;
		unsigned char v;
		char json[256], *p;
		int uffd = uffd_map(&p, json, sizeof(json)), s;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		ut_catch_signals();
		s = send_uffd(sock, json, uffd);
		if (s >= 0)
			CHECK(ut_read(p + 4096, &v, &f) == SIGBUS, "read %u, signal %d", v, f.sig);
		fprintf(stderr, "the VMM past the table: %s\n", s < 0 ? "EPIPE" : "SIGBUS");
		_exit(0);
	}
	return pid;
}

int main(void)
{
	static const char *const opts[] = { "--max-per-uid", "1024", "--handshake-timeout",
					    "3600", NULL };
	struct rlimit rl = { 8192, 8192 };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct ut_fc fc;
	char want[160];
	int idle[TABLE], base, st, i;
	pid_t pid;

	ut_watchdog(120);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: cannot raise the fd limit past the table\n");
		return UT_SKIP;
	}
	/* the server inherits it: room for the table and more */
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit: %s", strerror(errno));
	ut_server_start(&srv, 2 << 20, opts);
	ut_server_log_wait(&srv, "closed before the handshake");	/* (ut_server_start's) */
	base = ut_server_fds(&srv);
	for (i = 0; i < TABLE; i++)
		CHECK((idle[i] = ut_connect(srv.sock)) >= 0, "connect %d: %s", i, strerror(errno));
	while (ut_server_fds(&srv) < base + TABLE)
		usleep(10000);
	fprintf(stderr, "%d idle connections taken\n", TABLE);

	pid = late_vmm(srv.sock);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the VMM past the table: status %#x", st);
	snprintf(want, sizeof(want), "client pid %d uid 0: refused: too many clients", (int)pid);
	ut_server_log_wait(&srv, want);

	/* a ufault client is told, and does not wait */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_attach(mm, srv.sock, O_RDONLY, &obj), -EAGAIN);

	for (i = 0; i < TABLE; i++)
		close(idle[i]);
	/* the server has seen them go (else the VMM below may still find the
	 * table full, and be refused as it should be) */
	while (ut_server_fds(&srv) > base)
		usleep(10000);
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	uf_mm_destroy(mm);
	printf("pass: the connection past a full table was answered and failed closed\n");
	return UT_PASS;
}
