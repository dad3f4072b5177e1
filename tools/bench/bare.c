// SPDX-License-Identifier: MIT
/*
 * The minimal prefetch target (bare.h).  Linked into ufault-bench.
 */
#define _GNU_SOURCE
#include "bare.h"
#include "../../src/lib/compat.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
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

int bare_map_copy(struct bare_map *m, size_t off, const void *src, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct uffdio_copy c = { .dst = (unsigned long)m->cm + off + done,
					 .src = (unsigned long)src + done, .len = len - done,
					 .mode = UFFDIO_COPY_MODE_DONTWAKE };

		if (ioctl(m->uffd, UFFDIO_COPY, &c) == 0)
			return 0;
		if (errno != EEXIST && errno != EAGAIN)
			return -errno;
		done += c.copy > 0 ? (size_t)c.copy : 0;
		if (errno == EEXIST)
			done += 4096;
	}
	return 0;
}

int bare_map_fill(struct bare_map *m, size_t off, const void *src, size_t len)
{
	int ret = bare_map_copy(m, off, src, len);

	if (!ret && madvise(m->pm + off, len, MADV_POPULATE_READ) < 0)
		ret = -errno;
	return ret;
}

int bare_map_serve(struct bare_map *m, int stopfd, int (*readpage)(void *arg, size_t off,
								      void *buf),
		   void *arg, uint64_t *faults)
{
	static __thread char page[4096] __attribute__((aligned(4096)));
	int ret, err = 0;

	for (;;) {
		struct pollfd pfd[2] = { { m->uffd, POLLIN, 0 }, { stopfd, POLLIN, 0 } };
		uint64_t addr, base = (uint64_t)(uintptr_t)m->pm;
		struct uffdio_range wake;
		struct uffd_msg msg;
		size_t off;

		if (poll(pfd, 2, -1) < 0 || pfd[1].revents)
			return err;
		if (read(m->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		addr = msg.arg.pagefault.address & ~(uint64_t)4095;
		if (addr - base >= m->size)
			base = (uint64_t)(uintptr_t)m->cm;
		off = (size_t)(addr - base);
		(*faults)++;
		ret = readpage(arg, off, page);
		if (ret) {	/* zeros: the toucher sees wrong bytes, not a hang */
			memset(page, 0, sizeof(page));
			err = err ? err : ret;
		}
		ret = bare_map_copy(m, off, page, 4096);
		if (ret)
			return ret;
		wake = (struct uffdio_range){ (unsigned long)m->pm + off, 4096 };
		ioctl(m->uffd, UFFDIO_WAKE, &wake);
		wake.start = (unsigned long)m->cm + off;
		ioctl(m->uffd, UFFDIO_WAKE, &wake);
	}
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

static int cmp_ratio(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bare_median_ratio(const double *a, const double *b, unsigned int n, double *lo,
			 double *hi)
{
	double q[1000];
	unsigned int r;

	if (n > 1000)
		n = 1000;
	for (r = 0; r < n; r++)
		q[r] = a[r] / b[r];
	qsort(q, n, sizeof(double), cmp_ratio);
	if (lo)
		*lo = q[0];
	if (hi)
		*hi = q[n - 1];
	return q[n / 2];
}
