// SPDX-License-Identifier: MIT
/* Description: a ufault client (the attach protocol, spoken by hand) that sends ufault-serve a request it does not know gets an error answer (-EOPNOTSUPP) and can go on; one that breaks the protocol (a read larger than the protocol allows) finds its connection closed (EOF), never an answer it waits for for ever; the server goes on serving others */
#include "attach-test.h"

/* The protocol's messages (src/as/attach.c, version 1). */
struct hello {
	char magic[8];
	uint8_t version, pad[3];
	uint32_t oflags;
};
struct answer {
	char magic[8];
	uint8_t version, pad[3];
	int32_t status;
	uint32_t flags, pad2;
};
struct req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};
struct rep {
	int64_t ret;
	uint64_t pad;
};

#define OP_PREAD	5
#define OP_UNKNOWN	200

/* Connect and attach by hand: the answer (and its memfd, closed). */
static int attach_raw(const char *sock)
{
	struct hello h = { .magic = "UFATTACH", .version = 1, .oflags = O_RDONLY };
	struct answer a;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &a, sizeof(a) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int s = ut_connect(sock), fd;

	CHECK(s >= 0, "connect: %s", strerror(errno));
	CHECK(send(s, &h, sizeof(h), MSG_NOSIGNAL) == sizeof(h), "send hello: %s", strerror(errno));
	CHECK(recvmsg(s, &mh, MSG_WAITALL) == sizeof(a), "recv answer: %s", strerror(errno));
	CHECK(!memcmp(a.magic, "UFSERVED", 8) && a.status == 0, "answer: status %d", a.status);
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no memfd with the answer");
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	close(fd);
	return s;
}

int main(void)
{
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct req r = { .op = OP_UNKNOWN };
	struct rep rep;
	char buf[16];
	int s;

	ut_watchdog(60);
	ut_server_start(&srv, 1 << 20, NULL);

	/* an unknown request: answered, and the connection goes on */
	s = attach_raw(srv.sock);
	CHECK(send(s, &r, sizeof(r), MSG_NOSIGNAL) == sizeof(r), "send: %s", strerror(errno));
	CHECK(recv(s, &rep, sizeof(rep), MSG_WAITALL) == sizeof(rep), "no answer to an unknown "
	      "request: %s", strerror(errno));
	CHECK(rep.ret == -EOPNOTSUPP, "unknown request: %lld", (long long)rep.ret);
	r = (struct req){ .op = OP_PREAD, .a = 0, .b = sizeof(buf) };
	CHECK(send(s, &r, sizeof(r), MSG_NOSIGNAL) == sizeof(r), "send: %s", strerror(errno));
	CHECK(recv(s, &rep, sizeof(rep), MSG_WAITALL) == sizeof(rep) && rep.ret == sizeof(buf),
	      "a read after it: %lld", (long long)rep.ret);
	CHECK(recv(s, buf, sizeof(buf), MSG_WAITALL) == sizeof(buf) && (unsigned char)buf[3] ==
	      ut_pattern(3), "its bytes");
	close(s);

	/* a read past the protocol's limit: the connection closes */
	s = attach_raw(srv.sock);
	r = (struct req){ .op = OP_PREAD, .a = 0, .b = 1ULL << 40 };
	CHECK(send(s, &r, sizeof(r), MSG_NOSIGNAL) == sizeof(r), "send: %s", strerror(errno));
	CHECK(recv(s, &rep, sizeof(rep), 0) == 0, "a broken request: the connection stays open");
	close(s);
	ut_server_log_wait(&srv, "disconnected");

	/* and a real client is served */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_attach(mm, srv.sock, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), 4096), sizeof(buf));
	CHECK((unsigned char)buf[5] == ut_pattern(4096 + 5), "pread after");
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
