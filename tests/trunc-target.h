/* SPDX-License-Identifier: MIT */
/*
 * For the trunc-* and nonlinear-* tests: one scenario, several targets.
 * A target is a ufault object on one of the stores (memory, tmpfs file,
 * disk file) or, as the oracle, the kernel's own mmap of a tmpfs or disk
 * file.  Everything lives in a struct the test owns: no global state.
 * Not a test program itself (the Makefile builds tests/<name>.c only).
 */
#ifndef UT_TRUNC_TARGET_H
#define UT_TRUNC_TARGET_H

#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TT_UNUSED __attribute__((unused))
#define PG UF_PAGE_SIZE

enum tt_kind { TT_UF_MEM, TT_UF_TMPFS, TT_UF_DISK, TT_K_TMPFS, TT_K_DISK, TT_NKINDS };

static const char *const tt_names[TT_NKINDS] TT_UNUSED = {
	"ufault/mem", "ufault/tmpfs", "ufault/disk", "kernel/tmpfs", "kernel/disk",
};

struct tt {
	enum tt_kind kind;
	const char *name;
	struct uf_mm *mm;
	struct uf_object *obj;	/* ufault targets */
	int fd;			/* kernel targets: the file */
	char path[256];		/* file targets, else "" */
};

static inline bool tt_is_kernel(const struct tt *t)
{
	return t->kind >= TT_K_TMPFS;
}

/* A target of @size bytes holding ut_pattern() bytes. */
static TT_UNUSED void tt_open(struct tt *t, struct uf_mm *mm, enum tt_kind kind, uint64_t size)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->name = tt_names[kind];
	t->mm = mm;
	t->fd = -1;
	if (kind < TT_K_TMPFS) {
		t->obj = ut_object(mm, (enum ut_store)kind, size, t->path, sizeof(t->path));
	} else {
		t->fd = ut_make_file(kind == TT_K_TMPFS ? "/dev/shm" : "/var/tmp", size,
				     t->path, sizeof(t->path));
	}
}

static TT_UNUSED void tt_close(struct tt *t)
{
	if (t->obj)
		uf_object_put(t->obj);
	if (t->fd >= 0)
		close(t->fd);
	if (t->path[0])
		unlink(t->path);
	t->obj = NULL;
	t->fd = -1;
}

static TT_UNUSED unsigned char *tt_map(struct tt *t, size_t len, int prot, bool shared,
				       uint64_t off)
{
	void *p;

	if (t->obj) {
		int ret = uf_mmap(t->mm, len, prot, shared ? UF_MAP_SHARED : UF_MAP_PRIVATE,
				  t->obj, off, &p);

		CHECK(ret == 0, "%s: uf_mmap: %s", t->name, strerror(-ret));
	} else {
		p = mmap(NULL, len, prot, shared ? MAP_SHARED : MAP_PRIVATE, t->fd, (off_t)off);
		CHECK(p != MAP_FAILED, "%s: mmap: %s", t->name, strerror(errno));
	}
	return p;
}

static TT_UNUSED void tt_unmap(struct tt *t, void *p, size_t len)
{
	if (t->obj)
		CHECK_RET(uf_munmap(t->mm, p, len), 0);
	else
		CHECK_RET(munmap(p, len), 0);
}

static TT_UNUSED int tt_truncate(struct tt *t, uint64_t size)
{
	if (t->obj)
		return uf_object_truncate(t->obj, size);
	return ftruncate(t->fd, (off_t)size) < 0 ? -errno : 0;
}

/* Punch [off, off + len), clamped at EOF as ufault documents it. */
static TT_UNUSED int tt_punch(struct tt *t, uint64_t off, uint64_t len)
{
	struct stat st;

	if (t->obj)
		return uf_object_punch_hole(t->obj, off, len);
	CHECK(fstat(t->fd, &st) == 0, "fstat");
	if (off >= (uint64_t)st.st_size)
		return 0;
	if (off + len > (uint64_t)st.st_size)
		len = (uint64_t)st.st_size - off;
	return fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			 (off_t)len) < 0 ? -errno : 0;
}

static TT_UNUSED ssize_t tt_pread(struct tt *t, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (t->obj)
		return uf_object_pread(t->obj, buf, len, off);
	n = pread(t->fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static TT_UNUSED ssize_t tt_pwrite(struct tt *t, const void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (t->obj)
		return uf_object_pwrite(t->obj, buf, len, off);
	n = pwrite(t->fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}

static TT_UNUSED int tt_msync(struct tt *t, void *p, size_t len)
{
	if (t->obj)
		return uf_msync(t->mm, p, len, UF_MS_SYNC);
	return msync(p, len, MS_SYNC) < 0 ? -errno : 0;
}

/* A nonlinear window: uf_remap_file_pages(), or the kernel's emulated
 * remap_file_pages(2) on its own mapping. */
static TT_UNUSED int tt_remap(struct tt *t, void *start, size_t size, uint64_t pgoff)
{
	if (t->obj)
		return uf_remap_file_pages(t->mm, start, size, 0, pgoff, 0);
	return remap_file_pages(start, size, 0, (size_t)pgoff, 0) < 0 ? -errno : 0;
}

static TT_UNUSED uint64_t tt_size(struct tt *t)
{
	struct stat st;

	if (t->obj)
		return uf_object_size(t->obj);
	CHECK(fstat(t->fd, &st) == 0, "fstat");
	return (uint64_t)st.st_size;
}

/* The store's own size: stat() of the file, -1 for the memory store. */
static TT_UNUSED int64_t tt_store_size(struct tt *t)
{
	struct stat st;

	if (!t->path[0])
		return -1;
	CHECK(stat(t->path, &st) == 0, "stat %s: %s", t->path, strerror(errno));
	return (int64_t)st.st_size;
}

/* Read the store's bytes with plain pread() on the file; -1 for memory. */
static TT_UNUSED ssize_t tt_store_pread(struct tt *t, void *buf, size_t len, uint64_t off)
{
	ssize_t n;
	int fd;

	if (!t->path[0])
		return -1;
	fd = open(t->path, O_RDONLY);
	CHECK(fd >= 0, "open %s: %s", t->path, strerror(errno));
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	return n;
}

/* @len bytes at @p (a mapping) must equal @want; any signal is a failure. */
static TT_UNUSED void tt_expect_bytes(const char *what, const volatile unsigned char *p,
				      const unsigned char *want, size_t len)
{
	unsigned char *got = malloc(len ? len : 1);
	struct ut_fault f;
	size_t i;

	CHECK(got, "out of memory");
	CHECK(ut_copy_from(got, p, len, &f) == 0, "%s: signal %d at %p", what, f.sig, f.addr);
	for (i = 0; i < len; i++)
		CHECK(got[i] == want[i], "%s: byte %zu = %#x, want %#x", what, i, got[i], want[i]);
	free(got);
}

/* Reading @p must raise SIGBUS with si_addr == @p. */
static TT_UNUSED void tt_expect_sigbus(const char *what, const volatile unsigned char *p)
{
	struct ut_fault f;
	unsigned char v = 0;
	int sig = ut_read(p, &v, &f);

	CHECK(sig == SIGBUS, "%s: read at %p gave signal %d (value %#x), want SIGBUS", what,
	      (const void *)p, sig, v);
	CHECK(f.addr == (const void *)p, "%s: si_addr %p, want %p", what, f.addr, (const void *)p);
}

/*
 * Write one byte at @p, catching SIGBUS/SIGSEGV.  Not ut_write(): gcc -O2
 * drops its store of the jump buffer pointer as dead (the volatile store
 * between does not order it), so its fault is not caught.  ut_copy_from()
 * writes through an unsigned char pointer, which may alias the pointer,
 * and works.
 */
static TT_UNUSED int tt_write(volatile unsigned char *p, unsigned char val, struct ut_fault *f)
{
	return ut_copy_from((void *)p, &val, 1, f);
}

/* Writing @p must raise SIGBUS with si_addr == @p. */
static TT_UNUSED void tt_expect_sigbus_write(const char *what, volatile unsigned char *p)
{
	struct ut_fault f;
	int sig = tt_write(p, 0x5a, &f);

	CHECK(sig == SIGBUS, "%s: write at %p gave signal %d, want SIGBUS", what, (void *)p, sig);
	CHECK(f.addr == (void *)p, "%s: si_addr %p, want %p", what, f.addr, (void *)p);
}

#endif
