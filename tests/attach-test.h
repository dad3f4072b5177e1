/* SPDX-License-Identifier: MIT */
/*
 * ufault clients of ufault-serve (uf_object_attach): the server as
 * serve-test.h starts it (a SOURCE of ut_pattern() bytes in /dev/shm),
 * and client processes, each forked before any mm exists and making its
 * own, that talk to the test through a pipe pair.  Not a test program
 * itself.
 */
#ifndef UT_ATTACH_TEST_H
#define UT_ATTACH_TEST_H

#include "serve-test.h"

/* ThreadSanitizer (make SAN=thread): a client forked after the test's
 * watchdog thread started makes an mm, and with it threads; the runtime
 * refuses that unless told (a client is a process of its own from there
 * on: it shares no memory with the test). */
const char *__tsan_default_options(void);
__attribute__((used)) const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

/* A client process: @fn runs in it, with @in to read the test's words
 * from and @out to write its own to. */
struct ut_client {
	pid_t pid;
	int to, from;		/* the test's ends */
};

static __attribute__((unused)) void ut_client_start(struct ut_client *c,
						    void (*fn)(int in, int out, void *arg),
						    void *arg)
{
	int a[2], b[2];

	CHECK(pipe(a) == 0 && pipe(b) == 0, "pipe: %s", strerror(errno));
	c->pid = fork();
	CHECK(c->pid >= 0, "fork: %s", strerror(errno));
	if (c->pid == 0) {
		/* a test killed takes its clients with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(a[1]);
		close(b[0]);
		fn(a[0], b[1], arg);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	c->to = a[1];
	c->from = b[0];
}

/* One word each way (a client that died reads as -1). */
static __attribute__((unused)) void ut_say(int fd, long v)
{
	CHECK(write(fd, &v, sizeof(v)) == sizeof(v), "write: %s", strerror(errno));
}

static __attribute__((unused)) long ut_hear(int fd)
{
	long v;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return v;
}

/* Ask client @c to do @w with @k; its answer. */
static __attribute__((unused)) long ut_ask(struct ut_client *c, long w, long k)
{
	ut_say(c->to, w);
	ut_say(c->to, k);
	return ut_hear(c->from);
}

/* The client's exit status (UT_SKIP passes through). */
static __attribute__((unused)) int ut_client_wait(struct ut_client *c)
{
	int st;

	CHECK(waitpid(c->pid, &st, 0) == c->pid, "waitpid: %s", strerror(errno));
	close(c->to);
	close(c->from);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* In a client: an mm, and @sock's object attached (exit 77 without
 * userfaultfd for shared memory). */
static __attribute__((unused)) struct uf_object *ut_attach(struct uf_mm **mmp, const char *sock,
							   int oflags)
{
	struct uf_object *obj = NULL;
	int ret;

	*mmp = ut_mm_create(NULL);
	ret = uf_object_attach(*mmp, sock, oflags, &obj);
	if (ret == -EOPNOTSUPP || ret == -ENOSYS) {
		fprintf(stderr, "no userfaultfd for shared memory here\n");
		exit(UT_SKIP);
	}
	CHECK(ret == 0, "uf_object_attach: %s", strerror(-ret));
	return obj;
}

#endif
