// SPDX-License-Identifier: MIT
/*
 * ufault-serve's refused clients: fail closed, fault by fault.
 *
 * Firecracker keeps its own copy of the userfaultfd it hands over, so a
 * server that refuses a VMM and closes the fd leaves the guest's first
 * fault waiting for ever.  So the server keeps the fd of every VMM it
 * refuses once the fd has arrived (a bad handshake, a uid not allowed, a
 * limit, a handshake timeout) and answers each fault read there with the
 * poison marker, until the VMM's socket closes: the VMM gets SIGBUS at
 * its first touch, never a hang and never zeros.  The regions need not
 * be known (the handshake may be garbage): the kernel reports the address
 * of each fault, and only that page is marked.  The supervisor does the
 * same for clients no server came back for (supervisor.c, answer()).
 */
#define _GNU_SOURCE
#include "refuse.h"
#include "../../src/engine/uffd_holes.h"	/* (linked from libufault.a) */

#include <errno.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The marker on the page at @addr (4 KiB, else the 2 MiB page of
 * hugetlbfs memory), then the wake of its thread; 0 or -errno. */
static int poison(int uffd, uint64_t addr)
{
	static const uint64_t sizes[] = { 4096, 2UL << 20 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct uffdio_range r = { addr & ~(sizes[i] - 1), sizes[i] };
		int ret = uf_uffd_fd_poison(uffd, r.start, r.len);

		if (!ret)
			ioctl(uffd, UFFDIO_WAKE, &r);
		if (ret != -EINVAL)
			return ret;	/* EEXIST: there now; EAGAIN: an event first */
	}
	return -EINVAL;
}

/* See refuse.h. */
void refuse_answer(int uffd, pid_t pid, struct refuse_result *res)
{
	struct uffd_msg m[16];
	ssize_t n;
	size_t i;

	memset(res, 0, sizeof(*res));
	while ((n = read(uffd, m, sizeof(m))) > 0) {
		for (i = 0; i < (size_t)n / sizeof(m[0]); i++) {
			uint64_t a = m[i].arg.pagefault.address;
			int ret;

			if (m[i].event == UFFD_EVENT_FORK) {
				int fd = (int)m[i].arg.fork.ufd;

				if (res->nforked < sizeof(res->forked) / sizeof(res->forked[0]))
					res->forked[res->nforked++] = fd;
				else
					close(fd);
				continue;
			}
			if (m[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			ret = poison(uffd, a);
			if (ret == -EINVAL || ret == -ENOTTY) {
				/* a kernel without the marker: the VMM's crash */
				kill(pid, SIGBUS);
				res->killed = true;
			}
			if (ret) {
				/* (a page there now, or an event unread: it
				 * faults again, and is read again) */
				struct uffdio_range r = { a & ~4095UL, 4096 };

				ioctl(uffd, UFFDIO_WAKE, &r);
			}
			if (!res->faults++)
				res->first = a;
		}
	}
}
