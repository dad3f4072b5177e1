// SPDX-License-Identifier: MIT
/* Description: an attach client of uid 65534 that tells the server a wrong file offset for its mapping of the cache gets SIGBUS at its access after a bounded number of faults, instead of the server filling the wrong page and waking it for ever; the server then ends its connection, logs it with its pid and uid, and refuses that uid's next clients with -EPERM for a while (then serves them again), while an honest root client beside it reads SOURCE's bytes */
#define _GNU_SOURCE
#include "attach-test.h"

#include <grp.h>
#include <sys/stat.h>

#define SIZE	(1 << 20)
#define NOBODY	65534

struct req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};

struct rep {
	int64_t ret;
	uint64_t pad;
};

enum { OP_UFFD = 1, OP_MAP };
#define SHARED	0x100

static int send_with_fd(int s, const void *buf, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(cbuf, 0, sizeof(cbuf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static int64_t call(int s, const struct req *r)
{
	struct rep p;

	CHECK(write(s, r, sizeof(*r)) == sizeof(*r), "request");
	CHECK(recv(s, &p, sizeof(p), MSG_WAITALL) == sizeof(p), "reply");
	return p.ret;
}

/* A hello for @oflags on a new connection to @sock: the answer's status
 * (the cache's fd, if any, into *@memfd), or a CHECK failure. */
static int hello(const char *sock, uint32_t oflags, int *sp, int *memfd)
{
	struct { char magic[8]; uint8_t version, pad[3]; uint32_t oflags; } h = {
		.magic = "UFATTACH", .version = 1, .oflags = oflags };
	struct { char magic[8]; uint8_t version, pad[3]; int32_t status; uint32_t flags, pad2; } a;
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { &a, sizeof(a) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int s = ut_connect(sock);

	CHECK(s >= 0, "connect: %s", strerror(errno));
	CHECK(write(s, &h, sizeof(h)) == sizeof(h), "hello");
	CHECK(recvmsg(s, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC) == sizeof(a), "answer");
	cm = CMSG_FIRSTHDR(&mh);
	*memfd = -1;
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(memfd, CMSG_DATA(cm), sizeof(int));
	*sp = s;
	return a.status;
}

/*
 * The liar, uid 65534: maps page 3 of the cache, tells the server it maps
 * page 100, and reads it.  Says the signal; then whether the server
 * still answers a request on that connection (1) or has ended it (0);
 * then, told to, tries to attach again till it is let in: says the
 * first refusal's status and then 0.
 */
static void liar(int in, int out, void *arg)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct req r = { .op = OP_UFFD };
	struct ut_fault f;
	struct rep q;
	unsigned char v;
	int s, u, memfd, sig, st, first = 0;
	char *p;

	ut_watchdog(60);
	ut_catch_signals();
	CHECK(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 && setuid(NOBODY) == 0,
	      "setuid: %s", strerror(errno));
	prctl(PR_SET_DUMPABLE, 1);
	CHECK_RET(hello(arg, O_RDWR, &s, &memfd), 0);
	CHECK(memfd >= 0, "no cache fd");
	/* (user faults only: what an unprivileged process may open) */
	u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (u < 0 || ioctl(u, UFFDIO_API, &api) < 0 ||
	    !(api.features & UFFD_FEATURE_MISSING_SHMEM)) {
		fprintf(stderr, "no userfaultfd for shared memory as uid %d\n", NOBODY);
		exit(UT_SKIP);
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, memfd, 3 * 4096);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	reg.range.start = (unsigned long)p;
	reg.range.len = 4096;
	CHECK(ioctl(u, UFFDIO_REGISTER, &reg) == 0, "register: %s", strerror(errno));
	CHECK(send_with_fd(s, &r, sizeof(r), u) == 0, "uffd");
	CHECK(recv(s, &q, sizeof(q), MSG_WAITALL) == sizeof(q) && q.ret == 0, "uffd");
	r = (struct req){ .op = OP_MAP, .a = (unsigned long)p, .b = 4096, .c = 100,
			  .d = PROT_READ | SHARED };
	CHECK(call(s, &r) == 0, "map");
	sig = ut_read(p, &v, &f);
	ut_say(out, sig);
	/* the same request again: answered, or the connection is over */
	ut_hear(in);
	ut_say(out, send(s, &r, sizeof(r), MSG_NOSIGNAL) == sizeof(r) &&
		    recv(s, &q, sizeof(q), MSG_WAITALL) == sizeof(q));
	close(s);
	/* again, till let in */
	ut_hear(in);
	while ((st = hello(arg, O_RDONLY, &s, &memfd)) != 0) {
		if (!first)
			ut_say(out, first = st);
		close(s);
		usleep(50000);
	}
	if (!first)
		ut_say(out, 0);
	ut_say(out, 0);
	close(s);
	ut_hear(in);
}

int main(void)
{
	static const char *const opts[] = { "--allow-uid", "65534", NULL };
	struct ut_server srv;
	struct ut_client c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	char want[128];
	size_t off;
	long sig, v;
	int st_;

	if (geteuid() != 0) {
		fprintf(stderr, "not root: no other user to be\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, SIZE, opts);
	CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
	ut_client_start(&c, liar, srv.sock);
	/* (after the forks: no thread of the test's at a fork, ThreadSanitizer) */
	ut_watchdog(120);
	sig = ut_hear(c.from);
	if (sig < 0 && (st_ = ut_client_wait(&c)) == UT_SKIP)
		return UT_SKIP;
	printf("the lying client's access: signal %ld\n", sig);
	CHECK_RET(sig, SIGBUS);
	ut_say(c.to, 0);
	v = ut_hear(c.from);
	CHECK(v >= 0, "the lying client died");
	printf("the server %s the lying client's connection\n", v ? "still answers on" : "ended");
	CHECK(v == 0, "the server still serves a client it caught lying");
	snprintf(want, sizeof(want), "client pid %d uid %d: lied about its mappings", (int)c.pid,
		 NOBODY);
	ut_server_log_wait(&srv, want);

	/* its uid's next client is refused for a while; an honest root
	 * client beside it is served and reads SOURCE's bytes */
	ut_say(c.to, 0);
	v = ut_hear(c.from);
	printf("uid %d attaching again: %ld (%s)\n", NOBODY, v, v ? strerror((int)-v) : "served");
	CHECK(v == -EPERM, "the liar's uid attached again at once: %ld", v);
	obj = ut_attach(&mm, srv.sock, O_RDONLY);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (off = 0; off < SIZE; off += 4096)
		CHECK(p[off] == ut_pattern(off), "byte %zu", off);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	/* and later let in again */
	CHECK_RET(ut_hear(c.from), 0);
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	printf("pass: the lie ended in SIGBUS, the connection and a ban of its uid\n");
	return 0;
}
