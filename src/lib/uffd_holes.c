// SPDX-License-Identifier: MIT
/*
 * Poison the holes of a userfaultfd's range: see uffd_holes.h.  Used by
 * src/engine/uffd.c (an address space nobody will serve), src/as/attach.c
 * (one page at a time) and tools/serve/supervisor.c (a client whose
 * server did not come back).
 */
#define _GNU_SOURCE
#include "uffd_holes.h"

#include <errno.h>
#include <stdint.h>

int uf_uffd_fd_poison(int fd, unsigned long addr, unsigned long len)
{
	struct uf_uffdio_poison p = { .range = { addr, len }, .mode = UFFDIO_COPY_MODE_DONTWAKE };

	return ioctl(fd, UF_UFFDIO_POISON, &p) < 0 ? -errno : 0;
}

int uf_uffd_fd_poison_holes(int fd, unsigned long addr, unsigned long len, size_t step,
			    void (*drain)(void *arg), void *arg)
{
	unsigned long a = addr, end = addr + len;

	while (a < end) {
		struct uf_uffdio_poison p = { .range = { a, end - a },
					      .mode = UFFDIO_COPY_MODE_DONTWAKE };

		if (ioctl(fd, UF_UFFDIO_POISON, &p) == 0)
			return 0;
		if (p.updated > 0)
			a += (unsigned long)p.updated;
		if (errno == EAGAIN) {
			if (p.updated <= 0 && drain)
				drain(arg);	/* an event is unread */
			continue;
		}
		if (errno == EEXIST) {
			a += step;	/* a page is there */
			continue;
		}
		return -errno;	/* gone (ESRCH), not registered, no marker */
	}
	return 0;
}
