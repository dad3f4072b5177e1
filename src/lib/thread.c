// SPDX-License-Identifier: MIT
/*
 * ufault's own long-lived threads (handlers, the monitor, the worker, the
 * huge-extent thread) run on stacks a fork child does not inherit.
 *
 * After fork() every private page the parent writes costs a copy-on-write
 * fault (a copy and a TLB shootdown) for as long as the child lives, and
 * the child's C library writes the descriptor of each of the parent's
 * threads whose stack it allocated (to mark it free).  The handler that
 * reads the fork event runs at once, on its stack; the child never runs
 * these threads.  So their stacks are the caller's (pthread_attr_setstack:
 * the C library leaves those alone in the child) and MADV_WIPEONFORK: no
 * fault on either side.  A fork made by one of these threads (from a
 * fault() method) needs its own stack in the child: the stack is
 * inherited for that fork (pthread_atfork).
 */
#define _GNU_SOURCE
#include "lib/lib.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define DEFAULT_STACK	(8u << 20)

/* The stack this thread runs on, when uf_thread_start() made it. */
static __thread void *self_stack;
static __thread size_t self_size;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	if (self_stack)
		madvise(self_stack, self_size, MADV_KEEPONFORK);
}

static void fork_parent(void)
{
	if (self_stack)
		madvise(self_stack, self_size, MADV_WIPEONFORK);
}

static void atfork_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, NULL);
}

static void *trampoline(void *arg)
{
	struct uf_thread *t = arg;

	self_stack = t->stack;
	self_size = t->size;
	return t->fn(t->arg);
}

/*
 * uf_thread_start - start @fn(@arg) in a thread on a stack of its own
 * that fork children do not inherit, with the default stack size and a
 * guard page.  @t must live until uf_thread_join().  Return 0 or -errno.
 */
int uf_thread_start(struct uf_thread *t, void *(*fn)(void *), void *arg)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = DEFAULT_STACK;
	pthread_attr_t attr;
	int ret;

	pthread_once(&atfork_once, atfork_init);
	if (pthread_getattr_default_np(&attr) == 0) {
		size_t s;

		if (pthread_attr_getstacksize(&attr, &s) == 0 && s >= 64 * 1024)
			size = (s + page - 1) & ~(page - 1);
		pthread_attr_destroy(&attr);
	}
	t->stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (t->stack == MAP_FAILED) {
		t->stack = NULL;
		return -errno;
	}
	t->size = size;
	t->fn = fn;
	t->arg = arg;
	/* the lowest page is the guard; none of it goes to a fork child */
	if (mprotect(t->stack, page, PROT_NONE) < 0 ||
	    madvise(t->stack, size, MADV_WIPEONFORK) < 0) {
		ret = -errno;
		goto fail;
	}
	ret = -pthread_attr_init(&attr);
	if (ret)
		goto fail;
	ret = -pthread_attr_setstack(&attr, (char *)t->stack + page, size - page);
	if (!ret)
		ret = -pthread_create(&t->id, &attr, trampoline, t);
	pthread_attr_destroy(&attr);
	if (!ret)
		return 0;
fail:
	munmap(t->stack, size);
	t->stack = NULL;
	return ret;
}

/* uf_thread_join - wait for the thread to end, and free its stack. */
void uf_thread_join(struct uf_thread *t)
{
	pthread_join(t->id, NULL);
	munmap(t->stack, t->size);
	t->stack = NULL;
}
