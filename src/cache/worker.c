// SPDX-License-Identifier: MIT
/*
 * Background work of an mm: one thread that runs what may happen after the
 * faulting thread has been woken - asynchronous readahead (readahead.c) -
 * and one more for the cache inserts a fill defers (insert.c).
 * (Huge extents are collapsed by a thread of their own: huge.c.)
 *
 * A work item is run once, or dropped (->fn with run false) when the mm is
 * destroyed first; either way ->fn owns the item afterwards.  The worker
 * takes no ufault lock of its own around ->fn: each item takes what it
 * needs, in the order of lockorder.h.
 *
 * Locking: worker->lock only guards the queue; nothing is taken under it.
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

struct uf_worker {
	struct uf_thread thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct uf_work *head, **tail;
	bool started;		/* the thread runs (started by the first item) */
	bool stop;
};

static void *worker_thread(void *arg)
{
	struct uf_worker *w = arg;
	sigset_t all;

	/* signals belong to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct uf_work *item = w->head;

		if (!item) {
			if (w->stop)
				break;
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		w->head = item->next;
		if (!w->head)
			w->tail = &w->head;
		pthread_mutex_unlock(&w->lock);
		item->fn(item, true);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* A worker at *@wp.  The thread starts with the first item: an mm that
 * never reads ahead (operation mappings only) has no extra thread. */
int uf_worker_new(struct uf_worker **wp)
{
	struct uf_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	uf_lockdep_class(&w->lock, UF_LK_WORKER);
	pthread_cond_init(&w->cond, NULL);
	w->tail = &w->head;
	*wp = w;
	return 0;
}

/* Drop what is still queued on *@wp, then end its thread.  Items running
 * now finish first. */
void uf_worker_free(struct uf_worker **wp)
{
	struct uf_worker *w = *wp;
	struct uf_work *item;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	item = w->head;
	w->head = NULL;
	w->tail = &w->head;
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	while (item) {
		struct uf_work *next = item->next;

		item->fn(item, false);
		item = next;
	}
	if (w->started)
		uf_thread_join(&w->thread);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	*wp = NULL;
}

/* Queue @item on @w; false when there is none or it stopped (it was not
 * queued).  Locking: takes worker->lock; callers may hold any ufault lock. */
bool uf_worker_add(struct uf_worker *w, struct uf_work *item)
{
	if (!w)
		return false;
	item->next = NULL;
	pthread_mutex_lock(&w->lock);
	if (!w->started && !w->stop)
		w->started = uf_thread_start(&w->thread, worker_thread, w) == 0;
	if (w->stop || !w->started) {
		pthread_mutex_unlock(&w->lock);
		return false;
	}
	*w->tail = item;
	w->tail = &item->next;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return true;
}

/* The mm's workers: the run-ahead's, and the deferred inserts' (insert.c). */
int uf_worker_start(struct uf_mm *mm)
{
	int ret = uf_worker_new(&mm->worker);

	return ret ? ret : uf_inserts_start(mm);
}

/* The run-ahead's worker first: its items may defer inserts. */
void uf_worker_stop(struct uf_mm *mm)
{
	uf_worker_free(&mm->worker);
	uf_inserts_stop(mm);
}

/* Queue @item on the mm's worker; false when there is none (it was not
 * queued).  Locking: takes worker->lock; callers may hold any ufault lock. */
bool uf_worker_queue(struct uf_mm *mm, struct uf_work *item)
{
	return uf_worker_add(mm->worker, item);
}
