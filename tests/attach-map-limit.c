// SPDX-License-Identifier: MIT
/* Description: an attach client that tells the server 20 000 mappings (none of them real) gets 4096 of them into its table and -ENOMEM for the rest, as uf_object_attach(3) documents: one client cannot grow the server without bound; an honest client beside it is served */
#define _GNU_SOURCE
#include "attach-test.h"

#define LIMIT	4096
#define TRIES	20000

struct req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};

struct rep {
	int64_t ret;
	uint64_t pad;
};

enum { OP_UFFD = 1, OP_MAP };

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

/* The liar: a connection of its own, requests as the protocol has them. */
static void liar(int in, int out, void *arg)
{
	struct { char magic[8]; uint8_t version, pad[3]; uint32_t oflags; } h = {
		.magic = "UFATTACH", .version = 1, .oflags = O_RDWR };
	struct uffdio_api api = { .api = UFFD_API };
	struct req r = { .op = OP_UFFD };
	char ans[24], cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { ans, sizeof(ans) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	long ok = 0, err = 0, i;
	struct rep p;
	int s = ut_connect(arg), u;

	(void)in;
	CHECK(s >= 0, "connect");
	CHECK(write(s, &h, sizeof(h)) == sizeof(h), "hello");
	CHECK(recvmsg(s, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC) == sizeof(ans), "answer");
	u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u < 0 || ioctl(u, UFFDIO_API, &api) < 0)
		exit(UT_SKIP);
	CHECK(send_with_fd(s, &r, sizeof(r), u) == 0, "uffd");
	CHECK(recv(s, &p, sizeof(p), MSG_WAITALL) == sizeof(p) && p.ret == 0, "uffd: %ld",
	      (long)p.ret);
	for (i = 0; i < TRIES; i++) {
		r = (struct req){ .op = OP_MAP, .a = 0x100000000UL + (uint64_t)i * 8192, .b = 4096,
				  .c = 0, .d = PROT_READ };
		CHECK(write(s, &r, sizeof(r)) == sizeof(r), "map");
		CHECK(recv(s, &p, sizeof(p), MSG_WAITALL) == sizeof(p), "reply");
		if (p.ret == 0)
			ok++;
		else if (!err)
			err = (long)p.ret;
	}
	ut_say(out, ok);
	ut_say(out, err);
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
	long ok, err;
	size_t off;

	ut_server_start(&srv, 1 << 20, NULL);
	ut_client_start(&c, liar, srv.sock);
	/* (after the forks: no thread of the test's at a fork, ThreadSanitizer) */
	ut_watchdog(120);
	ok = ut_hear(c.from);
	err = ut_hear(c.from);
	printf("%ld of %d mappings taken, then %ld\n", ok, TRIES, err);
	CHECK_RET(ok, LIMIT);
	CHECK_RET(err, -ENOMEM);
	/* an honest client beside it */
	obj = ut_attach(&mm, srv.sock, O_RDONLY);
	CHECK_RET(uf_mmap(mm, 1 << 20, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (off = 0; off < (1 << 20); off += 4096)
		CHECK(p[off] == ut_pattern(off), "byte %zu", off);
	uf_munmap(mm, p, 1 << 20);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	printf("pass: the client's table stopped at %d\n", LIMIT);
	return 0;
}
