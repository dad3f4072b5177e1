/* SPDX-License-Identifier: MIT */
/*
 * Counting the system calls a piece of the library makes, every thread
 * of it: the work runs in a child traced with ptrace(2) (its threads
 * followed as they are made), and the tracer counts the calls the child
 * makes between its sc_mark(SC_BEGIN) and sc_mark(SC_END), by kind.
 * Counts, never times.  Not a test program itself.
 */
#ifndef UT_SYSCALL_COUNT_H
#define UT_SYSCALL_COUNT_H

#include "helpers.h"

#include <errno.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_process_madvise
#define SYS_process_madvise	440
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif

/* No system call has this number: the kernel answers -ENOSYS, the tracer
 * sees the mark. */
#define SC_MARK_NR	0x7ff0
#define SC_BEGIN	1
#define SC_END		2

struct sc_counts {
	unsigned long reads;		/* read, pread64, readv, preadv, preadv2, recv* */
	unsigned long sends;		/* write, writev, pwrite*, send* */
	unsigned long copies;		/* ioctl(UFFDIO_COPY) */
	unsigned long populates;	/* madvise(MADV_POPULATE_READ), process_madvise */
	unsigned long total;		/* every call in the window */
};

static inline void sc_mark(long which)
{
	syscall(SC_MARK_NR, which);
}

static inline void sc_count(struct sc_counts *c, const struct __ptrace_syscall_info *si)
{
	unsigned long nr = (unsigned long)si->entry.nr;
	const uint64_t *a = si->entry.args;

	c->total++;
	switch (nr) {
	case SYS_read: case SYS_pread64: case SYS_readv: case SYS_preadv: case SYS_preadv2:
	case SYS_recvfrom: case SYS_recvmsg:
		c->reads++;
		break;
	case SYS_write: case SYS_pwrite64: case SYS_writev: case SYS_pwritev: case SYS_sendto:
	case SYS_sendmsg:
		c->sends++;
		break;
	case SYS_ioctl:
		if ((unsigned long)a[1] == (unsigned long)UFFDIO_COPY)
			c->copies++;
		break;
	case SYS_madvise:
		if (a[2] == MADV_POPULATE_READ)
			c->populates++;
		break;
	case SYS_process_madvise:
		c->populates++;
		break;
	}
}

/*
 * Run @fn(@arg) in a child whose threads' system calls are counted
 * between its marks into *@c.  Return the child's exit status (0 when
 * @fn returned), or exit 77 when this system lets no process trace its
 * child.  The caller must have no threads of its own (a sanitizer's
 * fork of a threaded process may not start threads after).
 */
static inline int sc_run(void (*fn)(void *), void *arg, struct sc_counts *c)
{
	struct __ptrace_syscall_info si;
	bool counting = false;
	int st, ret = -1;
	pid_t pid, tid;

	memset(c, 0, sizeof(*c));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(UT_SKIP);
		raise(SIGSTOP);
		fn(arg);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == UT_SKIP) {
		printf("skip: ptrace(PTRACE_TRACEME) is refused here\n");
		exit(UT_SKIP);
	}
	CHECK(WIFSTOPPED(st), "child did not stop (status %#x)", st);
	CHECK(ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACECLONE |
	      PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL)) == 0, "PTRACE_SETOPTIONS: %s",
	      strerror(errno));
	CHECK(ptrace(PTRACE_SYSCALL, pid, NULL, NULL) == 0, "PTRACE_SYSCALL: %s", strerror(errno));
	while ((tid = waitpid(-1, &st, __WALL)) > 0) {
		int sig = 0;

		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (tid == pid) {
				ret = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				break;
			}
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) > 0 &&
			    si.op == PTRACE_SYSCALL_INFO_ENTRY) {
				if (si.entry.nr == SC_MARK_NR)
					counting = si.entry.args[0] == SC_BEGIN;
				else if (counting)
					sc_count(c, &si);
			}
		} else if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_CLONE << 8))) {
			/* a new thread: it starts traced, with a SIGSTOP of its own */
		} else if (WSTOPSIG(st) != SIGSTOP && WSTOPSIG(st) != SIGTRAP) {
			sig = WSTOPSIG(st);	/* the child's own signal */
		}
		ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)sig);
	}
	CHECK(ret >= 0, "lost the traced child");
	return ret;
}

/* Can process_madvise(2) populate this process's memory (Linux 6.15+:
 * PIDFD_SELF)?  Else the library populates a range a call. */
static inline bool sc_populate_batched(void)
{
	char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec v = { p, 4096 };
	bool ok;

	CHECK(p != MAP_FAILED, "mmap");
	ok = syscall(SYS_process_madvise, -10001, &v, 1, MADV_POPULATE_READ, 0) == 4096;
	munmap(p, 4096);
	return ok;
}

#endif
