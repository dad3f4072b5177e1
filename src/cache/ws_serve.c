// SPDX-License-Identifier: MIT
/*
 * Working sets of the processes served (serve.c).
 *
 * Processes served (serve.c).  A served process's pages are its own
 * anonymous memory: each first touch is a fault there whether the cache
 * holds the page or not, so serve.c notes the pages it copies on a fault
 * (uf_ws_serve_note()) and, while recorded, copies the faulting page
 * alone.  A record of uf_object_record() takes every process served; one
 * of uf_object_serve_record() only the next process served, which claims
 * it (uf_ws_serve_claim()), and nothing else is noted meanwhile.  A set
 * armed by uf_object_serve_prefetch() is handed, referenced, to each
 * process served after; serve.c pushes it into the process's memory.
 */
#define _GNU_SOURCE
#include "cache/ws.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


UF_EXPORT int uf_object_serve_record(struct uf_object *obj, const char *path)
{
	return ws_record_start(obj, path, true);
}

/*
 * Is a fault of a served process in record @rec (uf_ws_serve_claim(), 0
 * for none) recorded?  A record of uf_object_record() takes every
 * process; one of uf_object_serve_record() the process that claimed it.
 * Locking: none.
 */
bool uf_ws_serve_recording(struct uf_object *obj, uint64_t rec)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!ws || !__atomic_load_n(&ws->recording, __ATOMIC_ACQUIRE))
		return false;
	return !__atomic_load_n(&ws->serve_only, __ATOMIC_RELAXED) ||
	       (rec && __atomic_load_n(&ws->rec, __ATOMIC_RELAXED) == rec);
}

/* Page @pg reached a served process in record @rec: note it if that is
 * recorded.  Locking: any ufault lock may be held; takes ws->lock. */
void uf_ws_serve_note(struct uf_object *obj, uint64_t rec, uint64_t pg)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!uf_ws_serve_recording(obj, rec))
		return;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording && (!ws->serve_only || ws->rec == rec))
		__ws_note_page(ws, pg);
	pthread_mutex_unlock(&ws->lock);
}

/*
 * A process is being served (uf_object_serve_uffd): the record it is in
 * (a record of uf_object_serve_record() nobody has claimed yet becomes
 * its own; 0: none of its own), and in *@setp the working set to push
 * into it, with a reference, or NULL.  uf_ws_serve_unclaim() if it is
 * not served after all.
 * Locking: takes ws->lock.
 */
uint64_t uf_ws_serve_claim(struct uf_object *obj, struct uf_ws_set **setp)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);
	uint64_t rec = 0;

	*setp = NULL;
	if (!ws)
		return 0;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording && ws->serve_only && !ws->serve_claimed) {
		ws->serve_claimed = true;
		rec = ws->rec;
	}
	if (ws->serve_set) {
		__atomic_add_fetch(&ws->serve_set->refs, 1, __ATOMIC_RELAXED);
		*setp = ws->serve_set;
	}
	pthread_mutex_unlock(&ws->lock);
	return rec;
}

/* Locking: takes ws->lock. */
void uf_ws_serve_unclaim(struct uf_object *obj, uint64_t rec)
{
	struct uf_ws *ws = __atomic_load_n(&obj->ws, __ATOMIC_ACQUIRE);

	if (!ws || !rec)
		return;
	pthread_mutex_lock(&ws->lock);
	if (ws->recording && ws->rec == rec)
		ws->serve_claimed = false;
	pthread_mutex_unlock(&ws->lock);
}

/* The run of @set holding @pg, or NULL.  Locking: none. */
const struct uf_ws_run *uf_ws_set_find(const struct uf_ws_set *set, uint64_t pg)
{
	return runs_find(set->sorted, set->nruns, pg);
}

/* The place in recorded order of @run, a run uf_ws_set_find() gave.
 * Locking: none. */
size_t uf_ws_set_place(const struct uf_ws_set *set, const struct uf_ws_run *run)
{
	return set->ord[run - set->sorted];
}

/* Each sorted run's place in recorded order.  Return 0 or -ENOMEM. */
static int ws_set_order(struct uf_ws_set *set)
{
	size_t i;

	set->ord = malloc((set->nruns ? set->nruns : 1) * sizeof(*set->ord));
	if (!set->ord)
		return -ENOMEM;
	for (i = 0; i < set->nruns; i++)	/* (runs never overlap) */
		set->ord[runs_find(set->sorted, set->nruns, set->runs[i].start) - set->sorted] = i;
	return 0;
}

/* Locking: none. */
void uf_ws_set_put(struct uf_ws_set *set)
{
	if (!set || __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(set->runs);
	free(set->sorted);
	free(set->ord);
	free(set);
}

/* Locking: takes ws->lock; reads the file with no lock held. */
UF_EXPORT int uf_object_serve_prefetch(struct uf_object *obj, const char *path)
{
	struct ws_version rec = { 0 }, now;
	struct uf_ws_set *set = NULL, *old;
	struct uf_ws *ws;
	int ret = 0;

	if (!obj || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	ws = ws_get(obj);
	if (!ws)
		return -ENOMEM;
	if (path) {
		set = calloc(1, sizeof(*set));
		if (!set)
			return -ENOMEM;
		set->refs = 1;
		ret = ws_read(path, &rec, &set->runs, &set->nruns, &set->sorted);
		if (!ret)
			ret = ws_set_order(set);
		if (!ret)
			ret = object_version(obj, &now);
		if (!ret && !same_version(&rec, &now))
			ret = -ESTALE;
		if (ret) {
			uf_ws_set_put(set);
			return ret;
		}
	}
	pthread_mutex_lock(&ws->lock);
	if (ws->recording) {
		old = set;	/* a record sees the faults a push would spare */
		ret = -EBUSY;
	} else {
		old = ws->serve_set;
		ws->serve_set = set;
	}
	pthread_mutex_unlock(&ws->lock);
	uf_ws_set_put(old);
	return ret;
}
