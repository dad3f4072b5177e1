// SPDX-License-Identifier: MIT
/* Description: a client of another uid (65534) attached O_RDONLY changes nothing that others read: the cache fd it is given (O_PATH: it is served by copy) refuses writes, punches and truncates, cannot be reopened writable through /proc or chmod-ed, cannot be mapped writable, cannot be filled through a userfaultfd of its own, and the server refuses its write, truncate, punch and sync requests (-EROFS); every page others read, and SOURCE after a sync, stay SOURCE's bytes */
#define _GNU_SOURCE
#include "attach-test.h"

#include <dirent.h>
#include <sys/stat.h>

#define SIZE	(4 << 20)
#define PG	4096
#define NOBODY	65534

/* The routes an attacker tries: a bit each when it was let through. */
enum route {
	R_REOPEN_RW	= 1 << 0,	/* open("/proc/self/fd/N", O_RDWR) */
	R_REOPEN_WR	= 1 << 1,	/* ... O_WRONLY */
	R_PWRITE	= 1 << 2,	/* pwrite() on the fd given */
	R_PUNCH		= 1 << 3,	/* fallocate(PUNCH_HOLE) on it */
	R_FTRUNCATE	= 1 << 4,
	R_FCHMOD	= 1 << 5,
	R_MMAP_RW	= 1 << 6,	/* a shared writable mapping of it */
	R_MPROTECT	= 1 << 7,	/* a shared read mapping made writable */
	R_MADV_REMOVE	= 1 << 8,
	R_UFFD		= 1 << 9,	/* its own userfaultfd on a shared mapping */
	R_REQ_PWRITE	= 1 << 10,	/* requests on a connection of its own */
	R_REQ_TRUNCATE	= 1 << 11,
	R_REQ_PUNCH	= 1 << 12,
	R_REQ_SYNC	= 1 << 13,
};

static const char *const route_names[] = {
	"reopen O_RDWR", "reopen O_WRONLY", "pwrite", "punch", "ftruncate", "fchmod",
	"mmap shared writable", "mprotect writable", "MADV_REMOVE", "userfaultfd fill",
	"write request", "truncate request", "punch request", "sync request",
};

/* The wire format as uf_object_attach(3) documents it. */
struct hello {
	char magic[8];
	uint8_t version, pad[3];
	uint32_t oflags;
};

struct req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};

struct rep {
	int64_t ret;
	uint64_t pad;
};

enum { OP_PREAD = 5, OP_PWRITE, OP_TRUNCATE, OP_PUNCH, OP_SYNC };

/* The fd of the cache in this process: the one uf_object_attach got. */
static int cache_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1;

	CHECK(d, "opendir: %s", strerror(errno));
	while (fd < 0 && (e = readdir(d))) {
		char path[300], link[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strstr(link, "memfd:ufault-cache"))
			fd = atoi(e->d_name);
	}
	closedir(d);
	CHECK(fd >= 0, "no cache fd here");
	return fd;
}

static unsigned long try_fd(int fd)
{
	char path[64], junk[PG];
	unsigned long got = 0;
	void *q;
	int rw;

	memset(junk, 'X', sizeof(junk));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rw = open(path, O_RDWR | O_CLOEXEC);
	if (rw >= 0) {
		got |= R_REOPEN_RW;
		if (pwrite(rw, junk, PG, 0)) {
		}
		close(rw);
	}
	rw = open(path, O_WRONLY | O_CLOEXEC);
	if (rw >= 0) {
		got |= R_REOPEN_WR;
		if (pwrite(rw, junk, PG, PG)) {
		}
		close(rw);
	}
	if (pwrite(fd, junk, PG, 2 * PG) > 0)
		got |= R_PWRITE;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * PG, PG) == 0)
		got |= R_PUNCH;
	if (ftruncate(fd, SIZE / 2) == 0)
		got |= R_FTRUNCATE;
	if (fchmod(fd, 0666) == 0)
		got |= R_FCHMOD;
	q = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4 * PG);
	if (q != MAP_FAILED) {
		got |= R_MMAP_RW;
		memset(q, 'X', PG);
		munmap(q, PG);
	}
	/* (served by copy, it holds no file it can map: attach-readonly-hole) */
	q = mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd, 5 * PG);
	if (q == MAP_FAILED)
		return got;
	if (mprotect(q, 2 * PG, PROT_READ | PROT_WRITE) == 0) {
		got |= R_MPROTECT;
		memset(q, 'X', PG);
	}
	if (madvise(q, 2 * PG, MADV_REMOVE) == 0)
		got |= R_MADV_REMOVE;
	munmap(q, 2 * PG);
	return got;
}

/* Its own userfaultfd on a shared mapping of the fd, filling a page the
 * cache does not hold yet (the second half: nobody read it). */
static unsigned long try_uffd(int fd)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MISSING_SHMEM };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_copy cp = { 0 };
	unsigned long got = 0;
	char *junk;
	void *q;
	int u = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (u < 0 || ioctl(u, UFFDIO_API, &api) < 0) {
		if (u >= 0)
			close(u);
		return 0;
	}
	q = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, SIZE - PG);
	if (q == MAP_FAILED) {
		close(u);
		return 0;
	}
	junk = aligned_alloc(PG, PG);
	memset(junk, 'X', PG);
	reg.range.start = (unsigned long)q;
	reg.range.len = PG;
	if (ioctl(u, UFFDIO_REGISTER, &reg) == 0) {
		cp.dst = (unsigned long)q;
		cp.src = (unsigned long)junk;
		cp.len = PG;
		if (ioctl(u, UFFDIO_COPY, &cp) == 0)
			got |= R_UFFD;
	}
	munmap(q, PG);
	free(junk);
	close(u);
	return got;
}

/* Requests on a connection of its own, as a hostile client sends them
 * (the library refuses them before they leave, this one does not). */
static unsigned long try_requests(const char *sock)
{
	struct hello h = { .magic = "UFATTACH", .version = 1, .oflags = O_RDONLY };
	static const uint32_t ops[] = { OP_PWRITE, OP_TRUNCATE, OP_PUNCH, OP_SYNC };
	static const unsigned long bits[] = { R_REQ_PWRITE, R_REQ_TRUNCATE, R_REQ_PUNCH,
					      R_REQ_SYNC };
	char ans[24], junk[16];
	unsigned long got = 0;
	unsigned int k;
	int s = ut_connect(sock);

	CHECK(s >= 0, "connect: %s", strerror(errno));
	CHECK(write(s, &h, sizeof(h)) == sizeof(h), "hello");
	CHECK(recv(s, ans, sizeof(ans), MSG_WAITALL) == sizeof(ans), "answer");
	memset(junk, 'X', sizeof(junk));
	for (k = 0; k < 4; k++) {
		struct req r = { .op = ops[k] };
		struct rep p;

		if (ops[k] == OP_PWRITE)
			r.b = sizeof(junk);
		if (ops[k] == OP_PUNCH)
			r.b = PG;
		CHECK(write(s, &r, sizeof(r)) == sizeof(r), "request");
		if (ops[k] == OP_PWRITE)
			CHECK(write(s, junk, sizeof(junk)) == sizeof(junk), "bytes");
		CHECK(recv(s, &p, sizeof(p), MSG_WAITALL) == sizeof(p), "reply to %u", ops[k]);
		if (p.ret >= 0)
			got |= bits[k];
	}
	close(s);
	return got;
}

static void attacker(int in, int out, void *arg)
{
	const char *sock = arg;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned long got;
	unsigned char *p;
	size_t off;
	int fd;

	CHECK(setgid(NOBODY) == 0 && setuid(NOBODY) == 0, "setuid: %s", strerror(errno));
	prctl(PR_SET_DUMPABLE, 1);
	ut_watchdog(60);
	obj = ut_attach(&mm, sock, O_RDONLY);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	/* the first half cached */
	for (off = 0; off < SIZE / 2; off += PG)
		CHECK(p[off] == ut_pattern(off), "byte at %zu", off);
	/* what the library refuses itself */
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), -EROFS);
	CHECK_RET(uf_object_truncate(obj, 0), -EROFS);
	CHECK_RET(uf_object_punch_hole(obj, 0, PG), -EROFS);
	CHECK_RET(uf_mprotect(mm, p, PG, PROT_READ | PROT_WRITE), -EACCES);
	/* and around it */
	fd = cache_fd();
	got = try_fd(fd) | try_uffd(fd) | try_requests(sock);
	/* its private copy is its own to write */
	CHECK(mprotect(p, PG, PROT_READ | PROT_WRITE) == 0 || errno == EACCES, "mprotect");
	ut_say(out, (long)got);
	ut_hear(in);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	const char *extra[] = { "--allow-uid", "65534", "--allow-uid", "0", NULL };
	struct ut_server srv;
	struct ut_client c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	unsigned long got;
	size_t off, bad = 0;
	unsigned int k;
	int ret;

	if (geteuid() != 0) {
		printf("skip: a second uid needs root\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, SIZE, extra);
	/* the tenant's way in (the socket's own permissions are not what
	 * this test is about) */
	CHECK(chmod(srv.dir, 0755) == 0 && chmod(srv.sock, 0777) == 0, "chmod: %s",
	      strerror(errno));
	ut_client_start(&c, attacker, srv.sock);
	/* (after the forks: no thread of the test's at a fork, ThreadSanitizer) */
	ut_watchdog(120);
	got = (unsigned long)ut_hear(c.from);
	CHECK(got != (unsigned long)-1, "the attacker died: status %d", ut_client_wait(&c));
	for (k = 0; k < sizeof(route_names) / sizeof(route_names[0]); k++)
		if (got & (1UL << k))
			printf("let through: %s\n", route_names[k]);

	/* what everyone reads: SOURCE's bytes, and SOURCE after a sync */
	mm = ut_mm_create(NULL);
	ret = uf_object_attach(mm, srv.sock, O_RDWR, &obj);
	CHECK_RET(ret, 0);
	CHECK_RET(uf_object_size(obj), SIZE);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (off = 0; off < SIZE; off++)
		if (p[off] != ut_pattern(off) && bad++ < 4)
			printf("byte %zu reads %#x, SOURCE has %#x\n", off, p[off],
			       ut_pattern(off));
	CHECK_RET(uf_object_sync(obj), 0);
	for (off = 0; off < SIZE; off += 509)
		if (ut_file_byte(srv.src, off) != ut_pattern(off) && bad++ < 8)
			printf("SOURCE byte %zu changed\n", off);
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	CHECK(!got, "%lu routes let through", (unsigned long)__builtin_popcountl(got));
	CHECK(!bad, "%zu bytes changed", bad);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	printf("pass: nothing a read-only tenant tried changed a byte\n");
	return 0;
}
