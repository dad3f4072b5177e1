/* SPDX-License-Identifier: MIT */
/*
 * Test helpers: checks, catching SIGBUS/SIGSEGV around one access, temp
 * files.  Each test is one program: exit 0 pass, 1 fail, 77 skip.
 */
#ifndef UT_HELPERS_H
#define UT_HELPERS_H

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ufault.h>

#define UT_PASS 0
#define UT_FAIL 1
#define UT_SKIP 77

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,	\
			__LINE__, #cond);				\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		exit(UT_FAIL);						\
	}								\
} while (0)

#define CHECK_RET(expr, want) do {					\
	long __r = (long)(expr), __w = (long)(want);			\
	CHECK(__r == __w, "%s returned %ld, want %ld", #expr, __r, __w); \
} while (0)

/* An access caught: which signal, and si_addr / si_code. */
struct ut_fault {
	int sig;		/* 0: no signal */
	void *addr;
	int code;
};

/* Install SIGBUS and SIGSEGV handlers (per-thread jump buffers). */
void ut_catch_signals(void);

/* Read/write one byte; return the signal caught (0 for none). */
int ut_read(const volatile void *p, unsigned char *val, struct ut_fault *f);
int ut_write(volatile void *p, unsigned char val, struct ut_fault *f);
/* Copy @len bytes out of a mapping, catching the first fault. */
int ut_copy_from(void *dst, const volatile void *src, size_t len, struct ut_fault *f);

/* uf_mm_create, or exit 77 when userfaultfd is not available here. */
struct uf_mm *ut_mm_create(const struct uf_mm_config *cfg);

/* A temporary file of @size bytes holding ut_pattern() bytes, in @dir
 * ("/dev/shm" for tmpfs, "/var/tmp" for disk).  Path written to @path. */
int ut_make_file(const char *dir, uint64_t size, char *path, size_t pathlen);
/* The test pattern: byte at @off of a file made by ut_make_file(). */
static inline unsigned char ut_pattern(uint64_t off)
{
	return (unsigned char)((off * 7 + (off >> 12) * 13 + 1) & 0xff);
}

/* Fill @buf with the pattern's @len bytes from @off. */
void ut_fill_pattern(void *buf, size_t len, uint64_t off);

/* Grow the pool of 2 MiB huge pages (/proc/sys/vm/nr_hugepages) by @n,
 * given back at exit; false, and the pool as it was, when @n more cannot
 * be had here. */
bool ut_huge_pool_grow(long n);

/* Stores that tests run over. */
enum ut_store { UT_STORE_MEM, UT_STORE_TMPFS, UT_STORE_DISK, UT_NSTORES };
extern const char *const ut_store_names[UT_NSTORES];
/* An object of @size bytes holding the pattern, on @store; for file
 * stores the path goes to @path (else ""). */
struct uf_object *ut_object(struct uf_mm *mm, enum ut_store store, uint64_t size,
			    char *path, size_t pathlen);

/* The byte at @off of the file @path (a failed read fails the test). */
unsigned char ut_file_byte(const char *path, uint64_t off);

/* Huge extents: does MADV_COLLAPSE work here (else a test skips)?  How
 * many KiB of the mapping holding @addr are mapped by PMDs (smaps)?  Wait
 * (bounded) until @mm reports @want huge extents; return what it does. */
bool ut_collapse_works(void);
uint64_t ut_pmd_mapped_kb(const void *addr);
uint64_t ut_wait_huge(struct uf_mm *mm, uint64_t want);

/* Does this process get the userfaultfd fork event (fork children keep
 * their ufault memory)?  It needs CAP_SYS_PTRACE. */
bool ut_fork_events(void);

#endif
