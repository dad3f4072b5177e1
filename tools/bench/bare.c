// SPDX-License-Identifier: MIT
/*
 * The minimal prefetch target (bare.h).  Linked into ufault-bench.
 */
#define _GNU_SOURCE
#include "bare.h"
#include "../../src/lib/compat.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int bare_uffd_open(void)
{
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC), fd;

	if (dev >= 0) {
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
		close(dev);
		if (fd >= 0)
			return fd;
	}
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0)
		return fd;
	/* the faults here are all user-mode touches */
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	return fd >= 0 ? fd : -errno;
}

int bare_map_open(struct bare_map *m, size_t size)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM };
	int i, ret = 0;

	*m = (struct bare_map){ .mfd = -1, .uffd = -1, .cm = MAP_FAILED, .pm = MAP_FAILED,
				.size = size };
	m->mfd = memfd_create("ufault-bench-bare", MFD_CLOEXEC);
	if (m->mfd < 0 || ftruncate(m->mfd, (off_t)size) < 0)
		ret = -errno;
	if (!ret && (m->uffd = bare_uffd_open()) < 0)
		ret = m->uffd;
	if (!ret && ioctl(m->uffd, UFFDIO_API, &api) < 0)
		ret = -errno;
	if (!ret && ((m->cm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m->mfd, 0)) ==
		     MAP_FAILED || (m->pm = mmap(NULL, size, PROT_READ, MAP_PRIVATE, m->mfd, 0)) ==
		     MAP_FAILED))
		ret = -ENOMEM;
	for (i = 0; !ret && i < 2; i++) {
		struct uffdio_register reg = {
			.range = { (unsigned long)(i ? m->pm : m->cm), size },
			.mode = UFFDIO_REGISTER_MODE_MISSING,
		};

		if (ioctl(m->uffd, UFFDIO_REGISTER, &reg) < 0)
			ret = -errno;
	}
	if (ret)
		bare_map_close(m);
	return ret;
}

int bare_map_fill(struct bare_map *m, size_t off, const void *src, size_t len)
{
	struct uffdio_copy cp = {
		.dst = (unsigned long)m->cm + off, .src = (unsigned long)src,
		.len = len, .mode = UFFDIO_COPY_MODE_DONTWAKE,
	};

	if (ioctl(m->uffd, UFFDIO_COPY, &cp) < 0 ||
	    madvise(m->pm + off, len, MADV_POPULATE_READ) < 0)
		return -errno;
	return 0;
}

void bare_map_close(struct bare_map *m)
{
	if (m->pm != MAP_FAILED)
		munmap(m->pm, m->size);
	if (m->cm != MAP_FAILED)
		munmap(m->cm, m->size);
	if (m->uffd >= 0)
		close(m->uffd);
	if (m->mfd >= 0)
		close(m->mfd);
	*m = (struct bare_map){ .mfd = -1, .uffd = -1, .cm = MAP_FAILED, .pm = MAP_FAILED };
}
