// SPDX-License-Identifier: MIT
/*
 * Deferred cache inserts: the copy of a fill's bytes into the cache, done
 * by a thread of the mm's own while the filling thread goes on.
 *
 * A fill with an early sink (struct uf_fill_sink, cache.h) has given the
 * store's bytes to another process before they are in the cache; where
 * the sink asks for it (->defer) and took the whole span, the copy into
 * the cache, as costly as the store read and the delivery together for a
 * huge page, need not hold up the thread that must deliver the next one.
 * The fill then hands its buffer and its budget charge to an insert that
 * the mm's insert thread copies in (fill_span_insert(), as the fill would
 * have: present pages kept, never a page past i_size), and returns.
 *
 * Only a read-only object's spans are deferred (the sink's early path):
 * no write, truncate or punch of it can come between the read and the
 * insert, so the bytes inserted late are the bytes the store has.  A span
 * is pending from before the sink's delivery until its pages are present
 * (or the insert was given up): a fill of the object that meets a pending
 * span waits for it (INSERT_WAIT_MS at most, then reads the store as
 * before), so a reader or a second client after a restore finds the
 * pages in the cache rather than reading them again (a span the fill
 * inserts itself is pending as well, until it is in).  At most
 * INSERT_QUEUED inserts wait for the thread; beyond, a fill inserts its
 * own.  The thread inserts in the restore's pauses: while spans are
 * still being handed over (the last less than INSERT_QUIET_NS ago), it
 * waits, unless a fill or a flush waits for a pending span, or the queue
 * is three quarters full.  The inserts' copies, run beside a restore,
 * compete with its store reads for the memory's bandwidth: a burst of
 * up to 48 MiB of huge pages has it to itself, and a longer one shares
 * it once the queue is that full.  Not a shorter quiet: on a busy
 * machine a restore's own gaps (its client waiting for a CPU) last
 * milliseconds.  The charge stays taken until the pages are in, so the
 * budget counts them throughout; a fill that finds no room waits for the
 * pending inserts (uf_inserts_flush()) before it fails.  At the mm's
 * destruction what is queued is dropped (the cache goes too).
 *
 * Locking: inserts->lock (lockorder.h: INSERT) guards the pending list
 * and the spare buffers, and is taken under any ORDER lock; nothing is
 * taken under it.  The insert takes obj->invalidate_lock shared, as a
 * fill does.
 */
#define _GNU_SOURCE
#include "cache/cache.h"
#include "cache/fill.h"
#include "cache/bounce.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define INSERT_QUEUED	32	/* inserts waiting for the thread, at most */
#define INSERT_SPARES	4	/* buffers kept for the fills, at most */
#define INSERT_WAIT_MS	200	/* a fill waits this long for a pending span */
#define INSERT_QUIET_NS	10000000	/* no span handed over for this long: insert */

struct uf_insert {
	struct uf_work work;
	struct uf_insert *next;		/* on inserts->pending */
	struct uf_object *obj;		/* a reference */
	uint64_t pg, n;
	struct uf_bounce *bounce;	/* the fill's buffer, once queued */
	long charged;			/* the fill's budget charge left */
	bool queued;
};

struct uf_inserts {
	struct uf_worker *w;
	pthread_mutex_t lock;
	pthread_cond_t done;
	pthread_cond_t go;		/* a waiter came, or the mm goes */
	struct uf_insert *pending;
	size_t nqueued;			/* on the worker, not yet run */
	size_t nwaiters;		/* in insert_wait() */
	uint64_t handed_ns;		/* the last span handed over */
	bool stopping;
	size_t nspare;
	struct uf_bounce *spare;
};

int uf_inserts_start(struct uf_mm *mm)
{
	struct uf_inserts *in = calloc(1, sizeof(*in));
	pthread_condattr_t ca;
	int ret;

	if (!in)
		return -ENOMEM;
	ret = uf_worker_new(&in->w);
	if (ret) {
		free(in);
		return ret;
	}
	pthread_mutex_init(&in->lock, NULL);
	uf_lockdep_class(&in->lock, UF_LK_INSERT);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&in->done, &ca);
	pthread_cond_init(&in->go, &ca);
	pthread_condattr_destroy(&ca);
	mm->inserts = in;
	return 0;
}

/* Drop what is queued (after the inserts under way), then free it all. */
void uf_inserts_stop(struct uf_mm *mm)
{
	struct uf_inserts *in = mm->inserts;
	struct uf_bounce *b, *next;

	if (!in)
		return;
	pthread_mutex_lock(&in->lock);
	in->stopping = true;		/* an insert waiting for a pause goes on */
	pthread_cond_broadcast(&in->go);
	pthread_mutex_unlock(&in->lock);
	uf_worker_free(&in->w);
	for (b = in->spare; b; b = next) {
		next = b->next;
		uf_bounce_free(b);
	}
	pthread_mutex_destroy(&in->lock);
	pthread_cond_destroy(&in->done);
	pthread_cond_destroy(&in->go);
	free(in);
	mm->inserts = NULL;
}

/*
 * Span [@pg, @pg + @n) of read-only @obj is about to go to another process
 * before the cache: pending from now (fills of it wait), until
 * uf_insert_queue() hands it over or uf_insert_end() ends it (the fill
 * inserted it itself).  NULL: no memory (the fill inserts its own,
 * unannounced).
 * Locking: takes inserts->lock.
 */
struct uf_insert *uf_insert_begin(struct uf_object *obj, uint64_t pg, uint64_t n)
{
	struct uf_inserts *in = obj->mm->inserts;
	struct uf_insert *it;

	if (!in)
		return NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->obj = obj;
	it->pg = pg;
	it->n = n;
	pthread_mutex_lock(&in->lock);
	it->next = in->pending;
	in->pending = it;
	__atomic_add_fetch(&obj->ninserts, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&in->lock);
	return it;
}

/* @it is over (its pages inserted, or given up): off the pending list,
 * its waiters woken, its buffer kept as a spare or freed.
 * Locking: takes inserts->lock. */
void uf_insert_end(struct uf_insert *it)
{
	struct uf_inserts *in = it->obj->mm->inserts;
	struct uf_bounce *b = it->bounce;
	struct uf_insert **pp;

	pthread_mutex_lock(&in->lock);
	for (pp = &in->pending; *pp && *pp != it; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = it->next;
	__atomic_sub_fetch(&it->obj->ninserts, 1, __ATOMIC_RELEASE);
	if (it->queued)
		in->nqueued--;
	if (b && in->nspare < INSERT_SPARES) {
		b->next = in->spare;
		in->spare = b;
		in->nspare++;
		b = NULL;
	}
	pthread_cond_broadcast(&in->done);
	pthread_mutex_unlock(&in->lock);
	uf_bounce_free(b);
	free(it);
}

/* Wait while spans are being handed over (see the top), unless a fill
 * waits for one, the queue is 3/4 full, or the mm goes.
 * Locking: takes inserts->lock. */
static void insert_pause(struct uf_inserts *in)
{
	uint64_t quiet;
	struct timespec ts;

	pthread_mutex_lock(&in->lock);
	for (;;) {
		quiet = in->handed_ns + INSERT_QUIET_NS;
		if (in->stopping || in->nwaiters || 4 * in->nqueued >= 3 * INSERT_QUEUED ||
		    uf_now_ns() >= quiet)
			break;
		ts = uf_ns_timespec(quiet);
		pthread_cond_timedwait(&in->go, &in->lock, &ts);
	}
	pthread_mutex_unlock(&in->lock);
}

/* The insert thread's work: @it's pages into the cache (unless the mm is
 * going: then dropped), its charge given back, its waiters woken. */
static void insert_run(struct uf_work *work, bool run)
{
	struct uf_insert *it = (struct uf_insert *)work;
	struct uf_object *obj = it->obj;
	uint64_t end;

	if (run)
		insert_pause(obj->mm->inserts);
	if (run && !uf_object_orphaned(obj)) {
		pthread_rwlock_rdlock(&obj->invalidate_lock);
		end = DIV_ROUND_UP(__atomic_load_n(&obj->size, __ATOMIC_ACQUIRE), PAGE_SIZE);
		if (end > it->pg + it->n)
			end = it->pg + it->n;
		if (it->pg < end)
			(void)fill_span_insert(obj, it->pg, end, it->bounce->p, UF_FILL_ANY, NULL,
					       NULL, NULL, false, &it->charged);
		pthread_rwlock_unlock(&obj->invalidate_lock);
	}
	uf_cache_uncharge(obj->mm, (size_t)it->charged);
	uf_insert_end(it);
	uf_object_put(obj);
}

/*
 * Hand pending @it over to the insert thread with the fill's buffer
 * *@bounce (the span's bytes from its start) and its charge *@charged:
 * both are the insert's now (*@charged 0; *@bounce a spare, or NULL).
 * False (nothing taken) when the thread has enough queued, or cannot take
 * it, or the budget is small: what is pending cannot be evicted, so a
 * quarter of the budget at most.
 * Locking: obj->invalidate_lock held shared; takes inserts->lock, then
 * the worker's.
 */
bool uf_insert_queue(struct uf_insert *it, struct uf_bounce **bounce, long *charged)
{
	struct uf_inserts *in = it->obj->mm->inserts;
	uint64_t budget = it->obj->mm->budget_pages;
	struct uf_bounce *b;

	if (budget && 4 * INSERT_QUEUED * it->n > budget)
		return false;
	pthread_mutex_lock(&in->lock);
	if (in->nqueued >= INSERT_QUEUED) {
		pthread_mutex_unlock(&in->lock);
		return false;
	}
	in->nqueued++;
	in->handed_ns = uf_now_ns();
	it->queued = true;
	b = in->spare;
	if (b) {
		in->spare = b->next;
		in->nspare--;
	}
	pthread_mutex_unlock(&in->lock);
	it->bounce = *bounce;
	it->charged = *charged;
	it->work.fn = insert_run;
	uf_object_get(it->obj);
	if (!uf_worker_add(in->w, &it->work)) {
		uf_object_put(it->obj);
		it->bounce = NULL;
		pthread_mutex_lock(&in->lock);
		in->nqueued--;
		it->queued = false;
		if (b) {
			b->next = in->spare;
			in->spare = b;
			in->nspare++;
		}
		pthread_mutex_unlock(&in->lock);
		return false;
	}
	*bounce = b;
	*charged = 0;
	return true;
}

/* Is a span of @obj that meets [first, last) pending (@obj NULL: any)?
 * Locking: inserts->lock held. */
static bool __insert_pending(struct uf_inserts *in, struct uf_object *obj, uint64_t first,
			     uint64_t last)
{
	struct uf_insert *it;

	for (it = in->pending; it; it = it->next)
		if (!obj || (it->obj == obj && it->pg < last && first < it->pg + it->n))
			return true;
	return false;
}

/*
 * Wait (INSERT_WAIT_MS at most) until no span of @obj that meets [first,
 * last) is pending (@obj NULL: none of the mm's @mm).
 * Locking: any ORDER lock may be held (the insert takes
 * obj->invalidate_lock shared only, which a reader may hold); takes
 * inserts->lock.
 */
static void insert_wait(struct uf_mm *mm, struct uf_object *obj, uint64_t first, uint64_t last)
{
	struct uf_inserts *in = mm->inserts;
	struct timespec ts;

	if (!in)
		return;
	ts = uf_ns_timespec(uf_now_ns() + INSERT_WAIT_MS * 1000000ULL);
	pthread_mutex_lock(&in->lock);
	if (!__insert_pending(in, obj, first, last)) {
		pthread_mutex_unlock(&in->lock);
		return;
	}
	in->nwaiters++;
	pthread_cond_signal(&in->go);	/* no pause while a fill waits */
	while (__insert_pending(in, obj, first, last))
		if (pthread_cond_timedwait(&in->done, &in->lock, &ts))
			break;
	in->nwaiters--;
	pthread_mutex_unlock(&in->lock);
}

void uf_insert_wait(struct uf_object *obj, uint64_t first, uint64_t last)
{
	if (__atomic_load_n(&obj->ninserts, __ATOMIC_ACQUIRE))
		insert_wait(obj->mm, obj, first, last);
}

void uf_inserts_flush(struct uf_mm *mm)
{
	insert_wait(mm, NULL, 0, 0);
}
