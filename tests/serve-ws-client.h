/* SPDX-License-Identifier: MIT */
/*
 * The client of a working set pushed into a served process
 * (uf_object_serve_prefetch tests): a forked child whose memory is
 * anonymous and private, registered MISSING on a userfaultfd of its own
 * and handed to the test over a socket pair (its region, then the fd as
 * SCM_RIGHTS), and how it looks at a set's pages.  Not a test program
 * itself; the test defines set_page(), the set's pages in recorded order.
 */
#ifndef UT_SERVE_WS_CLIENT_H
#define UT_SERVE_WS_CLIENT_H

#include "helpers.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t set_page(size_t i);

/* In the child: @size bytes of memory, registered and handed over @sock;
 * their base.  A userfaultfd refused here: exit UT_SKIP. */
static unsigned char *sws_client_start(int sock, size_t size)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	uint64_t region[2];
	struct iovec iov = { region, sizeof(region) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	unsigned char *base = mmap(NULL, size, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (base == MAP_FAILED || uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
		_exit(UT_SKIP);
	reg.range.start = (unsigned long)base;
	reg.range.len = size;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		_exit(UT_SKIP);
	region[0] = (uint64_t)(uintptr_t)base;
	region[1] = size;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != (ssize_t)sizeof(region))
		_exit(UT_FAIL);
	close(uffd);
	return base;
}

/* Fork the client, @fn on its end of a socket pair, and take its region
 * and userfaultfd: the test's end (*@pid the client), or -1 when the
 * client found no userfaultfd to have (it exited UT_SKIP: reaped). */
static int sws_client_fork(void (*fn)(int), uint64_t region[2], int *uffd, pid_t *pid)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { region, 2 * sizeof(uint64_t) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int sv[2], status;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	*pid = fork();
	CHECK(*pid >= 0, "fork: %s", strerror(errno));
	if (*pid == 0) {
		close(sv[0]);
		fn(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &mh, 0) != (ssize_t)(2 * sizeof(uint64_t))) {
		CHECK(waitpid(*pid, &status, 0) == *pid, "waitpid");
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == UT_SKIP, "client: %d", status);
		close(sv[0]);
		return -1;
	}
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no fd from the client");
	memcpy(uffd, CMSG_DATA(cm), sizeof(int));
	return sv[0];
}

/* Of the set's pages [@from, @to) in @base, how many are in (mincore,
 * which faults nothing). */
static uint64_t sws_present(const unsigned char *base, size_t from, size_t to)
{
	uint64_t n = 0;
	size_t i;

	for (i = from; i < to; i++) {
		unsigned char vec = 0;

		if (mincore((void *)(base + set_page(i) * UF_PAGE_SIZE), UF_PAGE_SIZE, &vec) == 0 &&
		    (vec & 1))
			n++;
	}
	return n;
}

/* Touch the set's first @n pages in @base: the pages whose bytes are
 * wrong.  Not instrumented: a sanitizer's shadow of the pages read would
 * fault in as the client's faults too. */
__attribute__((no_sanitize("address", "thread"), noinline))
static uint64_t sws_touch(const unsigned char *base, size_t n)
{
	uint64_t bad = 0;
	size_t i;

	for (i = 0; i < n; i++)
		bad += base[set_page(i) * UF_PAGE_SIZE + i % UF_PAGE_SIZE] !=
		       ut_pattern(set_page(i) * UF_PAGE_SIZE + i % UF_PAGE_SIZE);
	return bad;
}

#endif
