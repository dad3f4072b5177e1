/* SPDX-License-Identifier: MIT */
/*
 * For the fork-* tests: the targets of trunc-target.h (ufault objects on
 * each store, and the kernel's own mmap of a tmpfs or disk file as the
 * oracle), plus steps a parent and its child take in turn through a
 * shared anonymous page, and the child's exit status.  A ufault target
 * is skipped where this process gets no fork event.  Not a test program
 * itself (the Makefile builds tests/<name>.c only).
 */
#ifndef UT_FORK_TARGET_H
#define UT_FORK_TARGET_H

#include "trunc-target.h"
#include "watchdog.h"

#include <sched.h>
#include <sys/wait.h>

#define FK_UNUSED __attribute__((unused))

/* Where parent and child meet: MAP_SHARED anonymous memory. */
struct fk_sync {
	int step;
	int fail;		/* the child's failure, line number */
};

static FK_UNUSED struct fk_sync *fk_sync_new(void)
{
	void *p = mmap(NULL, UF_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

static FK_UNUSED void fk_set(struct fk_sync *s, int step)
{
	__atomic_store_n(&s->step, step, __ATOMIC_RELEASE);
}

/* Wait for @step.  The parent's watchdog ends a test whose child died;
 * a child whose parent died, or that waits a minute, exits (no stray). */
static FK_UNUSED void fk_wait(struct fk_sync *s, int step, pid_t parent)
{
	unsigned int i;

	for (i = 0; __atomic_load_n(&s->step, __ATOMIC_ACQUIRE) < step; i++) {
		if (parent && (getppid() != parent || i > 600000))
			_exit(2);
		usleep(100);
	}
}

/* In a child: a failed check exits with the line, for the parent to say. */
#define FK_CHECK(s, cond) do {						\
	if (!(cond)) {							\
		(s)->fail = __LINE__;					\
		_exit(1);						\
	}								\
} while (0)

/* The child's byte at @p, or -signal. */
static FK_UNUSED int fk_byte(const volatile unsigned char *p)
{
	struct ut_fault f;
	unsigned char v = 0;
	int sig = ut_read(p, &v, &f);

	return sig ? -sig : v;
}

/* Reap @pid; it must have exited 0. */
static FK_UNUSED void fk_reap(const char *what, struct fk_sync *s, pid_t pid)
{
	int status;

	CHECK(waitpid(pid, &status, 0) == pid, "%s: waitpid: %s", what, strerror(errno));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "%s: child status %#x (failed check at line %d)", what, status, s->fail);
}

/* Is target @kind run here (a ufault one needs the fork event)? */
static FK_UNUSED bool fk_runs(enum tt_kind kind)
{
	return kind >= TT_K_TMPFS || ut_fork_events();
}

#endif
