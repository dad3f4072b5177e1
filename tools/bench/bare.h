/* SPDX-License-Identifier: MIT */
/*
 * The minimal prefetch target the benches measure ufault's replay
 * against: a memfd registered MISSING through a shared mapping, which
 * UFFDIO_COPY fills (ufault's cache), and mapped private, which
 * MADV_POPULATE_READ maps (a read-only object's mapping).  Nothing else:
 * no handler thread, no page state, no queue.
 */
#ifndef UFAULT_BENCH_BARE_H
#define UFAULT_BENCH_BARE_H

#include <stddef.h>
#include <stdint.h>

struct bare_map {
	int mfd, uffd;
	char *cm, *pm;		/* the shared (registered) and private mappings */
	size_t size;
};

/* A userfaultfd, O_NONBLOCK: from /dev/userfaultfd where it is open to
 * us, else the system call (user-mode faults only where that is all it
 * allows).  Returns the fd or -errno. */
int bare_uffd_open(void);

/* Set up @m over a new memfd of @size bytes; 0 or -errno (nothing left). */
int bare_map_open(struct bare_map *m, size_t size);

/* Copy @len bytes from @src into the memfd at @off (one UFFDIO_COPY, one
 * more past each page already there: EEXIST); 0 or -errno. */
int bare_map_copy(struct bare_map *m, size_t off, const void *src, size_t len);

/* bare_map_copy(), then map the bytes in the private mapping (one
 * MADV_POPULATE_READ); 0 or -errno. */
int bare_map_fill(struct bare_map *m, size_t off, const void *src, size_t len);

/* The minimal handler: until @stopfd is readable, serve each fault on
 * either mapping with @readpage(@arg, offset, page buffer) (0 or -errno),
 * one UFFDIO_COPY of the page (EEXIST where a filler was first) and a
 * UFFDIO_WAKE of each mapping's page (zeros where @readpage failed);
 * *@faults counts them.  Returns 0 or the first -errno (of @readpage, or
 * of a copy: the fault it failed on left unserved). */
int bare_map_serve(struct bare_map *m, int stopfd, int (*readpage)(void *arg, size_t off,
								      void *buf),
		   void *arg, uint64_t *faults);

void bare_map_close(struct bare_map *m);

/* How a replay is judged against a minimal loop timed in the same round:
 * the median of the rounds' ratios @a[r] / @b[r] (@n rounds, at most
 * 1000); *@lo and *@hi, when given, the lowest and highest. */
double bare_median_ratio(const double *a, const double *b, unsigned int n, double *lo,
			 double *hi);

#endif
