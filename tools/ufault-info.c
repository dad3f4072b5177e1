// SPDX-License-Identifier: MIT
/*
 * ufault-info - what this kernel and this process allow ufault to do.
 *
 * Probes, in order: the kernel release, /dev/userfaultfd, the
 * vm.unprivileged_userfaultfd sysctl, the userfaultfd(2) system call with
 * flags 0 and with UFFD_USER_MODE_ONLY, the features UFFDIO_API offers,
 * the PAGEMAP_SCAN ioctl, MADV_COLLAPSE of a memfd extent (huge extents),
 * and finally uf_mm_create() plus one real fault
 * through an object mapping and one through an operation mapping.  Then it
 * says in plain words what will and will not work here.
 *
 * Exit status: 0 if ufault can work here, 1 if not, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <ufault.h>

#include <linux/fs.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

/*
 * This tool probes the kernel itself, beside the library.  Debian 12's
 * uapi headers are 6.1: what came later is defined in the library's
 * src/lib/compat.h, which this tool shares.
 */
#include "../src/lib/compat.h"

#define CAP_SYS_PTRACE_BIT	19

static const char *const feature_names[] = {
	"PAGEFAULT_FLAG_WP", "EVENT_FORK", "EVENT_REMAP", "EVENT_REMOVE",
	"MISSING_HUGETLBFS", "MISSING_SHMEM", "EVENT_UNMAP", "SIGBUS",
	"THREAD_ID", "MINOR_HUGETLBFS", "MINOR_SHMEM", "EXACT_ADDRESS",
	"WP_HUGETLBFS_SHMEM", "WP_UNPOPULATED", "POISON", "WP_ASYNC", "MOVE",
};
#define NFEATURES (sizeof(feature_names) / sizeof(feature_names[0]))

/* Everything the probes found; the verdict is computed from this alone. */
struct info {
	struct utsname uts;
	int dev_open_err;		/* 0: /dev/userfaultfd opened */
	int dev_new_err;		/* 0: USERFAULTFD_IOC_NEW worked */
	int sysctl;			/* -1: not readable */
	int sysctl_err;
	int cap_ptrace;			/* -1: unknown */
	int sys_err;			/* userfaultfd(0) */
	int sys_umo_err;		/* userfaultfd(UFFD_USER_MODE_ONLY) */
	const char *api_via;		/* which fd answered UFFDIO_API */
	int api_err;
	uint64_t features;
	int scan_err;			/* PAGEMAP_SCAN */
	long scan_regions;
	int fork_err;			/* UFFD_FEATURE_EVENT_FORK granted? */
	int collapse_err;		/* MADV_COLLAPSE of a memfd extent */
	char shmem_enabled[64];		/* the THP setting for shmem, for the record */
	int mm_err;			/* uf_mm_create() */
	int obj_fault_err;		/* a fault on an object mapping */
	int ops_fault_err;		/* a fault on an operation mapping */
	int sys_fault_err;		/* a fault taken inside read(2) */
	bool quiet;
};

static bool has(const struct info *in, uint64_t feature)
{
	return in->api_err == 0 && (in->features & feature);
}

/* "EPERM (Operation not permitted)" */
static const char *errstr(int err)
{
	static char buf[8][96];
	static int slot;
	const char *name = strerrorname_np(err);
	char *b = buf[slot++ % 8];

	snprintf(b, sizeof(buf[0]), "%s (%s)", name ? name : "error", strerror(err));
	return b;
}

static int read_sysctl(int *val)
{
	FILE *f = fopen("/proc/sys/vm/unprivileged_userfaultfd", "r");
	int err = 0;

	if (!f)
		return errno;
	if (fscanf(f, "%d", val) != 1)
		err = EIO;
	fclose(f);
	return err;
}

/* Is CAP_SYS_PTRACE in the effective set?  -1 if /proc does not say. */
static int cap_ptrace(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long eff;
	char line[256];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			ret = !!(eff & (1ULL << CAP_SYS_PTRACE_BIT));
			break;
		}
	}
	fclose(f);
	return ret;
}

static int uffd_syscall(int flags)
{
	return (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | flags);
}

/* Features offered through @fd (closed here); UFFDIO_API may run once per fd. */
static int api_probe(int fd, uint64_t *features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	int err = 0;

	if (ioctl(fd, UFFDIO_API, &api) < 0)
		err = errno;
	else
		*features = api.features;
	close(fd);
	return err;
}

static void probe_uffd(struct info *in)
{
	int dev, fd, fd_dev = -1, fd_sys = -1, fd_umo = -1;

	in->dev_new_err = -1;
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	in->dev_open_err = dev < 0 ? errno : 0;
	if (dev >= 0) {
		fd_dev = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
		in->dev_new_err = fd_dev < 0 ? errno : 0;
		close(dev);
	}
	fd_sys = uffd_syscall(0);
	in->sys_err = fd_sys < 0 ? errno : 0;
	fd_umo = uffd_syscall(UFFD_USER_MODE_ONLY);
	in->sys_umo_err = fd_umo < 0 ? errno : 0;

	/* ask UFFDIO_API through the first fd that opened, as the library does */
	in->api_err = ENOSYS;
	if (fd_dev >= 0) {
		fd = fd_dev, fd_dev = -1;
		in->api_via = "/dev/userfaultfd";
	} else if (fd_sys >= 0) {
		fd = fd_sys, fd_sys = -1;
		in->api_via = "userfaultfd(0)";
	} else if (fd_umo >= 0) {
		fd = fd_umo, fd_umo = -1;
		in->api_via = "userfaultfd(UFFD_USER_MODE_ONLY)";
	} else {
		fd = -1;
	}
	if (fd >= 0)
		in->api_err = api_probe(fd, &in->features);
	/* offered is not granted: the fork event needs CAP_SYS_PTRACE */
	in->fork_err = ENOSYS;
	if (!in->api_err && (in->features & UFFD_FEATURE_EVENT_FORK)) {
		int f = fd_dev >= 0 ? fd_dev : fd_sys >= 0 ? fd_sys : fd_umo;
		struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_FORK };

		if (f >= 0)
			in->fork_err = ioctl(f, UFFDIO_API, &api) < 0 ? errno : 0;
		else if ((f = uffd_syscall(0)) >= 0 || (f = uffd_syscall(UFFD_USER_MODE_ONLY)) >= 0) {
			in->fork_err = ioctl(f, UFFDIO_API, &api) < 0 ? errno : 0;
			close(f);
		}
	}
	if (fd_dev >= 0)
		close(fd_dev);
	if (fd_sys >= 0)
		close(fd_sys);
	if (fd_umo >= 0)
		close(fd_umo);
}

/* PAGEMAP_SCAN over a small mapping with two of its four pages touched. */
static void probe_pagemap_scan(struct info *in)
{
	struct page_region vec[4];
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.vec = (unsigned long)vec,
		.vec_len = 4,
		.category_mask = PAGE_IS_PRESENT,
		.return_mask = PAGE_IS_PRESENT,
	};
	size_t len = 4 * UF_PAGE_SIZE;
	char *p;
	long n;
	int fd;

	in->scan_regions = 0;
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		in->scan_err = errno;
		return;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		in->scan_err = errno;
		close(fd);
		return;
	}
	p[0] = 1;
	p[2 * UF_PAGE_SIZE] = 1;
	arg.start = (unsigned long)p;
	arg.end = (unsigned long)p + len;
	n = ioctl(fd, PAGEMAP_SCAN, &arg);
	if (n < 0) {
		in->scan_err = errno;
	} else if (n != 2 || vec[0].start != (unsigned long)p ||
		   vec[1].start != (unsigned long)p + 2 * UF_PAGE_SIZE) {
		in->scan_err = EPROTO;	/* answered, but not what we touched */
		in->scan_regions = n;
	} else {
		in->scan_err = 0;
		in->scan_regions = n;
	}
	munmap(p, len);
	close(fd);
}

/*
 * Huge extents: what ufault does, with plain system calls.  A 2 MiB memfd
 * written whole, mapped at a 2 MiB-aligned address, collapsed into one
 * huge page.
 */
static void probe_collapse(struct info *in)
{
	const size_t h = 2UL << 20;
	char *buf, *r, *a;
	FILE *f;
	int fd;

	in->shmem_enabled[0] = 0;
	f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
	if (f) {
		if (!fgets(in->shmem_enabled, sizeof(in->shmem_enabled), f))
			in->shmem_enabled[0] = 0;
		in->shmem_enabled[strcspn(in->shmem_enabled, "\n")] = 0;
		fclose(f);
	}
	in->collapse_err = ENOMEM;
	buf = malloc(h);
	fd = memfd_create("ufault-info", MFD_CLOEXEC);
	if (!buf || fd < 0) {
		in->collapse_err = fd < 0 ? errno : ENOMEM;
		goto out;
	}
	memset(buf, 'h', h);
	if (pwrite(fd, buf, h, 0) != (ssize_t)h) {
		in->collapse_err = errno ? errno : EIO;
		goto out;
	}
	r = mmap(NULL, 2 * h, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) {
		in->collapse_err = errno;
		goto out;
	}
	a = (char *)(((unsigned long)r + h - 1) & ~(h - 1));
	if (mmap(a, h, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != a)
		in->collapse_err = errno;
	else
		in->collapse_err = madvise(a, h, MADV_COLLAPSE) ? errno : 0;
	munmap(r, 2 * h);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
}

/* The probe object's store: read-only, every byte is 'u'. */
static ssize_t probe_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store;
	(void)off;
	memset(buf, 'u', len);
	return (ssize_t)len;
}

static const struct uf_store_ops probe_store = { .read = probe_read };

/* fault() of the probe's operation mapping: page n holds n + 1. */
static struct uf_page *probe_fault(struct uf_vma *vma, struct uf_fault_data *fdata)
{
	struct uf_page *page = uf_page_alloc(uf_vma_private(vma));

	if (!page) {
		fdata->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), (int)(fdata->pgoff + 1), UF_PAGE_SIZE);
	fdata->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations probe_ops = { .fault = probe_fault };

static void on_alarm(int sig)
{
	static const char msg[] = "ufault-info: a probe fault was not served within 5 s\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	_exit(1);
}

/* uf_mm_create(), then one real fault through each kind of mapping. */
static void probe_library(struct info *in)
{
	struct uf_object *obj = NULL;
	struct uf_mm *mm = NULL;
	volatile char *p;
	void *addr;
	char c;
	int ret;

	in->obj_fault_err = in->ops_fault_err = in->sys_fault_err = -1;
	in->mm_err = -uf_mm_create(NULL, &mm);
	if (in->mm_err)
		return;

	/* a fault that is never served would hang: bound it */
	signal(SIGALRM, on_alarm);
	alarm(5);

	ret = uf_object_create(mm, &probe_store, NULL, 2 * UF_PAGE_SIZE, &obj);
	if (!ret)
		ret = uf_mmap(mm, 2 * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &addr);
	if (!ret) {
		p = addr;
		ret = p[UF_PAGE_SIZE / 2] == 'u' ? 0 : -EIO;
		uf_munmap(mm, addr, 2 * UF_PAGE_SIZE);
	}
	in->obj_fault_err = -ret;
	uf_object_put(obj);

	ret = uf_mmap_ops(mm, 2 * UF_PAGE_SIZE, PROT_READ, &probe_ops, mm, &addr);
	if (!ret) {
		p = addr;
		c = p[UF_PAGE_SIZE + 7];
		ret = c == 2 ? 0 : -EIO;
		uf_munmap(mm, addr, 2 * UF_PAGE_SIZE);
	}
	in->ops_fault_err = -ret;

	/* a fault taken by the kernel: read(2) from a pipe into a fresh page */
	ret = uf_mmap_ops(mm, UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &probe_ops, mm, &addr);
	if (!ret) {
		int pfd[2];

		if (pipe(pfd) < 0) {
			ret = -errno;
		} else {
			if (write(pfd[1], "ufault", 6) != 6)
				ret = -EIO;
			else if (read(pfd[0], (char *)addr + 100, 6) != 6)
				ret = -errno;
			else
				ret = memcmp((char *)addr + 100, "ufault", 6) ? -EIO : 0;
			close(pfd[0]);
			close(pfd[1]);
		}
		uf_munmap(mm, addr, UF_PAGE_SIZE);
	}
	in->sys_fault_err = -ret;

	alarm(0);
	signal(SIGALRM, SIG_DFL);
	uf_mm_destroy(mm);
}

/* ------------------------------------------------------------------ */
/* Reporting                                                           */
/* ------------------------------------------------------------------ */

static const char *yes_or_err(int err)
{
	return err ? errstr(err) : "yes";
}

static void print_probes(const struct info *in)
{
	unsigned int i;

	printf("kernel:                        %s %s (%s)\n",
	       in->uts.sysname, in->uts.release, in->uts.machine);

	printf("/dev/userfaultfd:              ");
	if (in->dev_open_err)
		printf("cannot open: %s\n", errstr(in->dev_open_err));
	else if (in->dev_new_err)
		printf("opens, but USERFAULTFD_IOC_NEW fails: %s\n", errstr(in->dev_new_err));
	else
		printf("yes\n");

	printf("vm.unprivileged_userfaultfd:   ");
	if (in->sysctl_err)
		printf("unknown (%s)\n", errstr(in->sysctl_err));
	else
		printf("%d\n", in->sysctl);

	printf("CAP_SYS_PTRACE:                %s\n",
	       in->cap_ptrace < 0 ? "unknown" : in->cap_ptrace ? "yes" : "no");
	printf("userfaultfd(0):                %s\n", yes_or_err(in->sys_err));
	printf("userfaultfd(USER_MODE_ONLY):   %s\n", yes_or_err(in->sys_umo_err));

	printf("UFFDIO_API:                    ");
	if (!in->api_via)
		printf("no userfaultfd to ask\n");
	else if (in->api_err)
		printf("fails through %s: %s\n", in->api_via, errstr(in->api_err));
	else
		printf("features %#" PRIx64 " (through %s)\n", in->features, in->api_via);
	if (in->api_via && !in->api_err) {
		for (i = 0; i < NFEATURES; i++)
			printf("  %-22s %s\n", feature_names[i],
			       in->features & (1ULL << i) ? "yes" : "no");
		if (in->features >> NFEATURES)
			printf("  (unknown bits           %#" PRIx64 ")\n",
			       in->features & ~(((uint64_t)1 << NFEATURES) - 1));
	}

	printf("fork event (children keep it): %s\n", in->fork_err ? errstr(in->fork_err) : "yes");
	printf("PAGEMAP_SCAN:                  ");
	if (in->scan_err == EPROTO)
		printf("answers, but wrongly (%ld regions for 2 touched pages)\n",
		       in->scan_regions);
	else if (in->scan_err == ENOTTY || in->scan_err == EINVAL)
		printf("no: %s (kernel older than 6.7)\n", errstr(in->scan_err));
	else
		printf("%s\n", yes_or_err(in->scan_err));

	printf("MADV_COLLAPSE (memfd, 2 MiB):  %s (shmem_enabled: %s)\n",
	       in->collapse_err == EINVAL ? "no: EINVAL (kernel older than 6.1, or THP off)" :
	       yes_or_err(in->collapse_err),
	       in->shmem_enabled[0] ? in->shmem_enabled : "unknown");
	printf("uf_mm_create():                %s\n", in->mm_err ? errstr(in->mm_err) : "ok");
	if (!in->mm_err) {
		printf("fault on an object mapping:    %s\n",
		       in->obj_fault_err ? errstr(in->obj_fault_err) : "served");
		printf("fault on an operation mapping: %s\n",
		       in->ops_fault_err ? errstr(in->ops_fault_err) : "served");
		printf("fault inside read(2):          %s\n",
		       in->sys_fault_err ? errstr(in->sys_fault_err) : "served");
	}
	printf("\n");
}

/* Which userfaultfd the library opens (same order as src/as/mm.c). */
static const char *library_mode(const struct info *in)
{
	if (!in->dev_open_err && !in->dev_new_err)
		return "dev";
	if (!in->sys_err)
		return "sys";
	if (!in->sys_umo_err)
		return "umo";
	return NULL;
}

static void fix_access(void)
{
	printf("      give this user read-write access to /dev/userfaultfd\n"
	       "        (e.g. chgrp kvm /dev/userfaultfd; chmod 660 /dev/userfaultfd).\n");
}

static void why_not(const struct info *in)
{
	/* /dev/userfaultfd exists only on kernels built with userfaultfd */
	bool dev_exists = in->dev_open_err != ENOENT && in->dev_open_err != ENODEV;
	bool filtered = in->sys_umo_err == EPERM ||
			(in->sys_umo_err == ENOSYS && dev_exists);
	int err = in->mm_err;

	if (err == ENOSYS && !filtered) {
		if (in->sys_umo_err == ENOSYS)
			printf("  - the kernel was built without userfaultfd (CONFIG_USERFAULTFD=n):\n"
			       "    run on a kernel that has it.\n");
		else if (!has(in, UFFD_FEATURE_MISSING_SHMEM))
			printf("  - the kernel's userfaultfd cannot handle shared memory\n"
			       "    (no MISSING_SHMEM: Linux 4.11 or later is needed).\n");
		else
			printf("  - userfaultfd is not usable here: %s.\n", errstr(ENOSYS));
		return;
	}
	if (filtered) {
		printf("  - the userfaultfd system call is blocked for this process: even\n"
		       "    userfaultfd(UFFD_USER_MODE_ONLY), which the kernel allows to\n"
		       "    everyone, fails: %s.\n"
		       "    A seccomp filter (container runtime) or a security module\n"
		       "    refuses it.\n",
		       errstr(in->sys_umo_err));
		if (in->dev_open_err)
			printf("    /dev/userfaultfd: %s.\n", errstr(in->dev_open_err));
		printf("    Either of these fixes it:\n"
		       "      allow the userfaultfd system call in the seccomp profile, or\n");
		fix_access();
		return;
	}
	if (err == EPERM || err == EACCES) {
		printf("  - userfaultfd is not allowed to this process: %s.\n", errstr(err));
		if (in->dev_open_err)
			printf("    /dev/userfaultfd: %s.\n", errstr(in->dev_open_err));
		if (in->sys_err == EPERM && in->sysctl == 0 && in->cap_ptrace != 1)
			printf("    userfaultfd(0): vm.unprivileged_userfaultfd is 0 and this\n"
			       "    process lacks CAP_SYS_PTRACE.\n");
		if (in->sys_umo_err == EINVAL)
			printf("    userfaultfd(UFFD_USER_MODE_ONLY): this kernel predates it\n"
			       "    (Linux 5.11), so there is no unprivileged fallback.\n");
		printf("    Any one of these fixes it:\n"
		       "      run as root (or with CAP_SYS_PTRACE), or\n"
		       "      sysctl -w vm.unprivileged_userfaultfd=1, or\n");
		fix_access();
		return;
	}
	if (err)
		printf("  - uf_mm_create() fails: %s.\n", errstr(err));
	else
		printf("  - userfaultfd opens, but a test fault failed (object mapping: %s;\n"
		       "    operation mapping: %s).\n",
		       in->obj_fault_err ? errstr(in->obj_fault_err) : "ok",
		       in->ops_fault_err ? errstr(in->ops_fault_err) : "ok");
}

static bool works(const struct info *in)
{
	return in->mm_err == 0 && in->obj_fault_err == 0 && in->ops_fault_err == 0;
}

static void print_verdict(const struct info *in)
{
	const char *mode = library_mode(in);

	if (!works(in)) {
		printf("verdict: ufault cannot work here");
		if (in->mm_err)
			printf(" (uf_mm_create: %s)", errstr(in->mm_err));
		printf("\n");
		return;
	}
	printf("verdict: ufault works here (%s%s)\n",
	       mode && !strcmp(mode, "dev") ? "/dev/userfaultfd" :
	       mode && !strcmp(mode, "sys") ? "userfaultfd(2)" :
	       "userfaultfd(2), user-mode faults only",
	       has(in, UFFD_FEATURE_WP_ASYNC) && !in->scan_err ? ", asynchronous dirty tracking" :
	       ", dirty tracking by fallback");
}

static void print_plain_words(const struct info *in)
{
	const char *mode = library_mode(in);
	bool wp_async = has(in, UFFD_FEATURE_WP_ASYNC) && has(in, UFFD_FEATURE_WP_UNPOPULATED) &&
			has(in, UFFD_FEATURE_WP_HUGETLBFS_SHMEM);

	if (!works(in)) {
		printf("What this means: ufault cannot work here.\n");
		why_not(in);
		printf("\n");
		return;
	}

	printf("What will and will not work here:\n");

	if (!in->sys_fault_err) {
		printf("  + faults taken inside system calls are served: read(2) into a\n"
		       "    mapping, write(2) from one, and other kernel accesses work as with\n"
		       "    the kernel's own mmap (%s).\n",
		       mode && !strcmp(mode, "dev") ? "/dev/userfaultfd can be opened" :
		       in->cap_ptrace == 1 ? "userfaultfd(2) with CAP_SYS_PTRACE" :
		       "userfaultfd(2), allowed by vm.unprivileged_userfaultfd=1");
	} else {
		printf("  - faults taken inside system calls are NOT served (the probe's\n"
		       "    read(2) got %s).\n", errstr(in->sys_fault_err));
		if (mode && !strcmp(mode, "umo"))
			printf("    userfaultfd is only allowed with UFFD_USER_MODE_ONLY here, so\n");
		printf("    read(2) into a page that is not yet in the cache fails with EFAULT\n"
		       "    (pages already cached work).  Touch the pages first, or use\n"
		       "    uf_object_pread()/uf_object_pwrite().  To have them served: run as\n"
		       "    root, or sysctl -w vm.unprivileged_userfaultfd=1, or give this user\n"
		       "    read-write access to /dev/userfaultfd.\n");
	}

	if (!in->fork_err)
		printf("  + fork(): children keep their ufault memory (the fork event is\n"
		       "    granted), served by the parent's handlers; their uf_* calls fail\n"
		       "    with ECHILD.\n");
	else
		printf("  - fork(): children do not inherit ufault memory (MADV_DONTFORK: a\n"
		       "    touch there is SIGSEGV): the fork event %s.\n",
		       in->fork_err == EPERM ? "needs CAP_SYS_PTRACE" : "is not offered here");

	if (wp_async && !in->scan_err)
		printf("  + dirty tracking of shared writable mappings uses asynchronous\n"
		       "    write-protect + PAGEMAP_SCAN: writes cost nothing, and uf_msync()\n"
		       "    writes back exactly the pages written.\n");
	else
		printf("  - no asynchronous write-protect%s: uf_msync() and\n"
		       "    uf_object_sync() treat every cached page of a shared writable\n"
		       "    mapping as dirty (correct, slower sync; Linux 6.7+ has it).\n",
		       wp_async && in->scan_err ? " usable (PAGEMAP_SCAN fails)" : "");

	if (has(in, UFFD_FEATURE_POISON))
		printf("  + a failed access gets SIGBUS (BUS_ADRERR) from the kernel's poison\n"
		       "    marker (UFFDIO_POISON), and a system call touching the page fails\n"
		       "    with EFAULT.  fault() answering SIGBUS on an operation mapping\n"
		       "    poisons the page for every later touch; a store error on an object\n"
		       "    page poisons it until the faulting thread has retried (at most\n"
		       "    50 ms), then the next access reads the store again.\n");
	else
		printf("  - no UFFDIO_POISON (Linux 6.6+): fault() answering SIGBUS is delivered\n"
		       "    as a queued SIGBUS to the faulting thread, on operation mappings\n"
		       "    too; the next touch faults and asks fault() again.\n");

	if (!has(in, UFFD_FEATURE_EXACT_ADDRESS))
		printf("  - no EXACT_ADDRESS: fdata->address is rounded down to the page.\n");

	if (!in->collapse_err)
		printf("  + huge extents: fully cached 2 MiB extents are collapsed into huge\n"
		       "    pages in the background; read-only mappings map them with one\n"
		       "    page-table entry (warm reads several times the kernel's tmpfs\n"
		       "    speed).  UF_MM_NO_HUGE turns it off.\n");
	else
		printf("  - no huge extents: MADV_COLLAPSE of a memfd fails here (%s);\n"
		       "    caches stay in 4 KiB pages (correct, warm reads at the kernel's\n"
		       "    tmpfs speed).  It needs Linux 6.1+ with transparent huge pages.\n",
		       errstr(in->collapse_err));

	printf("  + truncate, hole punch, nonlinear windows (uf_remap_file_pages) and the\n"
	       "    memory budget need nothing more from the kernel.\n");
	printf("\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ufault-info [--quiet]\n"
		   "Print what this kernel and this process allow ufault to do.\n"
		   "  -q, --quiet   print only the verdict line\n"
		   "  -h, --help    this text\n"
		   "  --version     the version of ufault\n"
		   "Exit status: 0 if ufault can work here, 1 if not, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct info in = { .cap_ptrace = -1 };
	int opt;

	while ((opt = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			in.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ufault-info (ufault) %s\n", UF_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	if (uname(&in.uts) < 0)
		strcpy(in.uts.release, "unknown");
	in.sysctl_err = read_sysctl(&in.sysctl);
	in.cap_ptrace = cap_ptrace();
	probe_uffd(&in);
	probe_pagemap_scan(&in);
	probe_collapse(&in);
	probe_library(&in);

	if (!in.quiet) {
		print_probes(&in);
		print_plain_words(&in);
	}
	print_verdict(&in);
	return works(&in) ? 0 : 1;
}
