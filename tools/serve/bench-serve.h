/* SPDX-License-Identifier: MIT */
/*
 * ufault-bench --only serve: a Firecracker-style client served by
 * uf_object_serve_uffd() from another process (tools/serve/bench-serve.c).
 * Kept out of ufault-bench.c so that the two grow apart without
 * conflicts.
 */
#ifndef UFAULT_BENCH_SERVE_H
#define UFAULT_BENCH_SERVE_H

#include <stdbool.h>
#include <stddef.h>

struct bench_serve_opts {
	const char *tmpfs_dir;	/* where the data file lives */
	unsigned int repeat;	/* runs per row (0: default) */
	bool quick;		/* smoke test: small sizes */
	bool check;		/* exit 1 when a goal is missed */
	bool flood_only;	/* the serve-flood rows alone (--only serve-flood) */
	bool ws_only;		/* the serve-ws rows alone (--only serve-ws) */
};

/* Returns ufault-bench's exit status: 0, 1 goal missed (with check), 2 error,
 * 77 userfaultfd not usable. */
int bench_serve_main(const struct bench_serve_opts *o);

#endif
