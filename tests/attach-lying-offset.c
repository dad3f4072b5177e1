// SPDX-License-Identifier: MIT
/* Description: an attach client that tells the server a wrong file offset for its mapping of the cache gets SIGBUS at its access after a bounded number of faults, instead of the server filling the wrong page and waking it for ever; an honest client beside it reads SOURCE's bytes */
#define _GNU_SOURCE
#include "attach-test.h"

#define SIZE	(1 << 20)

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

/* The liar: maps page 3 of the cache, tells the server it maps page 100. */
static void liar(int in, int out, void *arg)
{
	struct { char magic[8]; uint8_t version, pad[3]; uint32_t oflags; } h = {
		.magic = "UFATTACH", .version = 1, .oflags = O_RDWR };
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char ans[24], cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { ans, sizeof(ans) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct req r = { .op = OP_UFFD };
	struct ut_fault f;
	unsigned char v;
	int s = ut_connect(arg), u, memfd = -1, sig;
	struct cmsghdr *cm;
	char *p;

	(void)in;
	ut_watchdog(60);
	ut_catch_signals();
	CHECK(s >= 0, "connect");
	CHECK(write(s, &h, sizeof(h)) == sizeof(h), "hello");
	CHECK(recvmsg(s, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC) == sizeof(ans), "answer");
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no cache fd");
	memcpy(&memfd, CMSG_DATA(cm), sizeof(int));
	u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u < 0 || ioctl(u, UFFDIO_API, &api) < 0 || !(api.features & UFFD_FEATURE_MISSING_SHMEM))
		exit(UT_SKIP);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, memfd, 3 * 4096);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	reg.range.start = (unsigned long)p;
	reg.range.len = 4096;
	CHECK(ioctl(u, UFFDIO_REGISTER, &reg) == 0, "register: %s", strerror(errno));
	CHECK(send_with_fd(s, &r, sizeof(r), u) == 0, "uffd");
	{
		struct rep q;

		CHECK(recv(s, &q, sizeof(q), MSG_WAITALL) == sizeof(q) && q.ret == 0, "uffd");
	}
	r = (struct req){ .op = OP_MAP, .a = (unsigned long)p, .b = 4096, .c = 100,
			  .d = PROT_READ | SHARED };
	CHECK(call(s, &r) == 0, "map");
	sig = ut_read(p, &v, &f);
	ut_say(out, sig);
	ut_hear(in);
	close(s);
}

int main(void)
{
	struct ut_server srv;
	struct ut_client c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	size_t off;
	long sig;
	int st_;

	ut_server_start(&srv, SIZE, NULL);
	ut_client_start(&c, liar, srv.sock);
	/* (after the forks: no thread of the test's at a fork, ThreadSanitizer) */
	ut_watchdog(120);
	sig = ut_hear(c.from);
	if (sig < 0 && (st_ = ut_client_wait(&c)) == UT_SKIP)
		return UT_SKIP;
	printf("the lying client's access: signal %ld\n", sig);
	CHECK_RET(sig, SIGBUS);
	/* an honest client beside it */
	obj = ut_attach(&mm, srv.sock, O_RDONLY);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (off = 0; off < SIZE; off += 4096)
		CHECK(p[off] == ut_pattern(off), "byte %zu", off);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	printf("pass: the lie ended in SIGBUS\n");
	return 0;
}
