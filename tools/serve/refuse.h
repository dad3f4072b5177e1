/* SPDX-License-Identifier: MIT */
/*
 * ufault-serve's refused clients (refuse.c): a VMM whose userfaultfd
 * reached the server and which the server will not serve.  Not a tool of
 * its own: compiled into ufault-serve.
 */
#ifndef UFAULT_SERVE_REFUSE_H
#define UFAULT_SERVE_REFUSE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Is @fd a userfaultfd? */
bool uf_uffd_fd_is_uffd(int fd);

/* What refuse_answer() did. */
struct refuse_result {
	unsigned int faults;	/* faults answered (each a SIGBUS) */
	uint64_t first;		/* the first one's address */
	bool killed;		/* no poison marker here: SIGBUS sent to @pid */
	int forked[8];		/* fork children's userfaultfds (the caller's) */
	unsigned int nforked;	/* (more than 8 in one call: closed) */
};

/*
 * Read what the userfaultfd @uffd (O_NONBLOCK) of process @pid holds and
 * answer every fault with the poison marker (UFFDIO_POISON, Linux 6.6:
 * the access gets SIGBUS), or where the kernel has none, SIGBUS to @pid.
 * The regions need not be known: each fault is answered at its address
 * (a 2 MiB one for hugetlbfs memory).  Every other event is read and
 * dropped.  Fills @res.
 */
void refuse_answer(int uffd, pid_t pid, struct refuse_result *res);

#endif
