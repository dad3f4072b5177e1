/* SPDX-License-Identifier: MIT */
/*
 * ufault-redis - ufault objects whose pages live in a Redis Cluster.
 *
 * A separate library (libufault-redis, which links hiredis) so the core
 * keeps no dependency:  cc prog.c $(pkg-config --cflags --libs ufault-redis)
 *
 * An object NAME is stored as (hash tags in braces):
 *   uf:{NAME}:m        its metadata (size) - a hash
 *   uf:{NAME}:l        the writer's lease - a string with an expiry
 *   uf:{NAME:E}:x      extent E: a hash whose field i is page E*512+i
 *                      (4096 bytes, fewer for the object's last page)
 * A page never written is not stored and reads as zeros.  One extent is one
 * hash slot, so a readahead window of up to 512 pages is one round trip to
 * one node.
 */
#ifndef UFAULT_REDIS_H
#define UFAULT_REDIS_H

#include <ufault.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * uf_redis_open - an object stored in a Redis Cluster.
 * @mm: the mm whose cache holds the object's pages.
 * @url: redis://[[user]:password@]host:port[,host:port...]/NAME[?params]
 *	Seed nodes: any one reachable is enough; the rest of the cluster is
 *	found from it.  Without a password in @url the environment variable
 *	UFAULT_REDIS_PASSWORD is used, when set.  NAME: 1 to 512 bytes, no
 *	'{', '}', '?', '#', '%', space or control characters.  Params, joined
 *	by '&': replicas=N (0-16: replicas that must acknowledge a sync;
 *	default 1 when the cluster's masters have replicas, else 0),
 *	timeout_ms=T (1-86400000: how long an operation retries through
 *	redirections, failovers and lost connections, and how long opening
 *	tries the seeds, each connect() waiting at most 1 s; default 15000),
 *	lease_ms=L (100-3600000: the writer's lease expiry; default 10000).
 * @oflags: O_RDONLY or O_RDWR, optionally with O_CREAT (a new object has
 *	size 0; grow it with uf_object_truncate()).
 * @objp: on success, the object with one reference; uf_object_put() of
 *	the last reference writes what is dirty and releases the lease.
 *
 * O_RDWR takes the object's lease (a key with an expiry, renewed by a
 * thread while the object lives): one writer, any number of readers, in
 * any process on any host.  A sync (uf_object_sync(), uf_msync())
 * returns only after the data is on the masters and acknowledged by
 * replicas=N replicas (WAIT).  A read that cannot be served within
 * timeout_ms gives the access SIGBUS; a sync that cannot be served fails
 * and its pages stay dirty.
 *
 * Return: 0, or -EINVAL (NULL argument, bad @oflags, bad @url: scheme,
 * user/password, host, port, NAME or a parameter), -ENOENT (no such
 * object and no O_CREAT), -EACCES (wrong password, or the ACL user may
 * not run the commands needed), -EBUSY (O_RDWR while another writer
 * holds the lease), -ECONNREFUSED (every seed node refused the
 * connection: nothing listens there; reported after one try of each, not
 * retried), -EHOSTUNREACH (no seed node accepted a connection within
 * timeout_ms), -ETIMEDOUT (nodes were reached, or a connect() to an
 * unreachable host took its 1 s, but the cluster did not answer in time), -EPROTO (not a Redis Cluster), -ENOMEM, or an
 * error of uf_object_create().
 */
int uf_redis_open(struct uf_mm *mm, const char *url, int oflags, struct uf_object **objp);

/**
 * uf_redis_remove - delete the object @url names and all its pages.
 * @url: as for uf_redis_open() (replicas and timeout_ms apply).
 *
 * Takes the object's lease for the time of the removal, so an object open
 * for writing is not removed.
 *
 * Return: 0, or -EINVAL (bad @url), -ENOENT (no such object), -EBUSY (a
 * writer holds the lease), -EACCES, -ECONNREFUSED, -EHOSTUNREACH,
 * -ETIMEDOUT, -EPROTO,
 * -ENOMEM.
 */
int uf_redis_remove(const char *url);

#ifdef __cplusplus
}
#endif
#endif /* UFAULT_REDIS_H */
