// SPDX-License-Identifier: MIT
/*
 * The message helpers both ends of the ufault clients' protocol use
 * (attach.c, attach_map.c: the client; attach_srv.c: the server): whole
 * reads and writes on the socket, and a message with an fd as
 * SCM_RIGHTS.  The wire format is attach_proto.h's.
 */
#define _GNU_SOURCE
#include "as/attach.h"
#include "lib/scm.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

/* All of @len bytes, or -errno (-ECONNRESET at the end of the stream). */
int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(fd, (char *)buf + done, len - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* Send @len bytes with @pass (>= 0) as SCM_RIGHTS. */
int send_fd(int sock, const void *buf, size_t len, int pass)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t n = uf_scm_send(sock, &iov, 1, &pass, pass >= 0);

	if (n < 0)
		return (int)n;
	/* (the rest without the fd, should the kernel take a part) */
	return (size_t)n < len ? write_full(sock, (const char *)buf + n, len - (size_t)n) : 0;
}

/* Receive @len bytes and at most one fd (*fdp, -1 if none came; any
 * other is closed).  -ECONNRESET at the end of the stream. */
int recv_fd(int sock, void *buf, size_t len, int *fdp)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int nfds, ret;
	ssize_t n = uf_scm_recv(sock, &iov, 1, 0, fdp, 1, &nfds, NULL);

	if (n < 0 || !nfds)
		*fdp = -1;
	if (n < 0)
		return (int)n;
	if (n == 0 || (size_t)n < len) {
		ret = n ? read_full(sock, (char *)buf + n, len - (size_t)n) : -ECONNRESET;
		if (ret && *fdp >= 0) {
			close(*fdp);
			*fdp = -1;
		}
		return ret;
	}
	return 0;
}
