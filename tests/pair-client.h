/* SPDX-License-Identifier: MIT */
/*
 * A Firecracker-style client forked by an in-process serving test: its
 * memory anonymous and private, registered MISSING on a userfaultfd of
 * its own and handed to the test over a socket pair (its region, base
 * and length, then the fd as SCM_RIGHTS); the test serves it
 * (uf_object_serve_uffd*) and talks to it over the pair.  Not a test
 * program itself.
 */
#ifndef UT_PAIR_CLIENT_H
#define UT_PAIR_CLIENT_H

#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child: @size bytes of memory (mmap's @flags besides
 * MAP_PRIVATE | MAP_ANONYMOUS), registered and handed over @sock; their
 * base, and *@uffdp the userfaultfd (NULL: closed once handed over).  A
 * userfaultfd or memory refused here: exit UT_SKIP. */
static unsigned char *pc_client_start(int sock, size_t size, int flags, int *uffdp)
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
				   MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
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
	if (uffdp)
		*uffdp = uffd;
	else
		close(uffd);
	return base;
}

/* Fork the client, @fn on its end of a socket pair, and take its region
 * and userfaultfd: the test's end (*@pid the client), or -1 when the
 * client found no userfaultfd to have (it exited UT_SKIP: reaped). */
static int pc_client_fork(void (*fn)(int), uint64_t region[2], int *uffd, pid_t *pid)
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

#endif
