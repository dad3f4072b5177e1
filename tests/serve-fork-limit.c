// SPDX-License-Identifier: MIT
/* Description: a process served by uf_object_serve_uffd() whose userfaultfd has UFFD_FEATURE_EVENT_FORK and forks 70 children that stay alive: 64 are served (SOURCE's bytes), the 6 past the limit fail closed (SIGBUS at their first touch, never zeros nor a hang); once they are gone, 10 new children are served: the count is of children alive */
#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE	(4UL << 20)
#define LIMIT	64		/* as.c, UF_AS_MAX_FORKS */
#define FIRST	70
#define SECOND	10

/* @n children of this (served) process, alive at once, each touching a
 * page of its own; how many read SOURCE's bytes (*@ok) and how many got
 * SIGBUS (*@bus); the rest read something else. */
static void children(char *base, int n, int *ok, int *bus)
{
	int res[2], hold[2], k;
	pid_t pids[FIRST];

	CHECK(pipe(res) == 0 && pipe(hold) == 0, "pipe");
	for (k = 0; k < n; k++) {
		pids[k] = fork();
		CHECK(pids[k] >= 0, "fork %d: %s", k, strerror(errno));
		if (pids[k] == 0) {
			size_t off = (size_t)(k + 1) * 4096 * 3 + 11;
			struct ut_fault f;
			unsigned char v;
			char r, c;

			close(res[0]);
			close(hold[1]);
			r = ut_read(base + off, &v, &f) == SIGBUS ? 'B' :
			    v == ut_pattern(off) ? 'S' : 'Z';
			if (write(res[1], &r, 1) != 1 || read(hold[0], &c, 1) < 0)
				_exit(1);
			_exit(0);
		}
	}
	close(res[1]);
	close(hold[0]);
	*ok = *bus = 0;
	for (k = 0; k < n; k++) {
		char r;

		CHECK(read(res[0], &r, 1) == 1, "a child died");
		*ok += r == 'S';
		*bus += r == 'B';
	}
	close(hold[1]);		/* they go */
	close(res[0]);
	for (k = 0; k < n; k++)
		waitpid(pids[k], NULL, 0);
}

/* The served process: anonymous memory on a userfaultfd with fork
 * events, handed over with its address; each step told by the test. */
static void vmm(int sock)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char cbuf[CMSG_SPACE(sizeof(int))], go;
	uint64_t addr;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int uffd, counts[2];
	char *base;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ut_catch_signals();
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (uffd < 0 || base == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) < 0)
		_exit(1);
	reg.range.start = (unsigned long)base;
	reg.range.len = SIZE;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		_exit(1);
	addr = (uint64_t)(uintptr_t)base;
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != sizeof(addr) || read(sock, &go, 1) != 1)
		_exit(1);
	CHECK(base[5] == (char)ut_pattern(5), "its own page");
	children(base, FIRST, &counts[0], &counts[1]);
	if (write(sock, counts, sizeof(counts)) != sizeof(counts) || read(sock, &go, 1) != 1)
		_exit(1);
	children(base, SECOND, &counts[0], &counts[1]);
	if (write(sock, counts, sizeof(counts)) != sizeof(counts))
		_exit(1);
	_exit(0);
}

int main(void)
{
	char path[128], cbuf[CMSG_SPACE(sizeof(int))];
	uint64_t addr;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct uf_serve_region r;
	struct uf_object *obj;
	struct uf_stats st;
	struct cmsghdr *cm;
	struct uf_mm *mm;
	int sv[2], uffd = -1, fd, counts[2], status;
	pid_t pid;

	if (!ut_fork_events()) {
		printf("skip: no userfaultfd fork events here (CAP_SYS_PTRACE)\n");
		return UT_SKIP;
	}
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(sv[0]);
		vmm(sv[1]);
	}
	close(sv[1]);
	/* (after the fork: no thread of the test's at a fork) */
	ut_watchdog(120);
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK(recvmsg(sv[0], &mh, 0) == sizeof(addr), "recvmsg");
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no fd");
	memcpy(&uffd, CMSG_DATA(cm), sizeof(int));
	r = (struct uf_serve_region){ .start = addr, .len = SIZE, .offset = 0 };
	CHECK_RET(uf_object_serve_uffd(obj, uffd, &r, 1), 0);
	CHECK(write(sv[0], "g", 1) == 1, "write");

	CHECK(read(sv[0], counts, sizeof(counts)) == sizeof(counts), "the served process died");
	printf("%d children alive at once: %d served, %d SIGBUS\n", FIRST, counts[0], counts[1]);
	CHECK(counts[0] == LIMIT && counts[1] == FIRST - LIMIT,
	      "%d served and %d SIGBUS of %d children, want %d and %d", counts[0], counts[1],
	      FIRST, LIMIT, FIRST - LIMIT);
	/* the children gone are freed (uf_mm_stats() reaps them) */
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(write(sv[0], "g", 1) == 1, "write");
	CHECK(read(sv[0], counts, sizeof(counts)) == sizeof(counts), "the served process died");
	printf("then %d more: %d served, %d SIGBUS\n", SECOND, counts[0], counts[1]);
	CHECK(counts[0] == SECOND, "%d of %d later children served", counts[0], SECOND);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the served process: status %#x", status);
	close(sv[0]);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
	printf("pass: fork children counted, those past the limit fail closed\n");
	return 0;
}
