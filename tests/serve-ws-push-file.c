// SPDX-License-Identifier: MIT
/* Description: a working set pushed into a Firecracker-style client (uf_object_serve_prefetch) from a read-only file goes into the client alone: once the push is done (readahead_pages counts every page of the set), the client has every page of the set before it touches them (mincore) and reads the file's bytes, each page was read from the file once (pages_read), and the server's cache holds none of them (the kernel's page cache of the file does) */
#define _GNU_SOURCE
#include "ws-test.h"
#include "watchdog.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE	(16UL << 20)
#define PG	UF_PAGE_SIZE
#define NRUNS	48
#define RUNLEN	6
#define NSINGLE	64
#define NSET	(NRUNS * RUNLEN + NSINGLE)

/* The set in recorded order: runs of RUNLEN pages 50 apart from the top
 * of the object down, then single pages 7 apart from page 3000 up. */
static uint64_t set_page(size_t i)
{
	if (i < NRUNS * RUNLEN)
		return 100 + 50 * (uint64_t)(NRUNS - 1 - i / RUNLEN) + i % RUNLEN;
	return 3000 + 7 * (uint64_t)(i - NRUNS * RUNLEN);
}

/* Record the set from an object of the file, touched in order. */
static void record(const char *path, const char *rec)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	unsigned char *m;
	size_t i;

	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (i = 0; i < NSET; i++)
		CHECK(m[set_page(i) * PG] == ut_pattern(set_page(i) * PG), "recording");
	CHECK_RET(uf_object_record_stop(obj), NSET);
	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

/* Touch the set's pages in @base: the pages whose bytes are wrong.  Not
 * instrumented: a sanitizer's shadow of the pages read would fault in as
 * the client's faults too. */
__attribute__((no_sanitize("address", "thread"), noinline))
static uint64_t touch_set(const unsigned char *base)
{
	uint64_t bad = 0;
	size_t i;

	for (i = 0; i < NSET; i++)
		bad += base[set_page(i) * PG + i % PG] != ut_pattern(set_page(i) * PG + i % PG);
	return bad;
}

/* The client: anonymous private memory registered MISSING on a
 * userfaultfd of its own, handed over @sock; on 't': the set's pages not
 * in (mincore, which faults nothing), then touch the set: the pages
 * whose bytes are wrong. */
static void client(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, cmd;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	uint64_t region[2], ans[2] = { 0, 0 };
	struct iovec iov = { region, sizeof(region) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	unsigned char *base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	size_t i;

	if (base == MAP_FAILED || uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
		_exit(UT_SKIP);
	reg.range.start = (unsigned long)base;
	reg.range.len = SIZE;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		_exit(UT_SKIP);
	region[0] = (uint64_t)(uintptr_t)base;
	region[1] = SIZE;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != (ssize_t)sizeof(region))
		_exit(UT_FAIL);
	close(uffd);
	if (read(sock, &cmd, 1) != 1)
		_exit(UT_FAIL);
	for (i = 0; i < NSET; i++) {
		unsigned char vec = 0;

		if (mincore(base + set_page(i) * PG, PG, &vec) || !(vec & 1))
			ans[0]++;
	}
	ans[1] = touch_set(base);
	if (write(sock, ans, sizeof(ans)) != sizeof(ans))
		_exit(UT_FAIL);
	_exit(0);
}

int main(void)
{
	char cbuf[CMSG_SPACE(sizeof(int))], path[128], rec[160];
	uint64_t region[2], ans[2];
	struct iovec iov = { region, sizeof(region) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct uf_serve_region r;
	struct uf_object *obj;
	struct uf_stats s;
	struct cmsghdr *cm;
	struct uf_mm *mm;
	int sv[2], uffd = -1, status, fd;
	pid_t pid;

	ut_watchdog(120);
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	record(path, rec);

	/* the client first: it is no child of the server's mm */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		client(sv[1]);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &mh, 0) != (ssize_t)sizeof(region)) {
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == UT_SKIP, "client: %d", status);
		unlink(rec);
		unlink(path);
		fprintf(stderr, "no userfaultfd here\n");
		return UT_SKIP;
	}
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no fd from the client");
	memcpy(&uffd, CMSG_DATA(cm), sizeof(int));

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), 0);
	r = (struct uf_serve_region){ .start = region[0], .len = region[1], .offset = 0 };
	CHECK_RET(uf_object_serve_uffd(obj, uffd, &r, 1), 0);
	/* the push is done once it counts every page of the set */
	do {
		usleep(1000);
		CHECK_RET(uf_mm_stats(mm, &s), 0);
	} while (s.readahead_pages < NSET);
	CHECK(write(sv[0], "t", 1) == 1, "to the client: %s", strerror(errno));
	CHECK(read(sv[0], ans, sizeof(ans)) == sizeof(ans), "the client's answer");
	CHECK(ans[1] == 0, "%lu pages of the set with wrong bytes", (unsigned long)ans[1]);
	CHECK(ans[0] == 0, "%lu pages of the set not in the client before it touched them (each "
	      "a fault)", (unsigned long)ans[0]);
	CHECK_RET(uf_mm_stats(mm, &s), 0);
	CHECK(s.readahead_pages == NSET && s.pages_read == NSET,
	      "pushed %lu pages, read %lu from the file, want each of the %d once",
	      (unsigned long)s.readahead_pages, (unsigned long)s.pages_read, NSET);
	CHECK(s.cache_pages == 0, "the server's cache holds %lu pages of the set, want none (the "
	      "file's page cache holds them)", (unsigned long)s.cache_pages);

	close(sv[0]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "client exit %d", status);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(rec);
	unlink(path);
	printf("push from a file: %d pages into the client, read once, none in the cache\n", NSET);
	return UT_PASS;
}
