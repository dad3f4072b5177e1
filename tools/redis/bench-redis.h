/* SPDX-License-Identifier: MIT */
/*
 * ufault-bench --store URL: reads from objects in a Redis Cluster beside
 * the file store, the raw references they are judged against (one GET per
 * page, a 512-key MGET, measured with hiredis against the slot's node),
 * and --only layout: what each way of laying pages out in the cluster
 * costs per 4 KiB page.  Kept out of ufault-bench.c so that the two grow
 * apart without conflicts.
 */
#ifndef UFAULT_BENCH_REDIS_H
#define UFAULT_BENCH_REDIS_H

#include <stdbool.h>
#include <stddef.h>

struct bench_redis_opts {
	const char *url;	/* redis://[[user]:password@]host:port[,...]/NAME[?...] */
	const char *only;	/* NULL, "store" (cold-seq, cold-rand), "layout", or a case */
	const char *tmpfs_dir;	/* where the file-store reference lives */
	size_t size;		/* bytes of data per case (0: default) */
	unsigned int repeat;	/* runs per case (0: default) */
	bool check;		/* exit 1 when a goal is missed */
	bool quick;		/* --quick: figures only, no verdicts */
};

/* Returns ufault-bench's exit status: 0, 1 goal missed (with check), 2 error,
 * 77 userfaultfd not usable. */
int bench_redis_main(const struct bench_redis_opts *o);

#endif
