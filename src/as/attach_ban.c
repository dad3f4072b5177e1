// SPDX-License-Identifier: MIT
/*
 * Bans of the uids whose ufault clients lied to the server about their
 * mappings (uf_object_serve_ban()).  A client that names, for a mapping
 * of the cache, another file offset than the one it maps makes its own
 * faults name pages the cache already holds, at the same address, again
 * and again: as.c (as_unresolved) catches that, gives the access
 * SIGBUS, ends its connection (as_lied) and bills its uid here; the
 * server of clients (attach_srv.c) refuses that uid's next clients with
 * -EPERM until the ban ends.  Why a ban of the uid, not only an end of
 * the connection: a liar cut off reconnects at once, and each new lie
 * costs the server a store read and a handful of faults that an honest
 * tenant pays for in CPU.
 *
 * A ban lasts BAN_FIRST_MS, twice as long at each lie after, up to
 * BAN_MAX_MS; lies BAN_FORGET_MS apart start again at the first.  The
 * table (mm->bans, under mm->attach_lock) keeps the last UF_ATTACH_BANS
 * uids; when it is full, the ban that ended (or ends) first makes room.
 */
#define _GNU_SOURCE
#include "as/as.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define BAN_FIRST_MS	1000ULL
#define BAN_MAX_MS	64000ULL
#define BAN_FORGET_MS	600000ULL

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* @uid's entry, or with @take a free one (or the one whose ban ended, or
 * ends, first) made its, or NULL.  Locking: mm->attach_lock held. */
static struct uf_attach_ban *__ban_slot(struct uf_mm *mm, uid_t uid, bool take)
{
	struct uf_attach_ban *b, *old = mm->bans;

	for (b = mm->bans; b < mm->bans + UF_ATTACH_BANS; b++)
		if (b->strikes && b->uid == uid)
			return b;
	if (!take)
		return NULL;
	for (b = mm->bans; b < mm->bans + UF_ATTACH_BANS && old->strikes; b++)
		if (!b->strikes || b->until < old->until)
			old = b;
	memset(old, 0, sizeof(*old));
	old->uid = uid;
	return old;
}

/*
 * uf_attach_ban - a client of @uid, process @pid, lied: refuse its uid's
 * clients a while.  Locking: takes mm->attach_lock.
 */
void uf_attach_ban(struct uf_mm *mm, uid_t uid, pid_t pid)
{
	struct uf_attach_ban *b;
	uint64_t now = now_ms(), ms = BAN_FIRST_MS;
	unsigned int k;

	pthread_mutex_lock(&mm->attach_lock);
	b = __ban_slot(mm, uid, true);
	if (now - b->last >= BAN_FORGET_MS)
		b->strikes = 0;
	b->strikes++;
	for (k = 1; k < b->strikes && ms < BAN_MAX_MS; k++)
		ms *= 2;
	b->until = now + (ms < BAN_MAX_MS ? ms : BAN_MAX_MS);
	b->last = now;
	b->pid = pid;
	pthread_mutex_unlock(&mm->attach_lock);
}

/*
 * uf_attach_ban_left - the ms @uid's clients are still refused for, 0 if
 * none; *@pidp (if not NULL, and banned): the liar that began it.
 * Locking: takes mm->attach_lock.
 */
uint64_t uf_attach_ban_left(struct uf_mm *mm, uid_t uid, pid_t *pidp)
{
	struct uf_attach_ban *b;
	uint64_t left = 0, now = now_ms();

	pthread_mutex_lock(&mm->attach_lock);
	b = __ban_slot(mm, uid, false);
	if (b && b->until > now) {
		left = b->until - now;
		if (pidp)
			*pidp = b->pid;
	}
	pthread_mutex_unlock(&mm->attach_lock);
	return left;
}

UF_EXPORT int uf_object_serve_ban(struct uf_object *obj, uid_t uid, pid_t *pidp)
{
	if (!obj || !obj->mm)
		return -EINVAL;
	return (int)((uf_attach_ban_left(obj->mm, uid, pidp) + 999) / 1000);
}
