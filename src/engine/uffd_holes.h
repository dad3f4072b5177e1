/* SPDX-License-Identifier: MIT */
/*
 * uffd_holes.h - calls on a bare userfaultfd fd: is it one, and the
 * kernel's poison marker on its ranges.  One copy for the library (the
 * engine, an attached client) and for ufault-serve (its supervisor and its
 * refused clients, tools/serve/, which link it from libufault.a).  Needs nothing of the library: fds and ioctls only.
 * Defined in uffd.c, the one file that issues userfaultfd ioctls.
 */
#ifndef UF_UFFD_HOLES_H
#define UF_UFFD_HOLES_H

#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <sys/ioctl.h>

#include <stdbool.h>

/* Is @fd (handed over by another process) a userfaultfd? */
bool uf_uffd_fd_is_uffd(int fd);

/* UFFDIO_POISON (Linux 6.6) is newer than some installed headers. */
struct uf_uffdio_poison {
	struct uffdio_range range;
	__u64 mode;
	__s64 updated;
};
#define UF_UFFDIO_POISON	_IOWR(UFFDIO, 0x08, struct uf_uffdio_poison)

/* The marker on [addr, addr + len) of the userfaultfd @fd, waking nobody:
 * 0, or -errno (-EEXIST: a page is there; -EINVAL or -ENOTTY: a kernel
 * without the marker). */
int uf_uffd_fd_poison(int fd, unsigned long addr, unsigned long len);

/*
 * The marker on every missing page of [addr, addr + len) of @fd, waking
 * nobody; a page present is left alone (the ioctl stops at it: skip @step
 * bytes, the page size there).  When the ioctl says EAGAIN without having
 * done anything (an event is unread), @drain(@arg) reads the fd.
 * Return 0, or -errno when the rest of the range cannot be poisoned.
 */
int uf_uffd_fd_poison_holes(int fd, unsigned long addr, unsigned long len, size_t step,
			    void (*drain)(void *arg), void *arg);

#endif /* UF_UFFD_HOLES_H */
