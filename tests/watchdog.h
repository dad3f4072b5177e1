/* SPDX-License-Identifier: MIT */
/*
 * A watchdog that fails a test which hangs, even in a hang that signals
 * cannot break (a system call retrying a fault in the kernel ignores
 * every signal but a fatal one, so alarm() is not enough): a thread that
 * ends the whole process after @seconds.  Not a test program itself.
 */
#ifndef UT_WATCHDOG_H
#define UT_WATCHDOG_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static void *ut_watchdog_thread(void *arg)
{
	static const char msg[] = "watchdog: the test hung\n";
	unsigned int left = (unsigned int)(uintptr_t)arg;

	while (left)
		left = sleep(left);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);		/* exit_group: a fatal signal to every thread */
	return NULL;
}

static __attribute__((unused)) void ut_watchdog(unsigned int seconds)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;

	/* the watchdog takes no signal meant for the test's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, ut_watchdog_thread, (void *)(uintptr_t)seconds))
		_exit(1);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

#endif
