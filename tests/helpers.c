// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread sigjmp_buf *volatile ut_jmp;
static __thread struct ut_fault ut_last;

static void ut_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!ut_jmp) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	ut_last.sig = sig;
	ut_last.addr = si->si_addr;
	ut_last.code = si->si_code;
	siglongjmp(*ut_jmp, 1);
}

void ut_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ut_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
}

int ut_copy_from(void *dst, const volatile void *src, size_t len, struct ut_fault *f)
{
	sigjmp_buf jb;
	volatile size_t i = 0;

	ut_last.sig = 0;
	if (sigsetjmp(jb, 1) == 0) {
		ut_jmp = &jb;
		for (; i < len; i++)
			((unsigned char *)dst)[i] = ((const volatile unsigned char *)src)[i];
	}
	ut_jmp = NULL;
	if (f)
		*f = ut_last;
	return ut_last.sig;
}

int ut_read(const volatile void *p, unsigned char *val, struct ut_fault *f)
{
	return ut_copy_from(val, p, 1, f);
}

int ut_write(volatile void *p, unsigned char val, struct ut_fault *f)
{
	sigjmp_buf jb;

	ut_last.sig = 0;
	if (sigsetjmp(jb, 1) == 0) {
		ut_jmp = &jb;
		*(volatile unsigned char *)p = val;
	}
	ut_jmp = NULL;
	if (f)
		*f = ut_last;
	return ut_last.sig;
}

struct uf_mm *ut_mm_create(const struct uf_mm_config *cfg)
{
	struct uf_mm *mm = NULL;
	int ret = uf_mm_create(cfg, &mm);

	if (ret == -EPERM || ret == -ENOSYS) {
		fprintf(stderr, "skip: userfaultfd not available here (%s)\n", strerror(-ret));
		exit(UT_SKIP);
	}
	CHECK(ret == 0, "uf_mm_create: %s", strerror(-ret));
	return mm;
}

int ut_make_file(const char *dir, uint64_t size, char *path, size_t pathlen)
{
	static char buf[1 << 16];
	uint64_t off = 0;
	int fd;

	snprintf(path, pathlen, "%s/ufault-test-XXXXXX", dir);
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
	while (off < size) {
		size_t n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);

		ut_fill_pattern(buf, n, off);
		CHECK(pwrite(fd, buf, n, (off_t)off) == (ssize_t)n, "pwrite: %s", strerror(errno));
		off += n;
	}
	return fd;
}

void ut_fill_pattern(void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = ut_pattern(off + i);
}

/* The pool of huge pages before ut_huge_pool_grow(), or -1. */
static long huge_pool_was = -1;

/* Read the pool's size (@set < 0), or set it to @set: the size, or -1. */
static long huge_pool(long set)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", set < 0 ? "r" : "w");
	long n = -1;

	if (!f)
		return -1;
	if (set < 0 && fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (set >= 0)
		n = fprintf(f, "%ld\n", set) > 0 ? set : -1;
	if (fclose(f))
		n = -1;
	return n;
}

static void huge_pool_restore(void)
{
	if (huge_pool_was >= 0)
		huge_pool(huge_pool_was);
}

bool ut_huge_pool_grow(long n)
{
	long was = huge_pool(-1);

	if (was < 0 || huge_pool(was + n) < 0 || huge_pool(-1) < was + n) {
		if (was >= 0)
			huge_pool(was);
		return false;
	}
	if (huge_pool_was < 0) {
		huge_pool_was = was;
		atexit(huge_pool_restore);
	}
	return true;
}

const char *const ut_store_names[UT_NSTORES] = { "mem", "tmpfs", "disk" };

struct uf_object *ut_object(struct uf_mm *mm, enum ut_store store, uint64_t size,
			    char *path, size_t pathlen)
{
	struct uf_object *obj = NULL;
	int ret, fd;

	path[0] = 0;
	if (store == UT_STORE_MEM) {
		static char buf[1 << 16];
		uint64_t off = 0;

		ret = uf_object_create_mem(mm, size, &obj);
		CHECK(ret == 0, "uf_object_create_mem: %s", strerror(-ret));
		while (off < size) {
			size_t n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf), i;

			for (i = 0; i < n; i++)
				buf[i] = (char)ut_pattern(off + i);
			CHECK(uf_object_pwrite(obj, buf, n, off) == (ssize_t)n, "pwrite");
			off += n;
		}
		ret = uf_object_sync(obj);
		CHECK(ret == 0, "sync: %s", strerror(-ret));
		return obj;
	}
	fd = ut_make_file(store == UT_STORE_TMPFS ? "/dev/shm" : "/var/tmp", size, path, pathlen);
	close(fd);
	ret = uf_object_open(mm, path, O_RDWR, &obj);
	CHECK(ret == 0, "uf_object_open %s: %s", path, strerror(-ret));
	return obj;
}

unsigned char ut_file_byte(const char *path, uint64_t off)
{
	unsigned char b = 0;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1, "read %s", path);
	close(fd);
	return b;
}

/* Does MADV_COLLAPSE make a huge page of a fully written, 2 MiB-aligned
 * memfd extent here (plain system calls, as ufault does it)? */
bool ut_collapse_works(void)
{
	const size_t h = 2UL << 20;
	bool ok = false;
	char *r, *a;
	int fd;

	fd = memfd_create("ut-collapse", MFD_CLOEXEC);
	if (fd < 0)
		return false;
	r = mmap(NULL, 2 * h, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r != MAP_FAILED && ftruncate(fd, (off_t)h) == 0) {
		a = (char *)(((unsigned long)r + h - 1) & ~(h - 1));
		if (mmap(a, h, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == a) {
			memset(a, 1, h);
			ok = madvise(a, h, 25 /* MADV_COLLAPSE */) == 0 &&
			     ut_pmd_mapped_kb(a) >= 2048;
		}
	}
	if (r != MAP_FAILED)
		munmap(r, 2 * h);
	close(fd);
	return ok;
}

uint64_t ut_pmd_mapped_kb(const void *addr)
{
	unsigned long a = (unsigned long)addr, s, e;
	uint64_t kb = 0, v;
	char line[256];
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *dash = strchr(line, '-'), *sp = strchr(line, ' ');

		if (dash && sp && dash < sp && sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = a >= s && a < e;
			continue;
		}
		if (in && (sscanf(line, "ShmemPmdMapped: %" SCNu64, &v) == 1 ||
			   sscanf(line, "FilePmdMapped: %" SCNu64, &v) == 1))
			kb += v;
	}
	fclose(f);
	return kb;
}

uint64_t ut_wait_huge(struct uf_mm *mm, uint64_t want)
{
	struct uf_stats st;
	int i;

	/* collapses run in the background: wait (bounded) for them */
	for (i = 0; i < 6000; i++) {
		CHECK(uf_mm_stats(mm, &st) == 0, "uf_mm_stats");
		if (st.huge_extents >= want)
			break;
		usleep(10000);
	}
	return st.huge_extents;
}

/* Does this process get the userfaultfd fork event (CAP_SYS_PTRACE)?
 * Asked as ufault asks: UFFDIO_API on a fresh userfaultfd. */
bool ut_fork_events(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_FORK };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	bool ok;

	if (fd < 0)
		return false;
	ok = ioctl(fd, UFFDIO_API, &api) == 0;
	close(fd);
	return ok;
}
