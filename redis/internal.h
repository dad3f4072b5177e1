/* SPDX-License-Identifier: MIT */
/*
 * libufault-redis internals: the URL (url.c), the cluster client with its
 * routing (cluster.c) and the store (store.c).
 */
#ifndef UF_REDIS_INTERNAL_H
#define UF_REDIS_INTERNAL_H

#include "../src/lib/lockdep.h"	/* the lock order: src/lib/lockorder.h */

#include <hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RC_EXPORT	__attribute__((visibility("default")))

#define RC_SLOTS	16384
#define RC_NO_NODE	(-1)
#define RC_PAGE		4096u
#define RC_EXTENT_PAGES	512u	/* pages per hash tag: the largest readahead window */
#define RC_NAME_MAX	512

/* ------------------------------------------------------------------ */
/* url.c                                                               */
/* ------------------------------------------------------------------ */

struct rc_seed {
	char *host;
	int port;
};

/* What a redis:// URL says (see uf_redis_open()). */
struct rc_config {
	char *user;		/* NULL: the default user */
	char *pass;		/* NULL: no AUTH */
	struct rc_seed *seeds;
	unsigned int nseeds;
	char *name;
	int replicas;		/* -1: 1 when the cluster has replicas, else 0 */
	unsigned int timeout_ms;
	unsigned int lease_ms;
};

int rc_parse_url(const char *url, struct rc_config *cfg);
void rc_config_free(struct rc_config *cfg);

/* ------------------------------------------------------------------ */
/* cluster.c                                                           */
/* ------------------------------------------------------------------ */

/* Where one element of a sink's reply goes: @len bytes (at most 4096) at
 * @buf.  (struct rc_cmd) */
struct rc_dest {
	char *buf;
	size_t len;
};

/*
 * One command, routed by the slot of argv[keyarg].  The argument bytes are not
 * copied: they must stay valid until rc_exec() returns.  With @dest or
 * @dests set (a sink), the elements of the command's array reply (HMGET)
 * are copied straight to their place, a nil or short element zero-filled,
 * and the reply is then an empty array: with @dest, element i to @dest +
 * i * 4096, at most @destlen bytes in all; with @dests, element i to
 * @dests[i] (elements past @ndests are dropped).
 */
struct rc_cmd {
	int argc;
	int keyarg;		/* argv index of the routing key; 0 means 1 */
	const char **argv;
	size_t *argvlen;
	char *dest;
	size_t destlen;
	const struct rc_dest *dests;
	size_t ndests;
	redisReply *reply;	/* set by rc_exec(); rc_cmds_clear() frees it */

	/* rc_exec()'s own */
	int slot, node, ask_node;
	bool done;
};

struct rc_cluster;

int rc_cluster_new(const struct rc_config *cfg, struct rc_cluster **clp);
void rc_cluster_free(struct rc_cluster *cl);
/* Does any master of the last slot map have a replica that is not failed? */
bool rc_cluster_has_replicas(struct rc_cluster *cl);

/*
 * Run @cmds (in any order across nodes, in order on each node), following
 * MOVED and ASK, refreshing the slot map and backing off on TRYAGAIN,
 * CLUSTERDOWN, LOADING, MASTERDOWN, READONLY and lost connections, for at
 * most @timeout_ms.  With @replicas > 0 every node written to must then
 * acknowledge WAIT @replicas, or its commands are sent again.
 * Return: 0 when every command has a reply (which may be an error reply
 * other than those above), or -ETIMEDOUT / -EHOSTUNREACH when the time ran
 * out, -EACCES, -EPROTO, -ENOMEM.
 */
int rc_exec(struct rc_cluster *cl, struct rc_cmd *cmds, size_t n, int replicas,
	    unsigned int timeout_ms);
void rc_cmds_clear(struct rc_cmd *cmds, size_t n);

/*
 * Commands whose replies are read later, maybe by another thread: the
 * store's read-ahead of the next window while the core copies this one.
 * rc_send() routes @cmds by the slot map as it is and sends them on a
 * client of their own, with no retry (the argument bytes need only last
 * until it returns): 0 and *pp, or -EAGAIN / -ENOMEM.  rc_recv() reads
 * every reply as rc_exec() reads one with @dest (an array into @dest,
 * @dest NULL: dropped) and frees @p: 0 when every command got a reply that
 * is no error, else -EAGAIN (run the commands with rc_exec() instead).
 * @cmds must be @p's count, in the order sent; only dest and destlen are
 * read, replies are set (rc_cmds_clear() frees them).
 */
struct rc_pending;
int rc_send(struct rc_cluster *cl, const struct rc_cmd *cmds, size_t n,
	    unsigned int timeout_ms, struct rc_pending **pp);
int rc_recv(struct rc_cluster *cl, struct rc_pending *p, struct rc_cmd *cmds);

/* The -errno an error reply stands for (0 for a reply that is no error). */
int rc_reply_errno(const redisReply *r);

unsigned int rc_key_slot(const char *key, size_t len);

#endif
