// SPDX-License-Identifier: MIT
/*
 * The pid checks every layer makes: a call in a fork child on an mm or
 * object of its parent's returns -ECHILD.  The only process-wide state of
 * the library besides per-thread buffers (filemap.c).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <unistd.h>

/*
 * This process, as seen by ufault: a fork child's copy of an mm or object
 * must never act on the parent's userfaultfd, eventfds, pagemap or
 * threads, so every call compares the pid that created it with this one.
 * Updated in the child by a pthread_atfork() handler: cheaper than
 * getpid() in every call.  (A child made by a raw clone() system call is
 * not seen; vfork() and posix_spawn() children exec at once.)
 */
static pid_t uf_self;
static pthread_once_t uf_self_once = PTHREAD_ONCE_INIT;

static void uf_self_child(void)
{
	__atomic_store_n(&uf_self, getpid(), __ATOMIC_RELAXED);
}

static void uf_self_init(void)
{
	__atomic_store_n(&uf_self, getpid(), __ATOMIC_RELAXED);
	pthread_atfork(NULL, NULL, uf_self_child);
}

pid_t uf_pid(void)
{
	pthread_once(&uf_self_once, uf_self_init);
	return __atomic_load_n(&uf_self, __ATOMIC_RELAXED);
}

bool uf_forked(const struct uf_mm *mm)
{
	return mm && mm->pid != uf_pid();
}

bool uf_object_forked(const struct uf_object *obj)
{
	return obj->pid != uf_pid();
}
