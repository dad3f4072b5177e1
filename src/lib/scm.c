// SPDX-License-Identifier: MIT
/*
 * Bytes and file descriptors over a Unix socket: see scm.h.  Used by an
 * attached client and its server (src/as/attach.c) and by ufault-serve's
 * supervisor and servers (tools/serve/supervisor.c).
 */
#define _GNU_SOURCE
#include "scm.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ssize_t uf_scm_send(int sock, const struct iovec *iov, int niov, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(UF_SCM_MAX_FDS * sizeof(int))];
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)niov };
	ssize_t n;

	if (nfds < 0 || nfds > UF_SCM_MAX_FDS)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* The fds of @mh's SCM_RIGHTS messages: the first @maxfds kept. */
static void scm_take_fds(struct msghdr *mh, int *fds, int maxfds, int *nfds)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		int k, m;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		m = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (k = 0; k < m; k++) {
			int x;

			memcpy(&x, CMSG_DATA(cm) + (size_t)k * sizeof(int), sizeof(int));
			if (*nfds < maxfds)
				fds[(*nfds)++] = x;
			else
				close(x);
		}
	}
}

ssize_t uf_scm_recv(int sock, struct iovec *iov, int niov, int flags, int *fds, int maxfds,
		    int *nfds, int *mflags)
{
	char cbuf[CMSG_SPACE(UF_SCM_MAX_FDS * sizeof(int))];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)niov, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	*nfds = 0;
	if (mflags)
		*mflags = 0;
	do
		n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	scm_take_fds(&mh, fds, maxfds, nfds);
	if (mflags)
		*mflags = mh.msg_flags;
	return n;
}
