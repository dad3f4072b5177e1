/* SPDX-License-Identifier: MIT */
/*
 * scm.h - bytes and file descriptors over a Unix socket (SCM_RIGHTS), one
 * copy for the library (src/as/attach.c) and for ufault-serve's
 * supervisor (tools/serve/supervisor.c, which links it from libufault.a).
 * Needs nothing of the library.
 */
#ifndef UF_SCM_H
#define UF_SCM_H

#include <sys/types.h>
#include <sys/uio.h>

#define UF_SCM_MAX_FDS	8	/* fds one message may carry; more are closed */

/*
 * Send @iov (@niov pieces) with @nfds fds (0 to UF_SCM_MAX_FDS) as
 * SCM_RIGHTS, MSG_NOSIGNAL, again after EINTR.  Return the bytes sent
 * (maybe fewer than asked: the fds went with the first), or -errno.
 */
ssize_t uf_scm_send(int sock, const struct iovec *iov, int niov, const int *fds, int nfds);

/*
 * Receive one recvmsg(@flags | MSG_CMSG_CLOEXEC) into @iov, again after
 * EINTR.  The fds that came: the first @maxfds into @fds (*nfds of
 * them), the rest closed.  *mflags (may be NULL): the message's flags
 * (MSG_TRUNC, MSG_CTRUNC).  Return the bytes read (0 at the end of the
 * stream), or -errno (none kept then).
 */
ssize_t uf_scm_recv(int sock, struct iovec *iov, int niov, int flags, int *fds, int maxfds,
		    int *nfds, int *mflags);

#endif /* UF_SCM_H */
