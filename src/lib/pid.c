// SPDX-License-Identifier: MIT
/*
 * The pid checks every layer makes: a call in a fork child on an mm or
 * object of its parent's returns -ECHILD.  The only process-wide state of
 * the library besides per-thread buffers (filemap.c).
 */
#define _GNU_SOURCE
#include "lib/lib.h"

#include <unistd.h>

/*
 * This process, as seen by ufault: a fork child's copy of an mm or object
 * must never act on the parent's userfaultfd, eventfds, pagemap or
 * threads, so every call compares the pid that created it with this one.
 * Kept in a page marked MADV_WIPEONFORK: a child reads 0 there and asks
 * getpid() once, on its first call.  Cheaper than getpid() in every call,
 * and no code of ufault runs in a child at the fork itself (a handler
 * there would fault in its code and data, copy-on-write, at each fork).
 * (A child made by a raw clone() system call is not seen; vfork() and
 * posix_spawn() children exec at once.)  Without the page, getpid().
 */
static pid_t *uf_self;
static pthread_once_t uf_self_once = PTHREAD_ONCE_INIT;

static void uf_self_init(void)
{
	uf_self = uf_nocow_map((size_t)sysconf(_SC_PAGESIZE));
}

pid_t uf_pid(void)
{
	pid_t pid;

	pthread_once(&uf_self_once, uf_self_init);
	if (!uf_self)
		return getpid();
	pid = __atomic_load_n(uf_self, __ATOMIC_RELAXED);
	if (!pid) {
		pid = getpid();
		__atomic_store_n(uf_self, pid, __ATOMIC_RELAXED);
	}
	return pid;
}
