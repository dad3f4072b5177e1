// SPDX-License-Identifier: MIT
/*
 * ufault-bench - the per-page cost of ufault, of the kernel's own mmap and
 * of a minimal userfaultfd loop, on the same bytes, in one run.
 *
 * Every case maps a fresh range and touches one 8-byte word per page, in
 * sequential or in a fixed random order (each page exactly once); only the
 * touches are timed.  Each word is checked against the page's tag, so a
 * wrong or zero page is an error, not a fast result.
 *
 *   warm-*   ufault: the object's cache already holds every page, so the
 *            kernel maps them from the memfd; kernel: a tmpfs file.  With
 *            huge extents (the default; "ufault") every 2 MiB extent is one
 *            huge page mapped by one PMD: goal >= 5x the kernel's throughput;
 *            without ("ufault-4k", UF_MM_NO_HUGE) the same shmem machinery
 *            as the kernel's: goal >= 1x.
 *   cold-*   ufault: a new object (empty cache) over a file on tmpfs and on
 *            disk; kernel: mmap of those files; uffd-min: anonymous memory
 *            registered MISSING, one handler thread, poll + read of one
 *            event + UFFDIO_COPY of one page per fault - the floor of a
 *            round trip.  Goals: sequential ufault >= 10x cheaper per page
 *            than the floor (readahead), random <= 1.2x its cost.
 *   zipf     ufault under a cache budget (size/8, 8 MiB by default): reads of
 *            one byte at Zipf-distributed (s = 0.99) pages of a tmpfs file
 *            10x the budget, a fixed number of accesses (200000 for 8 MiB,
 *            scaled with the budget), once with the default reclaim policy
 *            (CLOCK) and once with FIFO, each on a fresh mm and object (an
 *            empty cache).  The popularity ranks are scattered over the file
 *            by a random permutation, so the hot pages are not its first.
 *            The sequence of pages is drawn once, before any timing, and is
 *            the same for both policies.  Goals: the default needs fewer major
 *            faults than FIFO, and no more time per access (<= 1.0x).  The
 *            median is by time (the major faults of one sequence hardly
 *            vary); there is no warm-up round.
 *
 * The disk file is fsync()ed and dropped with POSIX_FADV_DONTNEED before
 * every cold run that reads it; mincore() then says how much of it was
 * still cached, and the table prints that.  The goals are judged on the
 * tmpfs store: a disk's latency is neither ufault's nor the floor's.
 *
 * These machines drift 2-3x over minutes: after one untimed warm-up round
 * the cases run interleaved (repeat 1 of every case, then repeat 2, ...)
 * and each reports its median, so only the ratios of one run mean anything.
 *
 * --store redis://...: cold reads from objects in a Redis Cluster beside the
 * file store and raw hiredis references, or (--only layout) the cost per
 * page of each way to lay pages out in the cluster: tools/redis/bench-redis.c.
 * --store http(s)://...: cold reads of that (read-only) object beside a
 * tmpfs copy of its bytes and one range GET per page: tools/bench/http-store.c.
 *
 * Exit status: 0 (goals missed too, unless --check), 1 a goal missed with
 * --check, 2 an error, 77 userfaultfd not usable here.
 */
#define _GNU_SOURCE
#include <ufault.h>
#include "bench-redis.h"
#include "serve/bench-serve.h"
#include "http/bench-http.h"
#include "bench/bare.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/userfaultfd.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG		UF_PAGE_SIZE
#define PG_SHIFT	12
#define SEED		0x7566617574626e63ULL	/* fixed: same order every run */
#define EXIT_MISS	1
#define EXIT_ERR	2
#define EXIT_SKIP	77

#define ZIPF_S		0.99
#define ZIPF_DATA_X	10		/* the data is 10x the cache budget */
#define ZIPF_ACCESSES	200000		/* for an 8 MiB budget; scaled with it */
#define ZIPF_SAMPLE	4096		/* accesses between uf_mm_stats() samples */

enum bench_order { ORDER_SEQ, ORDER_RAND, ORDER_ZIPF, NR_ORDERS };
enum bench_store { STORE_TMPFS, STORE_DISK, STORE_ANON };

static const char *const order_names[] = { "sequential", "random", "zipf" };
static const char *const store_names[] = { "tmpfs", "disk", "anon" };

/* The word at the start of page @p of the data; never zero. */
static inline uint64_t page_tag(uint64_t p)
{
	return 0x7566000000000000ULL | p;
}

/* A data file: created, filled, unlinked at once (nothing is left behind
 * if the run dies), and reopened by ufault through /proc/self/fd. */
struct bench_file {
	const char *dir;
	char path[64];
	int fd;
	long fstype;
};

/* One timed run of one case. */
struct sample {
	double ns_per_page;
	uint64_t kfaults;	/* page faults the touching thread took */
	uint64_t events;	/* userfaultfd round trips served */
	uint64_t majors;	/* ufault: faults that read their page */
	uint64_t ra_pages;	/* ufault: pages filled beyond the faulting one */
	uint64_t pages_read;	/* ufault: pages read from the store */
	unsigned int svc_us;	/* ufault: median handler time per fault, upper
				   bound in us (event read to wake); 0 n/a */
	double cached;		/* disk: fraction cached when the run began; -1 n/a */
	uint64_t evicted;	/* zipf: pages reclaimed */
	uint64_t max_cache;	/* zipf: most cache_pages seen (sampled) */
};

struct bench {
	size_t size, npages;
	unsigned int repeat;
	bool check;
	bool quick;			/* --quick: figures only, no verdicts */
	const char *only;		/* run only the cases of this name */
	uint32_t *order[NR_ORDERS];	/* [ORDER_ZIPF]: zipf.naccess pages */
	struct bench_file file[2];	/* indexed by STORE_TMPFS, STORE_DISK */
	struct uf_mm *mm;		/* default config, shared by the ufault cases */
	struct uf_object *warm;		/* its cache is kept full */
	struct uf_mm *mm_nohuge;	/* UF_MM_NO_HUGE, for the -4k rows */
	struct uf_object *warm_nohuge;
	/* the warm objects' files: [0] warm, [1] warm_nohuge.  Copies of
	 * the tmpfs file, because an O_RDWR object locks its file and the
	 * cold -rw cases open the tmpfs file O_RDWR */
	struct bench_file file_warm[2];
	struct {
		uint64_t budget;	/* bytes of cache */
		size_t size, npages;	/* the data */
		size_t naccess;
		double pinned_miss;	/* misses of a cache pinning the hottest
					   budget pages: a reference */
		struct bench_file file;	/* on the tmpfs dir */
	} zipf;
};

struct bench_case;
typedef int (*bench_run_fn)(struct bench *b, const struct bench_case *c, struct sample *s);

enum ratio_kind {
	RATIO_NONE,
	RATIO_SPEEDUP,	/* ref ns / this ns: throughput, "x cheaper"; goal is a floor */
	RATIO_COST,	/* this ns / ref ns; goal is a ceiling */
	RATIO_MAJORS,	/* ref major faults / this; goal is a strict floor */
};

/*
 * A case: what is measured (@target over @store, in @order) and how it
 * compares.  @ref names another row of the same @name as "target/store";
 * @goal 0 prints the ratio for information only.  @time_goal: a case
 * judged on major faults is also judged on its time per access against
 * the same reference (this / ref at most @time_goal).  @policy: the reclaim
 * policy of a budgeted case.  A new case is one run function and one row.
 */
struct bench_case {
	const char *name;
	const char *target;
	enum bench_store store;
	enum bench_order order;
	bench_run_fn run;
	const char *ref;
	enum ratio_kind ratio;
	double goal;
	double time_goal;
	unsigned int policy;
	int prot;		/* of the mapping: 0 means PROT_READ */
	bool write;		/* store each page's tag (unchanged) instead of loading it */
	unsigned int threads;	/* rand2: faulting threads and handler threads */
	bool rw_object;		/* cold: the object opened O_RDWR (mapped PROT_READ) */
	bool nohuge;		/* on an mm with UF_MM_NO_HUGE */
};

static int case_prot(const struct bench_case *c)
{
	return c->prot ? c->prot : PROT_READ;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* @id's time in ns: CLOCK_MONOTONIC (now_ns()), or a CPU clock
 * (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID). */
static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint64_t thread_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int make_orders(struct bench *b)
{
	uint64_t s = SEED;
	size_t i;

	for (i = ORDER_SEQ; i <= ORDER_RAND; i++) {
		b->order[i] = malloc(b->npages * sizeof(uint32_t));
		if (!b->order[i])
			return -ENOMEM;
	}
	for (i = 0; i < b->npages; i++)
		b->order[ORDER_SEQ][i] = b->order[ORDER_RAND][i] = (uint32_t)i;
	for (i = b->npages - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = (size_t)(splitmix64(&s) % (i + 1));
		uint32_t t = b->order[ORDER_RAND][i];

		b->order[ORDER_RAND][i] = b->order[ORDER_RAND][j];
		b->order[ORDER_RAND][j] = t;
	}
	return 0;
}

/*
 * The zipf case's pages, drawn once.  Rank k (0 the hottest) comes with
 * probability proportional to 1/(k+1)^s: a uniform draw is looked up in
 * the CDF by binary search.  Rank k is page perm[k], a random permutation,
 * so the hot pages lie anywhere in the file.
 */
static int make_zipf(struct bench *b)
{
	size_t n = b->zipf.npages, budget = b->zipf.budget / PG, i;
	double *cdf = malloc(n * sizeof(*cdf)), sum = 0;
	uint32_t *perm = malloc(n * sizeof(*perm));
	uint32_t *seq = malloc(b->zipf.naccess * sizeof(*seq));
	uint64_t s = SEED ^ 0x7a697066;		/* not the random order's stream */

	if (!cdf || !perm || !seq) {
		free(cdf);
		free(perm);
		free(seq);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		cdf[i] = sum += pow((double)(i + 1), -ZIPF_S);
	for (i = 0; i < n; i++)
		cdf[i] /= sum;
	cdf[n - 1] = 1.0;
	b->zipf.pinned_miss = budget < n ? 1.0 - cdf[budget - 1] : 0;

	for (i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (i = n - 1; i > 0; i--) {
		size_t j = (size_t)(splitmix64(&s) % (i + 1));
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}

	for (i = 0; i < b->zipf.naccess; i++) {
		double u = (double)(splitmix64(&s) >> 11) * 0x1p-53;	/* [0, 1) */
		size_t lo = 0, hi = n - 1;

		while (lo < hi) {	/* the first rank whose CDF exceeds u */
			size_t mid = lo + (hi - lo) / 2;

			if (cdf[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		seq[i] = perm[lo];
	}
	b->order[ORDER_ZIPF] = seq;
	free(cdf);
	free(perm);
	return 0;
}

/*
 * The timed part of every case: one load per page in @order.  Return the
 * number of pages whose tag is wrong (0 when all is well).
 */
static __attribute__((noinline)) size_t touch(const char *base, const uint32_t *order,
					       size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		uint32_t p = order[i];

		bad += *(const volatile uint64_t *)(base + ((size_t)p << PG_SHIFT)) != page_tag(p);
	}
	return bad;
}

/* The first-write variant: one store per page, of the tag the page holds
 * already (the data stays as it was). */
static __attribute__((noinline)) void touch_write(char *base, const uint32_t *order, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t p = order[i];

		*(volatile uint64_t *)(base + ((size_t)p << PG_SHIFT)) = page_tag(p);
	}
}

/* Time touch() over @base; fill s->ns_per_page and s->kfaults. */
static int timed_touch(struct bench *b, const struct bench_case *c, const char *base,
		       struct sample *s)
{
	uint64_t f0 = thread_faults(), t0 = now_ns(), t1;
	size_t bad = 0;

	if (c->write)
		touch_write((char *)base, b->order[c->order], b->npages);
	else
		bad = touch(base, b->order[c->order], b->npages);

	t1 = now_ns();
	s->kfaults = thread_faults() - f0;
	s->ns_per_page = (double)(t1 - t0) / (double)b->npages;
	if (bad) {
		fprintf(stderr, "ufault-bench: %s %s/%s: %zu of %zu pages read wrong bytes\n",
			c->name, c->target, store_names[c->store], bad, b->npages);
		return -EIO;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Data files                                                          */
/* ------------------------------------------------------------------ */

static int file_create(struct bench_file *f, size_t size)
{
	char tmpl[PATH_MAX];
	struct statfs sfs;
	size_t chunk = 1 << 20, off, i;
	char *buf;
	int ret = 0;

	if (snprintf(tmpl, sizeof(tmpl), "%s/ufault-bench.XXXXXX", f->dir) >= (int)sizeof(tmpl))
		return -ENAMETOOLONG;
	f->fd = mkostemp(tmpl, O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	unlink(tmpl);
	snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", f->fd);
	f->fstype = fstatfs(f->fd, &sfs) == 0 ? (long)sfs.f_type : 0;

	buf = aligned_alloc(PG, chunk);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0xa5, chunk);
	for (off = 0; off < size && !ret; off += chunk) {
		size_t len = size - off < chunk ? size - off : chunk;

		for (i = 0; i < len; i += PG)
			*(uint64_t *)(buf + i) = page_tag((off + i) >> PG_SHIFT);
		if (pwrite(f->fd, buf, len, (off_t)off) != (ssize_t)len)
			ret = errno ? -errno : -EIO;
	}
	free(buf);
	if (!ret && fsync(f->fd) < 0)
		ret = -errno;
	return ret;
}

static double file_cached(struct bench *b, struct bench_file *f)
{
	unsigned char *vec = malloc(b->npages);
	size_t i, n = 0;
	void *p;

	if (!vec)
		return -1;
	p = mmap(NULL, b->size, PROT_READ, MAP_SHARED, f->fd, 0);
	if (p == MAP_FAILED || mincore(p, b->size, vec) < 0) {
		if (p != MAP_FAILED)
			munmap(p, b->size);
		free(vec);
		return -1;
	}
	for (i = 0; i < b->npages; i++)
		n += vec[i] & 1;
	munmap(p, b->size);
	free(vec);
	return (double)n / (double)b->npages;
}

/*
 * Make the next read of the disk file come from the device: write back
 * (DONTNEED skips dirty pages), then drop.  Return the fraction still
 * cached.  tmpfs files are memory: nothing to drop.
 */
static double file_make_cold(struct bench *b, enum bench_store store)
{
	struct bench_file *f = &b->file[store];

	if (store != STORE_DISK)
		return -1;
	fsync(f->fd);
	posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
	return file_cached(b, f);
}

static const char *fs_name(long type)
{
	switch (type) {
	case TMPFS_MAGIC:	return "tmpfs";
	case EXT4_SUPER_MAGIC:	return "ext4";
	case XFS_SUPER_MAGIC:	return "xfs";
	case BTRFS_SUPER_MAGIC:	return "btrfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	default:		return "other";
	}
}

/* ------------------------------------------------------------------ */
/* Cases: the kernel's mmap                                            */
/* ------------------------------------------------------------------ */

static int run_kernel(struct bench *b, const struct bench_case *c, struct sample *s)
{
	char *p;
	int ret;

	uint64_t t0;

	s->cached = file_make_cold(b, c->store);
	t0 = now_ns();
	p = mmap(NULL, b->size, case_prot(c), MAP_SHARED, b->file[c->store].fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	t0 = now_ns() - t0;
	ret = timed_touch(b, c, p, s);
	if (case_prot(c) & PROT_WRITE)	/* as ufault's, which maps what is cached */
		s->ns_per_page += (double)t0 / (double)b->npages;
	munmap(p, b->size);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Cases: ufault                                                       */
/* ------------------------------------------------------------------ */

/* The upper bound of the latency bucket holding the median fault. */
static unsigned int lat_median_us(const struct uf_stats *st0, const struct uf_stats *st1)
{
	uint64_t n = 0, sum = 0;
	int i;

	for (i = 0; i < UF_LAT_BUCKETS; i++)
		n += st1->lat_us[i] - st0->lat_us[i];
	for (i = 0; n && i < UF_LAT_BUCKETS; i++) {
		sum += st1->lat_us[i] - st0->lat_us[i];
		if (2 * sum >= n)
			return 2U << i;
	}
	return 0;
}

static int ufault_touch(struct bench *b, const struct bench_case *c, struct uf_object *obj,
			struct sample *s)
{
	struct uf_mm *mm = c->nohuge ? b->mm_nohuge : b->mm;
	struct uf_stats st0, st1;
	void *p;
	int ret;

	uint64_t t0 = now_ns();

	ret = uf_mmap(mm, b->size, case_prot(c), UF_MAP_SHARED, obj, 0, &p);
	if (ret)
		return ret;
	t0 = now_ns() - t0;
	uf_mm_stats(mm, &st0);
	ret = timed_touch(b, c, p, s);
	/* a writable mapping maps what is cached in uf_mmap(): that is timed */
	if (case_prot(c) & PROT_WRITE)
		s->ns_per_page += (double)t0 / (double)b->npages;
	uf_mm_stats(mm, &st1);
	s->majors = st1.major_faults - st0.major_faults;
	s->events = s->majors + st1.minor_faults - st0.minor_faults +
		    st1.sigbus - st0.sigbus + st1.oom - st0.oom;
	s->ra_pages = st1.readahead_pages - st0.readahead_pages;
	s->pages_read = st1.pages_read - st0.pages_read;
	s->svc_us = lat_median_us(&st0, &st1);
	uf_munmap(mm, p, b->size);
	return ret;
}

/*
 * The object's pages are in its cache already (read once); a fresh
 * mapping is served by the kernel alone.  With huge extents on (the
 * default), the run waits until the background has collapsed every
 * extent: the warm cost is that of the state ufault settles in.
 */
static int run_ufault_warm(struct bench *b, const struct bench_case *c, struct sample *s)
{
	struct uf_object **warm = c->nohuge ? &b->warm_nohuge : &b->warm;
	struct uf_mm *mm = c->nohuge ? b->mm_nohuge : b->mm;

	s->cached = -1;
	if (!*warm) {
		struct bench_file *f = &b->file_warm[c->nohuge];
		size_t chunk = 1 << 20, off;
		char *buf = malloc(chunk);
		struct uf_stats st;
		ssize_t n = 0;
		int ret = 0, i;

		if (!buf)
			return -ENOMEM;
		if (f->fd < 0) {
			f->dir = b->file[c->store].dir;
			ret = file_create(f, b->size);
		}
		if (!ret)
			ret = uf_object_open(mm, f->path, O_RDWR, warm);
		for (off = 0; !ret && off < b->size; off += chunk) {
			n = uf_object_pread(*warm, buf, chunk, off);
			if (n < 0)
				ret = (int)n;
		}
		free(buf);
		if (ret)
			return ret;
		for (i = 0; !c->nohuge && i < 3000; i++) {
			uf_mm_stats(mm, &st);
			if (st.huge_extents >= b->size >> 21)
				break;
			usleep(10000);
		}
	}
	return ufault_touch(b, c, *warm, s);
}

/* A new object each time: its cache is empty.  Opened O_RDONLY (a shared
 * mapping of it is the cache mapped MAP_PRIVATE: fills go through the
 * cache mapping, then a wake), or O_RDWR with c->rw_object (a read-only
 * shared mapping of it is the cache itself: a one-page fill goes straight
 * into it, and the copy wakes the thread). */
static int run_ufault_cold(struct bench *b, const struct bench_case *c, struct sample *s)
{
	struct uf_object *obj;
	int ret;

	s->cached = file_make_cold(b, c->store);
	ret = uf_object_open(c->nohuge ? b->mm_nohuge : b->mm, b->file[c->store].path,
			     c->rw_object ? O_RDWR : O_RDONLY, &obj);
	if (ret)
		return ret;
	ret = ufault_touch(b, c, obj, s);
	uf_object_put(obj);
	return ret;
}

/* One of the two readers of the streams case: its half of the pages. */
struct half_reader {
	const char *base;
	const uint32_t *order;
	size_t n, bad;
	uint64_t kfaults;
};

static void *half_touch(void *arg)
{
	struct half_reader *h = arg;
	uint64_t f0 = thread_faults();

	h->bad = touch(h->base, h->order, h->n);
	h->kfaults = thread_faults() - f0;
	return NULL;
}

/*
 * Two sequential streams in one mapping: a new object, one thread per half
 * of the mapping, both at once.  ns/page is the wall time over all pages.
 */
static int run_ufault_streams(struct bench *b, const struct bench_case *c, struct sample *s)
{
	struct half_reader h[2];
	struct uf_stats st0, st1;
	struct uf_object *obj;
	pthread_t thr;
	uint64_t t0, t1;
	size_t half = b->npages / 2;
	void *p;
	int ret, k;

	s->cached = file_make_cold(b, c->store);
	ret = uf_object_open(b->mm, b->file[c->store].path, O_RDONLY, &obj);
	if (ret)
		return ret;
	ret = uf_mmap(b->mm, b->size, case_prot(c), UF_MAP_SHARED, obj, 0, &p);
	if (ret)
		goto out;
	for (k = 0; k < 2; k++)
		h[k] = (struct half_reader){ .base = p, .order = b->order[c->order] + k * half,
					     .n = k ? b->npages - half : half };
	uf_mm_stats(b->mm, &st0);
	t0 = now_ns();
	ret = -pthread_create(&thr, NULL, half_touch, &h[1]);
	half_touch(&h[0]);
	if (!ret)
		pthread_join(thr, NULL);
	t1 = now_ns();
	uf_mm_stats(b->mm, &st1);
	s->ns_per_page = (double)(t1 - t0) / (double)b->npages;
	s->kfaults = h[0].kfaults + h[1].kfaults;
	s->majors = st1.major_faults - st0.major_faults;
	s->events = s->majors + st1.minor_faults - st0.minor_faults +
		    st1.sigbus - st0.sigbus + st1.oom - st0.oom;
	s->ra_pages = st1.readahead_pages - st0.readahead_pages;
	s->pages_read = st1.pages_read - st0.pages_read;
	s->svc_us = lat_median_us(&st0, &st1);
	if (!ret && h[0].bad + h[1].bad) {
		fprintf(stderr, "ufault-bench: %s %s/%s: %zu of %zu pages read wrong bytes\n",
			c->name, c->target, store_names[c->store], h[0].bad + h[1].bad, b->npages);
		ret = -EIO;
	}
	uf_munmap(b->mm, p, b->size);
out:
	uf_object_put(obj);
	return ret;
}

/*
 * Cold random faults from c->threads threads at once (each a share of the
 * random order) on an mm with as many handler threads; the reference row
 * is the same with one of each.  ns/page: wall time over all pages.
 */
static int run_ufault_rand_threads(struct bench *b, const struct bench_case *c, struct sample *s)
{
	struct uf_mm_config cfg = { .handler_threads = c->threads };
	unsigned int n = c->threads ? c->threads : 1, k;
	struct half_reader h[8];
	pthread_t thr[8];
	struct uf_stats st0, st1;
	struct uf_object *obj = NULL;
	struct uf_mm *mm;
	uint64_t t0, t1;
	size_t share = b->npages / n, bad = 0;
	void *p;
	int ret;

	if (n > 8)
		return -EINVAL;
	s->cached = file_make_cold(b, c->store);
	ret = uf_mm_create(&cfg, &mm);
	if (ret)
		return ret;
	ret = uf_object_open(mm, b->file[c->store].path, O_RDONLY, &obj);
	if (!ret)
		ret = uf_mmap(mm, b->size, PROT_READ, UF_MAP_SHARED, obj, 0, &p);
	if (ret)
		goto out;
	for (k = 0; k < n; k++)
		h[k] = (struct half_reader){ .base = p, .order = b->order[c->order] + k * share,
					     .n = k == n - 1 ? b->npages - k * share : share };
	uf_mm_stats(mm, &st0);
	t0 = now_ns();
	for (k = 1; k < n; k++)
		if (pthread_create(&thr[k], NULL, half_touch, &h[k]))
			h[k].n = 0, half_touch(&h[k]);	/* (no thread: run it here) */
	half_touch(&h[0]);
	for (k = 1; k < n; k++)
		pthread_join(thr[k], NULL);
	t1 = now_ns();
	uf_mm_stats(mm, &st1);
	s->ns_per_page = (double)(t1 - t0) / (double)b->npages;
	for (k = 0; k < n; k++) {
		s->kfaults += h[k].kfaults;
		bad += h[k].bad;
	}
	s->majors = st1.major_faults - st0.major_faults;
	s->events = s->majors + st1.minor_faults - st0.minor_faults +
		    st1.sigbus - st0.sigbus + st1.oom - st0.oom;
	s->ra_pages = st1.readahead_pages - st0.readahead_pages;
	s->pages_read = st1.pages_read - st0.pages_read;
	s->svc_us = lat_median_us(&st0, &st1);
	if (bad) {
		fprintf(stderr, "ufault-bench: %s %s/%s: %zu of %zu pages read wrong bytes\n",
			c->name, c->target, store_names[c->store], bad, b->npages);
		ret = -EIO;
	}
	uf_munmap(mm, p, b->size);
out:
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return ret;
}

/*
 * The timed part of the zipf case: one byte read per access, the first of
 * the page (the low byte of its tag), and every ZIPF_SAMPLE accesses a
 * look at the cache size.  Return the number of wrong bytes.
 */
static __attribute__((noinline)) size_t zipf_touch(struct uf_mm *mm, const char *base,
						    const uint32_t *seq, size_t n,
						    uint64_t *max_cache)
{
	struct uf_stats st;
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		uint32_t p = seq[i];
		uint64_t tag = page_tag(p);
		unsigned char want;

		memcpy(&want, &tag, 1);
		bad += *(const volatile unsigned char *)(base + ((size_t)p << PG_SHIFT)) != want;
		if ((i + 1) % ZIPF_SAMPLE == 0 && !uf_mm_stats(mm, &st) &&
		    st.cache_pages > *max_cache)
			*max_cache = st.cache_pages;
	}
	return bad;
}

/* A fresh mm with the budget and c->policy, a fresh object: an empty cache. */
static int run_ufault_zipf(struct bench *b, const struct bench_case *c, struct sample *s)
{
	struct uf_mm_config cfg = {
		.cache_budget = b->zipf.budget,
		.reclaim_policy = c->policy,
	};
	struct uf_stats st0, st1;
	struct uf_object *obj = NULL;
	struct uf_mm *mm;
	uint64_t f0, t0, t1;
	size_t bad;
	void *p;
	int ret;

	s->cached = -1;
	ret = uf_mm_create(&cfg, &mm);
	if (ret)
		return ret;
	ret = uf_object_open(mm, b->zipf.file.path, O_RDONLY, &obj);
	if (!ret)
		ret = uf_mmap(mm, b->zipf.size, PROT_READ, UF_MAP_SHARED, obj, 0, &p);
	if (ret)
		goto out;

	uf_mm_stats(mm, &st0);
	s->max_cache = st0.cache_pages;
	f0 = thread_faults();
	t0 = now_ns();
	bad = zipf_touch(mm, p, b->order[ORDER_ZIPF], b->zipf.naccess, &s->max_cache);
	t1 = now_ns();
	s->kfaults = thread_faults() - f0;
	uf_mm_stats(mm, &st1);
	if (st1.cache_pages > s->max_cache)
		s->max_cache = st1.cache_pages;

	s->ns_per_page = (double)(t1 - t0) / (double)b->zipf.naccess;	/* per access */
	s->majors = st1.major_faults - st0.major_faults;
	s->events = s->majors + st1.minor_faults - st0.minor_faults +
		    st1.sigbus - st0.sigbus + st1.oom - st0.oom;
	s->ra_pages = st1.readahead_pages - st0.readahead_pages;
	s->pages_read = st1.pages_read - st0.pages_read;
	s->evicted = st1.evicted_pages - st0.evicted_pages;
	s->svc_us = lat_median_us(&st0, &st1);
	if (bad) {
		fprintf(stderr, "ufault-bench: %s %s/%s: %zu of %zu accesses read a wrong byte\n",
			c->name, c->target, store_names[c->store], bad, b->zipf.naccess);
		ret = -EIO;
	}
	uf_munmap(mm, p, b->zipf.size);
out:
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Case: the minimal userfaultfd loop                                  */
/* ------------------------------------------------------------------ */

struct uffd_min {
	int uffd, stopfd;
	char *src;		/* the page UFFDIO_COPY copies from */
	uint64_t faults;
	int err;
};

/* One event per poll + read, one page per UFFDIO_COPY (which wakes). */
static void *uffd_min_handler(void *arg)
{
	struct uffd_min *u = arg;
	struct pollfd pfd[2] = {
		{ .fd = u->uffd, .events = POLLIN },
		{ .fd = u->stopfd, .events = POLLIN },
	};

	for (;;) {
		struct uffdio_copy cp;
		struct uffd_msg msg;
		ssize_t n;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			u->err = -errno;
			break;
		}
		if (pfd[1].revents)
			break;
		n = read(u->uffd, &msg, sizeof(msg));
		if (n != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		cp = (struct uffdio_copy){
			.dst = msg.arg.pagefault.address & ~(PG - 1),
			.src = (unsigned long)u->src,
			.len = PG,
		};
		/* the tag of the page, as the files hold it */
		*(uint64_t *)u->src = page_tag((cp.dst - (unsigned long)u->src - PG) >> PG_SHIFT);
		if (ioctl(u->uffd, UFFDIO_COPY, &cp) < 0 && errno != EEXIST) {
			u->err = -errno;
			break;
		}
		u->faults++;
	}
	return NULL;
}

static int run_uffd_min(struct bench *b, const struct bench_case *c, struct sample *s)
{
	struct uffd_min u = { .uffd = -1, .stopfd = -1 };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	uint64_t one = 1;
	pthread_t thr;
	char *area;
	int ret;

	s->cached = -1;
	/* one page of source, then the faulting range right after it, so the
	 * handler finds a page's index from its address */
	area = mmap(NULL, b->size + PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		return -errno;
	u.src = area;
	memset(u.src, 0xa5, PG);
	madvise(area + PG, b->size, MADV_NOHUGEPAGE);	/* 4 KiB faults, as ufault */

	u.uffd = ret = bare_uffd_open();
	if (ret < 0)
		goto out;
	ret = ioctl(u.uffd, UFFDIO_API, &api) < 0 ? -errno : 0;
	if (ret)
		goto out;
	reg = (struct uffdio_register){
		.range = { .start = (unsigned long)area + PG, .len = b->size },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(u.uffd, UFFDIO_REGISTER, &reg) < 0) {
		ret = -errno;
		goto out;
	}
	u.stopfd = eventfd(0, EFD_CLOEXEC);
	if (u.stopfd < 0) {
		ret = -errno;
		goto out;
	}
	ret = -pthread_create(&thr, NULL, uffd_min_handler, &u);
	if (ret)
		goto out;

	ret = timed_touch(b, c, area + PG, s);

	if (write(u.stopfd, &one, sizeof(one)) != sizeof(one) && !ret)
		ret = -errno;
	pthread_join(thr, NULL);
	s->events = u.faults;
	if (!ret)
		ret = u.err;
out:
	if (u.stopfd >= 0)
		close(u.stopfd);
	if (u.uffd >= 0)
		close(u.uffd);
	munmap(area, b->size + PG);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The cases                                                           */
/* ------------------------------------------------------------------ */

static const struct bench_case cases[] = {
	{ .name = "warm-seq", .target = "kernel", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_kernel },
	/* ufault: huge extents on (the default), then off (UF_MM_NO_HUGE) */
	{ .name = "warm-seq", .target = "ufault", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_warm, .ref = "kernel/tmpfs", .ratio = RATIO_SPEEDUP, .goal = 5.0 },
	{ .name = "warm-seq", .target = "ufault-4k", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_warm, .ref = "kernel/tmpfs", .ratio = RATIO_SPEEDUP, .goal = 1.0,
	  .nohuge = true },

	{ .name = "warm-rand", .target = "kernel", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_kernel },
	{ .name = "warm-rand", .target = "ufault", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_ufault_warm, .ref = "kernel/tmpfs", .ratio = RATIO_SPEEDUP, .goal = 5.0 },
	{ .name = "warm-rand", .target = "ufault-4k", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_ufault_warm, .ref = "kernel/tmpfs", .ratio = RATIO_SPEEDUP, .goal = 1.0,
	  .nohuge = true },

	/* a writable shared mapping is registered for write-protect (dirty
	 * tracking), which turns the kernel's fault-around off; uf_mmap()
	 * maps what is cached instead (timed here: map + touch for both) */
	{ .name = "warm-seq-rw", .target = "kernel", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_kernel, .prot = PROT_READ | PROT_WRITE },
	{ .name = "warm-seq-rw", .target = "ufault", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_warm, .ref = "kernel/tmpfs", .ratio = RATIO_SPEEDUP, .goal = 1.0,
	  .prot = PROT_READ | PROT_WRITE },

	/* first writes to cached pages: the kernel's writable shared mmap
	 * against ufault's (cached, mapped, write-protected for dirty tracking) */
	{ .name = "warm-write", .target = "kernel", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_kernel, .prot = PROT_READ | PROT_WRITE, .write = true },
	{ .name = "warm-write", .target = "ufault", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_warm, .ref = "kernel/tmpfs", .ratio = RATIO_SPEEDUP, .goal = 0.75,
	  .prot = PROT_READ | PROT_WRITE, .write = true },

	{ .name = "cold-seq", .target = "uffd-min", .store = STORE_ANON, .order = ORDER_SEQ,
	  .run = run_uffd_min },
	{ .name = "cold-seq", .target = "kernel", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_kernel },
	{ .name = "cold-seq", .target = "kernel", .store = STORE_DISK, .order = ORDER_SEQ,
	  .run = run_kernel },
	/* the tmpfs file is always in memory: kernel/tmpfs is the kernel's
	 * warm cost per page */
	{ .name = "cold-seq", .target = "ufault", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_cold, .ref = "kernel/tmpfs", .ratio = RATIO_COST, .goal = 1.5 },
	{ .name = "cold-seq", .target = "ufault", .store = STORE_DISK, .order = ORDER_SEQ,
	  .run = run_ufault_cold, .ref = "uffd-min/anon", .ratio = RATIO_SPEEDUP },	/* info */
	/* the same with huge extents off: what the background collapse of the
	 * extents being read costs the reader */
	{ .name = "cold-seq", .target = "ufault-4k", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_cold, .ref = "kernel/tmpfs", .ratio = RATIO_COST, .nohuge = true },	/* info */
	/* the same through a writable object: windows are copied straight
	 * into the reader's mapping (no second page table entry per page) */
	{ .name = "cold-seq", .target = "ufault-rw", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_cold, .ref = "kernel/tmpfs", .ratio = RATIO_COST, .rw_object = true },	/* info */

	/* two threads reading the two halves of one mapping keep a readahead
	 * stream each: per-page cost and major faults as one stream's */
	{ .name = "streams", .target = "1-stream", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_cold },
	{ .name = "streams", .target = "2-stream", .store = STORE_TMPFS, .order = ORDER_SEQ,
	  .run = run_ufault_streams, .ref = "1-stream/tmpfs", .ratio = RATIO_COST, .goal = 1.1 },

	{ .name = "cold-rand", .target = "uffd-min", .store = STORE_ANON, .order = ORDER_RAND,
	  .run = run_uffd_min },
	{ .name = "cold-rand", .target = "kernel", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_kernel },
	{ .name = "cold-rand", .target = "kernel", .store = STORE_DISK, .order = ORDER_RAND,
	  .run = run_kernel },
	{ .name = "cold-rand", .target = "ufault", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_ufault_cold, .ref = "uffd-min/anon", .ratio = RATIO_COST, .goal = 1.15 },
	{ .name = "cold-rand", .target = "ufault", .store = STORE_DISK, .order = ORDER_RAND,
	  .run = run_ufault_cold, .ref = "uffd-min/anon", .ratio = RATIO_COST },	/* info */
	/* the same through a writable object: the copy goes straight into
	 * the faulting mapping and wakes the thread itself */
	{ .name = "cold-rand", .target = "ufault-rw", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_ufault_cold, .ref = "uffd-min/anon", .ratio = RATIO_COST, .rw_object = true },	/* info */

	/* cold random faults from 2 threads served by 2 handler threads,
	 * against 1 and 1: throughput */
	{ .name = "rand-2thr", .target = "1x1", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_ufault_rand_threads, .threads = 1 },
	{ .name = "rand-2thr", .target = "2x2", .store = STORE_TMPFS, .order = ORDER_RAND,
	  .run = run_ufault_rand_threads, .threads = 2, .ref = "1x1/tmpfs",
	  .ratio = RATIO_SPEEDUP, .goal = 1.5 },

	{ .name = "zipf", .target = "uf-fifo", .store = STORE_TMPFS, .order = ORDER_ZIPF,
	  .run = run_ufault_zipf, .policy = UF_RECLAIM_FIFO },
	{ .name = "zipf", .target = "uf-clock", .store = STORE_TMPFS, .order = ORDER_ZIPF,
	  .run = run_ufault_zipf, .policy = UF_RECLAIM_CLOCK, .ref = "uf-fifo/tmpfs",
	  .ratio = RATIO_MAJORS, .goal = 1, .time_goal = 1.0 },
};
#define NR_CASES (sizeof(cases) / sizeof(cases[0]))

/* The medians of one case's repeats, and its comparison. */
struct result {
	struct sample med;	/* the median run (by ns/page) */
	double spread;		/* (max - min) / median of ns/page */
	int ref;		/* index of the reference case, -1 none */
	double ratio;
	bool miss;
	double time_ratio;	/* RATIO_MAJORS: this ns / ref ns per access */
	bool time_miss;
};

static int find_ref(const struct bench_case *c)
{
	char label[64];
	size_t i;

	if (!c->ref)
		return -1;
	for (i = 0; i < NR_CASES; i++) {
		snprintf(label, sizeof(label), "%s/%s", cases[i].target, store_names[cases[i].store]);
		if (!strcmp(cases[i].name, c->name) && !strcmp(label, c->ref))
			return (int)i;
	}
	return -1;
}

static int cmp_sample(const void *a, const void *b)
{
	double x = ((const struct sample *)a)->ns_per_page;
	double y = ((const struct sample *)b)->ns_per_page;

	return (x > y) - (x < y);
}

/* Is @c one of the cases to run: all, or those named --only, or whose
 * name starts with it and a '-' (cold: cold-seq and cold-rand)? */
static bool selected(const struct bench *b, const struct bench_case *c)
{
	size_t n;

	if (!b->only)
		return true;
	n = strlen(b->only);
	return !strncmp(c->name, b->only, n) && (!c->name[n] || c->name[n] == '-');
}

/*
 * Output.  A table row is printed once, as soon as its case's last repeat is
 * measured (the repeats are interleaved, so that is in the last round); the
 * ratios, which need a row and its reference, come after the last row.  On
 * a terminal a progress line on stderr says what is being measured and is
 * cleared before each row.  --machine prints BENCH key=value lines instead
 * of the tables, at the end, ratios included.
 */
struct out {
	bool tty;		/* stderr is a terminal: a progress line */
	bool quick;		/* --quick: ratios are smoke only */
	bool machine;		/* --machine: BENCH lines only */
	bool timed_head, zipf_head;
	const char *prev;	/* the last timed row's case name */
};

static void progress(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void progress(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->tty)
		return;
	fputs("\r\033[K", stderr);
	if (fmt) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fflush(stderr);
}

/* The median of case @i's repeats, by time, and its spread. */
static void summarize_one(struct bench *b, struct sample *runs, struct result *res, size_t i)
{
	struct sample *r = runs + i * b->repeat;
	double lo, hi;
	size_t k;

	res[i] = (struct result){ .ref = -1 };
	if (!selected(b, &cases[i]))
		return;
	qsort(r, b->repeat, sizeof(*r), cmp_sample);
	res[i].med = r[b->repeat / 2];
	lo = hi = r[0].ns_per_page;
	for (k = 1; k < b->repeat; k++) {
		lo = r[k].ns_per_page < lo ? r[k].ns_per_page : lo;
		hi = r[k].ns_per_page > hi ? r[k].ns_per_page : hi;
	}
	res[i].spread = (hi - lo) / res[i].med.ns_per_page;
	res[i].ref = find_ref(&cases[i]);
}

/* Each case's ratio to its reference, once every row is summarized. */
static void summarize_ratios(struct result *res)
{
	size_t i;

	for (i = 0; i < NR_CASES; i++) {
		const struct bench_case *c = &cases[i];
		double me, ref;

		if (res[i].ref < 0)
			continue;
		if (c->ratio == RATIO_MAJORS) {
			me = (double)res[i].med.majors;
			ref = (double)res[res[i].ref].med.majors;
			res[i].ratio = me ? ref / me : ref ? INFINITY : 1;
			res[i].miss = c->goal > 0 && res[i].ratio <= c->goal;
			res[i].time_ratio = res[i].med.ns_per_page /
					    res[res[i].ref].med.ns_per_page;
			res[i].time_miss = c->time_goal > 0 && res[i].time_ratio > c->time_goal;
			continue;
		}
		me = res[i].med.ns_per_page;
		ref = res[res[i].ref].med.ns_per_page;
		res[i].ratio = c->ratio == RATIO_SPEEDUP ? ref / me : me / ref;
		if (c->goal > 0)
			res[i].miss = c->ratio == RATIO_SPEEDUP ? res[i].ratio < c->goal
							      : res[i].ratio > c->goal;
	}
}

static const char *verdict(const struct bench_case *c, const struct result *r)
{
	if (r->ref < 0)
		return NULL;
	if (c->goal <= 0)
		return "info";
	return r->miss ? "MISS" : "PASS";
}

static const char *ratio_kind_name(enum ratio_kind k)
{
	return k == RATIO_SPEEDUP ? "speedup" : k == RATIO_MAJORS ? "fewer-majors" : "cost";
}

static const char *goal_op(enum ratio_kind k)
{
	return k == RATIO_SPEEDUP ? ">=" : k == RATIO_MAJORS ? ">" : "<=";
}

static const char *policy_name(unsigned int policy)
{
	return policy == UF_RECLAIM_FIFO ? "FIFO" : "CLOCK";
}

/* One time-judged row, the table's header before the first. */
static void print_timed_row(struct out *o, const struct result *res, size_t i)
{
	const struct bench_case *c = &cases[i];
	const struct sample *s = &res[i].med;
	char cached[16] = "-", svc[16] = "-";

	if (!o->timed_head) {
		printf("\n%-9s %-8s %-5s %10s %9s %7s %8s %7s %7s %8s %7s %7s\n", "case",
		       "target", "store", "ns/page", "MiB/s", "spread", "kfaults", "uffd-ev",
		       "majors", "ra-pages", "svc-p50", "cached");
		o->timed_head = true;
	}
	if (s->cached >= 0)
		snprintf(cached, sizeof(cached), "%.1f%%", 100 * s->cached);
	if (s->svc_us)
		snprintf(svc, sizeof(svc), "<%uus", s->svc_us);
	if (o->prev && strcmp(c->name, o->prev))
		putchar('\n');
	o->prev = c->name;
	printf("%-9s %-8s %-5s %10.1f %9.0f %6.0f%% %8" PRIu64 " %7" PRIu64 " %7" PRIu64
	       " %8" PRIu64 " %7s %7s\n",
	       c->name, c->target, store_names[c->store], s->ns_per_page,
	       PG * 1e9 / s->ns_per_page / (1 << 20), 100 * res[i].spread, s->kfaults,
	       s->events, s->majors, s->ra_pages, svc, cached);
}

/* One row of the budgeted case, the table's header before the first. */
static void print_zipf_row(struct out *o, struct bench *b, const struct result *res, size_t i)
{
	const struct bench_case *c = &cases[i];
	const struct sample *s = &res[i].med;
	size_t budget = b->zipf.budget / PG;

	if (!o->zipf_head) {
		printf("\nzipf: s=%.2f reads of one byte, %zu accesses, over %zu MiB (%zu pages) "
		       "through a\ncache budget of %zu KiB (%zu pages); hot pages scattered (seed "
		       "%#llx); a fresh mm\nand object over a tmpfs file (%s) per run: the cache "
		       "starts empty; median of %u\nby time\n\n", ZIPF_S, b->zipf.naccess,
		       b->zipf.size >> 20, b->zipf.npages, (size_t)(b->zipf.budget >> 10), budget,
		       (unsigned long long)SEED, b->file[STORE_TMPFS].dir, b->repeat);
		printf("%-9s %-6s %10s %8s %8s %9s %7s %10s %7s\n", "target", "policy",
		       "majors/1k", "majors", "evicted", "max-cache", "budget", "ns/access",
		       "spread");
		o->zipf_head = true;
	}
	printf("%-9s %-6s %10.1f %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %6.1f%% %10.1f %6.0f%%\n",
	       c->target, policy_name(c->policy),
	       1000.0 * (double)s->majors / (double)b->zipf.naccess, s->majors, s->evicted,
	       s->max_cache, 100.0 * (double)s->max_cache / (double)budget, s->ns_per_page,
	       100 * res[i].spread);
}

/* A case's row, as soon as its last repeat is in. */
static void print_row(struct out *o, struct bench *b, const struct result *res, size_t i)
{
	if (o->machine)
		return;
	progress(o, NULL);
	if (cases[i].order == ORDER_ZIPF)
		print_zipf_row(o, b, res, i);
	else
		print_timed_row(o, res, i);
	fflush(stdout);
}

/* The time-judged cases' ratios and legend. */
static void print_timed_ratios(struct out *o, struct bench *b, const struct result *res)
{
	const struct bench_file *disk = &b->file[STORE_DISK];
	size_t i;

	printf("\nratios (medians of this run)%s:\n",
	       o->quick ? "; --quick: small data and one repeat, a smoke test: no goals\n"
			  "or verdicts (run without --quick for those)" : "");
	for (i = 0; i < NR_CASES; i++) {
		const struct bench_case *c = &cases[i];
		const char *v = verdict(c, &res[i]);
		char what[64], goal[32] = "";

		if (!v || c->order == ORDER_ZIPF)
			continue;
		snprintf(what, sizeof(what), "%s/%s vs %s", c->target, store_names[c->store], c->ref);
		if (c->goal > 0)
			snprintf(goal, sizeof(goal), "goal %s %.2fx", goal_op(c->ratio), c->goal);
		printf("  %-9s %-28s %-11s %7.2fx", c->name, what,
		       c->ratio == RATIO_SPEEDUP ?
		       (!strncmp(c->name, "warm", 4) ? "throughput" : "cheaper") : "cost",
		       res[i].ratio);
		if (!o->quick)	/* --quick: no goals, no verdicts */
			printf("  %-14s %s", goal, v);
		putchar('\n');
	}
	for (i = 0; i < NR_CASES; i++) {
		const struct bench_case *c = &cases[i];

		if (res[i].ref >= 0 && !strcmp(c->name, "streams") && res[res[i].ref].med.majors)
			printf("  %-9s %-28s %-11s %7.2fx%s\n", c->name,
			       "2-stream vs 1-stream", "majors",
			       (double)res[i].med.majors / (double)res[res[i].ref].med.majors,
			       o->quick ? "" :
			       (double)res[i].med.majors > 1.1 * (double)res[res[i].ref].med.majors ?
			       "  goal <= 1.10x  MISS" : "  goal <= 1.10x  PASS");
	}
	printf("\nkfaults: page faults taken by the touching thread (getrusage); uffd-ev:\n"
	       "userfaultfd round trips served; majors/ra-pages: uf_mm_stats() deltas;\n"
	       "svc-p50: median ufault handler time per fault (event read to wake);\n"
	       "cached: share of the disk file in the page cache when the run began.\n"
	       "disk store: %s (%s); %s\n", disk->dir, fs_name(disk->fstype),
	       disk->fstype == TMPFS_MAGIC ? "it is tmpfs: \"disk\" reads are memory reads" :
	       "cold reads after fsync + POSIX_FADV_DONTNEED come from the block device\n"
	       "(whatever its host caches), not from this kernel's page cache");
}

/* The budgeted case's reference, ratios and legend. */
static void print_zipf_ratios(struct out *o, struct bench *b, const struct result *res)
{
	size_t budget = b->zipf.budget / PG, i;

	printf("%-16s %10.1f   (a cache that pins the %zu hottest pages)\n", "reference",
	       1000 * b->zipf.pinned_miss, budget);
	if (o->quick)
		printf("--quick: a smoke test, no goals or verdicts\n");
	for (i = 0; i < NR_CASES; i++) {
		const struct bench_case *c = &cases[i];
		const char *v = verdict(c, &res[i]);
		const struct bench_case *r;

		if (!v || c->order != ORDER_ZIPF)
			continue;
		r = &cases[res[i].ref];
		printf("  %s/%s major faults: %.2fx", policy_name(r->policy),
		       policy_name(c->policy), res[i].ratio);
		if (!o->quick)
			printf("  goal: %s needs fewer major faults than %s  %s",
			       c->policy == UF_RECLAIM_CLOCK ? "default" : policy_name(c->policy),
			       policy_name(r->policy), v);
		putchar('\n');
		if (c->time_goal <= 0)
			continue;
		printf("  %s/%s time per access: %.2fx", policy_name(c->policy),
		       policy_name(r->policy), res[i].time_ratio);
		if (!o->quick)
			printf("  goal: <= %.2fx  %s", c->time_goal,
			       res[i].time_miss ? "MISS" : "PASS");
		putchar('\n');
	}
	printf("\nmajors/1k: major faults per 1000 accesses; evicted: pages reclaimed;\n"
	       "max-cache: the most cache_pages that uf_mm_stats() showed (every %d accesses\n"
	       "and at the end), and its share of the budget (the ceiling, ufault(7): the\n"
	       "budget plus one readahead window, at most budget/8); spread: of ns/access\n", ZIPF_SAMPLE);
}

/* --machine: one BENCH line per case, ratio and verdict included. */
static void print_machine(struct out *o, struct bench *b, const struct result *res)
{
	size_t i;

	for (i = 0; i < NR_CASES; i++) {
		const struct bench_case *c = &cases[i];
		const struct sample *s = &res[i].med;
		const char *v = verdict(c, &res[i]);
		bool z = c->order == ORDER_ZIPF;

		if (!selected(b, c))
			continue;
		printf("BENCH case=%s target=%s store=%s order=%s ns_per_page=%.1f pages=%zu"
		       " repeat=%u spread=%.3f kfaults=%" PRIu64 " uffd_events=%" PRIu64
		       " majors=%" PRIu64 " ra_pages=%" PRIu64 " pages_read=%" PRIu64,
		       c->name, c->target, store_names[c->store], order_names[c->order],
		       s->ns_per_page, z ? b->zipf.npages : b->npages, b->repeat, res[i].spread,
		       s->kfaults, s->events, s->majors, s->ra_pages, s->pages_read);
		if (s->svc_us)
			printf(" svc_p50_us=%u", s->svc_us);
		if (s->cached >= 0)
			printf(" cached=%.3f", s->cached);
		if (z)	/* ns_per_page is per access here */
			printf(" policy=%s accesses=%zu majors_per_1k=%.2f evicted=%" PRIu64
			       " max_cache_pages=%" PRIu64 " budget_pages=%zu",
			       policy_name(c->policy), b->zipf.naccess,
			       1000.0 * (double)s->majors / (double)b->zipf.naccess, s->evicted,
			       s->max_cache, (size_t)(b->zipf.budget / PG));
		if (v) {
			printf(" ratio=%.3f ratio_kind=%s ref=%s", res[i].ratio,
			       ratio_kind_name(c->ratio), c->ref);
			if (c->goal > 0)
				printf(" goal=%s%.2f", goal_op(c->ratio), c->goal);
			if (!o->quick)	/* --quick: no verdicts */
				printf(" result=%s", v);
			if (c->time_goal > 0)
				printf(" time_ratio=%.3f time_goal=<=%.2f", res[i].time_ratio,
				       c->time_goal);
			if (c->time_goal > 0 && !o->quick)
				printf(" time_result=%s", res[i].time_miss ? "MISS" : "PASS");
		}
		if (o->quick)
			printf(" quick=1");
		putchar('\n');
	}
}

/* After the last row: the ratios (or the BENCH lines). */
static void print_results(struct out *o, struct bench *b, const struct result *res)
{
	if (o->machine) {
		print_machine(o, b, res);
		return;
	}
	if (o->zipf_head)	/* right under its table, the last one printed */
		print_zipf_ratios(o, b, res);
	if (o->timed_head)
		print_timed_ratios(o, b, res);
	putchar('\n');
}

/*
 * ufault's own memory per cached page: what malloc holds more after a
 * second object of b->size bytes is opened and read whole into its cache
 * (the first one warms the per-thread buffers up), per page.
 */
static void print_bookkeeping(struct bench *b)
{
	struct uf_object *obj;
	size_t chunk = 1 << 20, off;
	struct mallinfo2 m0, m1;
	char *buf = malloc(chunk);
	int round;

	if (!buf)
		return;
	for (round = 0; round < 2; round++) {
		m0 = mallinfo2();
		if (uf_object_open(b->mm, b->file[STORE_TMPFS].path, O_RDONLY, &obj))
			break;
		for (off = 0; off < b->size; off += chunk)
			if (uf_object_pread(obj, buf, chunk, off) < 0)
				break;
		m1 = mallinfo2();
		if (round)
			printf("bookkeeping: %.3f bytes of ufault memory (malloc) per cached 4 KiB page "
			       "(%zu pages cached, object and its page state included; target <= 1)\n",
			       ((double)(m1.uordblks + m1.hblkhd) - (double)(m0.uordblks + m0.hblkhd)) /
			       (double)b->npages, b->npages);
		uf_object_put(obj);
	}
	free(buf);
}

/* ------------------------------------------------------------------ */
/* ws: a working set recorded, then replayed (--only ws)               */
/* ------------------------------------------------------------------ */

/*
 * A cold start touching 4096 pages of a 256 MiB file: 128 runs of 16
 * pages and 2048 single pages, scattered (a page apart at least), touched
 * in a fixed random order of the runs and singles.  Each run is a fresh
 * mm and object (an empty cache; the disk file dropped first):
 *   lazy     the touches fault the pages in, with readahead;
 *   record   the same, recorded (uf_object_record() .. _stop(), timed);
 *   replay   uf_object_prefetch() of the last record, then the touches,
 *            timed from the prefetch call;
 *   lazy-nora  lazy with readahead off (readahead_max one page), for
 *            information: readahead's windows past the runs cost the lazy
 *            run more than they save here.
 *   floor    uf_object_prefetch(), waited for (its pages counted in
 *            readahead_pages), then the touches alone timed: what the
 *            touches cost with the whole set cached, the least a replay
 *            can take (a first touch of a page is a trap of its own on a
 *            VM whose page tables the hypervisor shadows).
 * Goals (tmpfs): replay >= 5x faster than lazy, record <= 1.3x lazy, the
 * record at most 32 KiB.  The rounds interleave the three (after a
 * warm-up round); medians.
 */
#define WS_SIZE		(256UL << 20)
#define WS_NPAGES	(WS_SIZE / PG)
#define WS_RUN		16
#define WS_NRUNS	128
#define WS_NSINGLE	2048
#define WS_SET		(WS_NRUNS * WS_RUN + WS_NSINGLE)
#define WS_SETTLE_US	100000	/* a pause between two cold starts */

enum ws_mode { WS_LAZY, WS_RECORD, WS_REPLAY, WS_LAZY_NORA, WS_FLOOR, WS_NMODES };
static const char *const ws_mode_names[] = { "lazy", "record", "replay", "lazy-nora", "floor" };

struct ws_bench {
	uint32_t order[WS_SET];
	char rec[PATH_MAX];		/* the record file */
	struct bench_file file[2];
	long rec_bytes;
};

/* The set: runs and singles placed apart, then shuffled. */
static void ws_make_set(struct ws_bench *w)
{
	uint8_t *used = calloc(WS_NPAGES, 1);
	struct { uint32_t start, len; } item[WS_NRUNS + WS_NSINGLE], t;
	uint64_t s = SEED ^ 0x7773;
	size_t i, n = 0, k;

	for (i = 0; i < WS_NRUNS + WS_NSINGLE; i++) {
		uint32_t len = i < WS_NRUNS ? WS_RUN : 1, p;

		do {
			p = (uint32_t)(1 + splitmix64(&s) % (WS_NPAGES - WS_RUN - 2));
			for (k = 0; k < len + 2 && !used[p - 1 + k]; k++)
				;
		} while (k < len + 2);
		memset(used + p, 1, len);
		item[i].start = p;
		item[i].len = len;
	}
	for (i = WS_NRUNS + WS_NSINGLE - 1; i > 0; i--) {
		k = splitmix64(&s) % (i + 1);
		t = item[i];
		item[i] = item[k];
		item[k] = t;
	}
	for (i = 0; i < WS_NRUNS + WS_NSINGLE; i++)
		for (k = 0; k < item[i].len; k++)
			w->order[n++] = item[i].start + (uint32_t)k;
	free(used);
}

/* One timed cold start; @ns its duration, @majors its major faults. */
static int ws_run(struct ws_bench *w, enum bench_store store, enum ws_mode mode, double *ns,
		  uint64_t *majors, double *cpu)
{
	struct uf_mm_config nora = { .readahead_max = PG };
	struct bench_file *f = &w->file[store];
	struct uf_object *obj;
	struct uf_stats st;
	struct uf_mm *mm;
	uint64_t t0, t1, c0;
	size_t bad;
	char *base;
	int ret, n = 0;

	if (store == STORE_DISK) {
		fsync(f->fd);
		posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	ret = uf_mm_create(mode == WS_LAZY_NORA ? &nora : NULL, &mm);
	if (ret)
		return ret;
	ret = uf_object_open(mm, f->path, O_RDONLY, &obj);
	if (ret)
		goto out_mm;
	ret = uf_mmap(mm, WS_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&base);
	if (ret)
		goto out_obj;
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now_ns();
	if (mode == WS_RECORD)
		ret = uf_object_record(obj, w->rec);
	else if (mode == WS_REPLAY || mode == WS_FLOOR)
		ret = uf_object_prefetch(obj, w->rec);
	if (!ret && mode == WS_FLOOR) {
		int waited = 0;

		while (!uf_mm_stats(mm, &st) && st.readahead_pages < WS_SET && waited++ < 20000)
			usleep(500);
		t0 = now_ns();
	}
	bad = ret ? 0 : touch(base, w->order, WS_SET);
	if (!ret && mode == WS_RECORD) {
		n = uf_object_record_stop(obj);
		ret = n < 0 ? n : n != WS_SET ? -EPROTO : 0;
	}
	t1 = now_ns();
	*cpu = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
	if (!ret && bad) {
		fprintf(stderr, "ufault-bench: ws %s/%s: %zu pages read wrong bytes\n",
			ws_mode_names[mode], store_names[store], bad);
		ret = -EIO;
	}
	*ns = (double)(t1 - t0);
	if (!uf_mm_stats(mm, &st))
		*majors = st.major_faults;
	uf_munmap(mm, base, WS_SIZE);
out_obj:
	uf_object_put(obj);	/* (a prefetch still running stops here) */
out_mm:
	uf_mm_destroy(mm);
	return ret;
}

/* One thread of the minimal prefetch loop (below). */
struct ws_bare {
	const struct ws_bench *w;
	int fd;
	struct bare_map map;
	size_t next;		/* the next index of the set to take (atomic) */
	pthread_mutex_t lock;	/* cpu_ns */
	double cpu_ns;		/* the threads' CPU, summed */
	int err;		/* (any thread's last) */
};

static void *ws_bare_thread(void *arg)
{
	struct ws_bare *b = arg;
	char *buf = aligned_alloc(PG, WS_RUN * PG);
	uint64_t t0, t1;
	size_t i, j;
	int ret;

	if (!buf) {
		b->err = -ENOMEM;
		return NULL;
	}
	t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* runs are taken whole: a claim is a run's first index, and the
	 * indices of its other pages are skipped by whoever meets them */
	while ((i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < WS_SET) {
		size_t off, len;

		if (i && b->w->order[i] == b->w->order[i - 1] + 1)
			continue;	/* inside a run */
		for (j = i + 1; j < WS_SET && b->w->order[j] == b->w->order[j - 1] + 1; j++)
			;
		off = (size_t)b->w->order[i] * PG;
		len = (j - i) * PG;
		if (pread(b->fd, buf, len, (off_t)off) != (ssize_t)len)
			b->err = -EIO;
		else if ((ret = bare_map_fill(&b->map, off, buf, len)))
			b->err = ret;
	}
	t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	free(buf);
	pthread_mutex_lock(&b->lock);
	b->cpu_ns += (double)(t1 - t0);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/*
 * The minimal loop a replay's prefetch is made of, with nothing else
 * running, in @nthreads threads taking the set's runs in recorded order:
 * per run a pread of the file, a UFFDIO_COPY into a memfd registered
 * MISSING and a MADV_POPULATE_READ of a private mapping of it (ufault's
 * fillers do this per piece, and more).  Then, when @floor is given, the
 * touches alone over the pages so mapped, timed into *@floor: what the
 * program pays for its first touch of pages mapped ahead (a hypervisor
 * that shadows page tables takes an exit there, measured 3-5 us a page),
 * which ufault's own floor row does not show once its fillers take that
 * touch.  Return the threads' CPU time in ns, or -errno.
 */
static double ws_bare_prefetch(const struct ws_bench *w, enum bench_store store,
			       unsigned int nthreads, double *floor)
{
	struct ws_bare b = { .w = w, .fd = w->file[store].fd,
			     .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t[2];
	unsigned int k, started = 0;
	int ret;

	ret = bare_map_open(&b.map, WS_SIZE);
	for (k = 0; !ret && k < nthreads && k < 2; k++) {
		if (pthread_create(&t[k], NULL, ws_bare_thread, &b))
			ret = -EAGAIN;
		else
			started++;
	}
	for (k = 0; k < started; k++)
		pthread_join(t[k], NULL);
	if (!ret)
		ret = b.err;
	if (!ret && floor) {
		uint64_t t0 = now_ns();

		if (touch(b.map.pm, w->order, WS_SET))
			ret = -EIO;
		*floor = (double)(now_ns() - t0);
	}
	bare_map_close(&b.map);
	return ret ? ret : b.cpu_ns;
}

/*
 * The best replay the minimal loop allows on @ncpu CPUs: the loop in one
 * thread (@one ns of CPU) beside the touches, or the touches (@floor) and
 * the loop in two threads (@two) sharing the CPUs, whichever is less, and
 * never under the touches alone.
 */
static double ws_best(double one, double two, double floor, long ncpu)
{
	double best = (floor + two) / (double)(ncpu > 1 ? ncpu : 1);

	if (ncpu > 1 && one < best)
		best = one;
	return best < floor ? floor : best;
}

/*
 * One round's minimal loop, beside that round's replay: in one thread
 * (and the touches over its pages, *@floor) and in two, a settle after
 * each, as the cold starts have.  Null outputs (all three): a warm-up
 * round.
 * Return 0 or -errno.
 */
static int ws_bare_round(const struct ws_bench *w, enum bench_store store, double *one,
			 double *two, double *floor)
{
	double f = 0, c1, c2;

	c1 = ws_bare_prefetch(w, store, 1, &f);
	usleep(WS_SETTLE_US);
	if (c1 < 0)
		return (int)c1;
	c2 = ws_bare_prefetch(w, store, 2, NULL);
	usleep(WS_SETTLE_US);
	if (c2 < 0)
		return (int)c2;
	if (one) {
		*one = c1;
		*two = c2;
		*floor = f;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The minimal replay, measured: what ws_bare_prefetch() does in one
 * thread, started as a replay's prefetch is, while this thread touches
 * the set through the private mapping at once, and a minimal handler
 * serves the touches that come first (pread of the page, UFFDIO_COPY into
 * the memfd, EEXIST where the loop was first, UFFDIO_WAKE of the private
 * mapping's page).  The same work as the loop, on the same CPUs under the
 * same load as ufault's replay beside it; no model of free CPUs.
 */
struct ws_mrep {
	const struct ws_bench *w;
	struct bare_map map;
	int fd, stopfd, err;
	uint64_t faults;	/* the handler's */
};

static int ws_mrep_read(void *arg, size_t off, void *buf)
{
	struct ws_mrep *m = arg;

	return pread(m->fd, buf, PG, (off_t)off) == (ssize_t)PG ? 0 : -EIO;
}

static void *ws_mrep_handler(void *arg)
{
	struct ws_mrep *m = arg;
	int ret = bare_map_serve(&m->map, m->stopfd, ws_mrep_read, m, &m->faults);

	if (ret)
		m->err = ret;
	return NULL;
}

/* The loop, in recorded order, a run at a time: pread, UFFDIO_COPY,
 * MADV_POPULATE_READ (ws_bare_thread()'s, EEXIST allowed). */
static void *ws_mrep_loop(void *arg)
{
	struct ws_mrep *m = arg;
	char *buf = aligned_alloc(PG, WS_RUN * PG);
	size_t i, j;

	for (i = 0; buf && i < WS_SET && !m->err; i = j) {
		size_t off = (size_t)m->w->order[i] * PG, len;

		for (j = i + 1; j < WS_SET && m->w->order[j] == m->w->order[j - 1] + 1; j++)
			;
		len = (j - i) * PG;
		if (pread(m->fd, buf, len, (off_t)off) != (ssize_t)len ||
		    bare_map_fill(&m->map, off, buf, len))
			m->err = -EIO;
	}
	if (!buf)
		m->err = -ENOMEM;
	free(buf);
	return NULL;
}

/* One measured minimal replay: *@ns from the loop's start to the last
 * touch, *@faults the touches the handler served.  0 or -errno. */
static int ws_bare_replay(const struct ws_bench *w, enum bench_store store, double *ns,
			  uint64_t *faults)
{
	struct ws_mrep m = { .w = w, .fd = w->file[store].fd, .stopfd = -1 };
	pthread_t th, tl;
	bool handling = false;
	uint64_t t0, one = 1;
	size_t bad = 0;
	int ret;

	if (store == STORE_DISK) {
		fsync(m.fd);
		posix_fadvise(m.fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	ret = bare_map_open(&m.map, WS_SIZE);
	if (ret)
		return ret;
	m.stopfd = eventfd(0, EFD_CLOEXEC);
	if (m.stopfd < 0 || pthread_create(&th, NULL, ws_mrep_handler, &m))
		ret = -EAGAIN;
	handling = !ret;
	t0 = now_ns();
	if (!ret && pthread_create(&tl, NULL, ws_mrep_loop, &m))
		ret = -EAGAIN;
	if (!ret) {
		bad = touch(m.map.pm, w->order, WS_SET);
		*ns = (double)(now_ns() - t0);
		pthread_join(tl, NULL);
		ret = m.err ? m.err : bad ? -EIO : 0;
	}
	if (handling && write(m.stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(th, NULL);
	if (m.stopfd >= 0)
		close(m.stopfd);
	bare_map_close(&m.map);
	*faults = m.faults;
	return ret;
}

/* Run the ws case: return 0, EXIT_MISS (a goal missed, with --check) or
 * EXIT_ERR. */
static int bench_ws(struct bench *b)
{
	static const enum bench_store stores[] = { STORE_TMPFS, STORE_DISK };
	struct ws_bench *w = calloc(1, sizeof(*w));
	double ns[2][WS_NMODES][1000], med[2][WS_NMODES];
	double cpu[2][WS_NMODES][1000], mrep[2][1000];
	/* the minimal loop's CPU in one and two threads, and the touches
	 * over its pages, measured in each round right after the replay */
	double bare[2][2][1000], bfloor[2][1000], ws_replay_ns[2][1000];
	uint64_t maj[2][WS_NMODES] = { { 0 } }, mrep_faults[2] = { 0 };
	struct out o = { .tty = isatty(STDERR_FILENO) };
	bool miss = false;
	unsigned int r, k;
	size_t i;
	int ret = 0, fd, status = 0;

	if (!w)
		return EXIT_ERR;
	/* said first: the files take seconds to write */
	printf("\nufault-bench: ws: a cold start touching a %u-page working set (%u runs of %u, "
	       "%u singles)\nof a %lu MiB file, a fresh mm and object each run: lazily (faults "
	       "and readahead),\nwhile recorded (uf_object_record), replayed from the record "
	       "(uf_object_prefetch);\nmedian of %u, times in microseconds\n",
	       (unsigned int)WS_SET, WS_NRUNS, WS_RUN, WS_NSINGLE, WS_SIZE >> 20, b->repeat);
	fflush(stdout);
	progress(&o, "ufault-bench: ws: writing the files");
	w->file[STORE_TMPFS] = (struct bench_file){ .dir = b->file[STORE_TMPFS].dir, .fd = -1 };
	w->file[STORE_DISK] = (struct bench_file){ .dir = b->file[STORE_DISK].dir, .fd = -1 };
	ws_make_set(w);
	snprintf(w->rec, sizeof(w->rec), "%s/ufault-bench-ws.XXXXXX", b->file[STORE_TMPFS].dir);
	fd = mkstemp(w->rec);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	close(fd);
	for (i = 0; !ret && i < 2; i++)
		ret = file_create(&w->file[stores[i]], WS_SIZE);
	if (ret)
		goto out;
	/* round 0: warm-up, and the first record */
	for (r = 0; r <= b->repeat && !ret; r++)
		for (i = 0; i < 2 && !ret; i++)
			for (k = 0; k < WS_NMODES && !ret; k++) {
				double t = 0, c = 0;

				if (r)
					progress(&o, "ufault-bench: ws: round %u of %u: %s/%s", r,
						 b->repeat, ws_mode_names[k], store_names[stores[i]]);
				else
					progress(&o, "ufault-bench: ws: warm-up round: %s/%s",
						 ws_mode_names[k], store_names[stores[i]]);
				ret = ws_run(w, stores[i], (enum ws_mode)k, &t, &maj[i][k], &c);
				/* each cold start on a settled machine: the run
				 * before's teardown weighed on the run after it
				 * (recording right after the lazy run: 1.25x
				 * lazy; first in the round: 1.08x) */
				usleep(WS_SETTLE_US);
				if (r) {
					ns[i][k][r - 1] = t;
					if (k == WS_REPLAY)	/* (in round order) */
						ws_replay_ns[i][r - 1] = t;
					cpu[i][k][r - 1] = c;
				}
				if (ret)
					fprintf(stderr, "ufault-bench: ws %s/%s: %s\n", ws_mode_names[k],
						store_names[stores[i]], strerror(-ret));
				if (!ret && k == WS_REPLAY) {
					/* the minimal replay, measured beside it */
					double t2 = 0;

					ret = ws_bare_replay(w, stores[i], &t2, &mrep_faults[i]);
					usleep(WS_SETTLE_US);
					if (r)
						mrep[i][r - 1] = t2;
					if (ret)
						fprintf(stderr, "ufault-bench: ws minimal replay/%s: %s\n",
							store_names[stores[i]], strerror(-ret));
				}
				if (!ret && k == WS_REPLAY)
					ret = ws_bare_round(w, stores[i], r ? bare[i][0] + r - 1 : NULL,
							    r ? bare[i][1] + r - 1 : NULL,
							    r ? bfloor[i] + r - 1 : NULL);
			}
	progress(&o, NULL);
	if (ret)
		goto out;
	{
		struct stat st;

		w->rec_bytes = stat(w->rec, &st) == 0 ? (long)st.st_size : -1;
	}
	printf("%-6s %10s %10s %10s %10s %10s %7s %7s %7s  %-22s %-22s %s\n", "store", "lazy us",
	       "record us", "replay us", "nora us", "floor us", "majors", "rec", "replay",
	       "replay speedup", "record cost", "vs nora; floor");
	for (i = 0; i < 2; i++) {
		double up, cost;
		bool judged;

		for (k = 0; k < WS_NMODES; k++) {
			qsort(ns[i][k], b->repeat, sizeof(double), cmp_double);
			med[i][k] = ns[i][k][b->repeat / 2];
		}
		up = med[i][WS_LAZY] / med[i][WS_REPLAY];
		cost = med[i][WS_RECORD] / med[i][WS_LAZY];
		/* time goals, judged on tmpfs; none with --quick */
		judged = stores[i] == STORE_TMPFS && !b->quick;
		if (judged)
			miss |= up < 5 || cost > 1.3;
		printf("%-6s %10.0f %10.0f %10.0f %10.0f %10.0f %7" PRIu64 " %7" PRIu64 " %7" PRIu64
		       "  %6.2fx %-6s %-6s %6.2fx %-8s %-6s replay %.2fx, record %.2fx; "
		       "lazy/floor %.2fx, replay/floor %.2fx\n",
		       store_names[stores[i]], med[i][WS_LAZY] / 1000, med[i][WS_RECORD] / 1000,
		       med[i][WS_REPLAY] / 1000, med[i][WS_LAZY_NORA] / 1000,
		       med[i][WS_FLOOR] / 1000, maj[i][WS_LAZY],
		       maj[i][WS_RECORD], maj[i][WS_REPLAY], up, b->quick ? "" : "(>= 5)",
		       b->quick ? "" : !judged ? "info" : up < 5 ? "MISS" : "PASS", cost,
		       b->quick ? "" : "(<= 1.3)",
		       b->quick ? "" : !judged ? "info" : cost > 1.3 ? "MISS" : "PASS",
		       med[i][WS_LAZY_NORA] / med[i][WS_REPLAY],
		       med[i][WS_RECORD] / med[i][WS_LAZY_NORA],
		       med[i][WS_LAZY] / med[i][WS_FLOOR], med[i][WS_REPLAY] / med[i][WS_FLOOR]);
	}
	miss |= w->rec_bytes < 0 || w->rec_bytes > 32768;
	printf("record: %ld bytes for %u pages (<= 32768) %s\n", w->rec_bytes, (unsigned int)WS_SET,
	       w->rec_bytes >= 0 && w->rec_bytes <= 32768 ? "PASS" : "MISS");
	for (i = 0; i < 2; i++) {
		printf("%-6s CPU of this process, ms:", store_names[stores[i]]);
		for (k = 0; k < WS_NMODES; k++) {
			qsort(cpu[i][k], b->repeat, sizeof(double), cmp_double);
			printf(" %s %.1f%s", ws_mode_names[k], cpu[i][k][b->repeat / 2] / 1e6,
			       k + 1 < WS_NMODES ? "," : "\n");
		}
	}
	for (i = 0; i < 2; i++) {
		/* what the replay could be at best here: the touches, and the
		 * minimal loop's CPU shared with them on the machine's CPUs */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		double bests[1000], one, two, best, floor, paired, lo, hi, mpaired;

		/* each round's best beside that round's replay: the machine
		 * drifts 2-3x between minutes, never much within a round */
		for (r = 0; r < b->repeat; r++)
			bests[r] = ws_best(bare[i][0][r], bare[i][1][r], bfloor[i][r], ncpu);
		paired = bare_median_ratio(bests, ws_replay_ns[i], b->repeat, &lo, &hi);
		mpaired = bare_median_ratio(mrep[i], ws_replay_ns[i], b->repeat, NULL, NULL);
		qsort(bare[i][0], b->repeat, sizeof(double), cmp_double);
		qsort(bare[i][1], b->repeat, sizeof(double), cmp_double);
		qsort(bfloor[i], b->repeat, sizeof(double), cmp_double);
		qsort(bests, b->repeat, sizeof(double), cmp_double);
		one = bare[i][0][b->repeat / 2];
		two = bare[i][1][b->repeat / 2];
		floor = bfloor[i][b->repeat / 2];
		best = bests[b->repeat / 2];
		if (stores[i] == STORE_TMPFS && !b->quick)
			miss |= paired < 0.9;
		printf("%-6s minimal prefetch loop: %.1f ms CPU in one thread, %.1f ms in two; "
		       "best replay on %ld CPUs %.1f ms: lazy/best %.2fx; ufault's replay over the "
		       "minimal loop's (best/replay, median of the rounds') %.2fx %s %s "
		       "[rounds %.2f-%.2f]\n",
		       store_names[stores[i]], one / 1e6, two / 1e6, ncpu, best / 1e6,
		       med[i][WS_LAZY] / best, paired,
		       b->quick ? "" : "(>= 0.9)",
		       b->quick ? "" : stores[i] != STORE_TMPFS ? "info" :
		       paired < 0.9 ? "MISS" : "PASS", lo, hi);
		printf("%-6s CPU: ufault's replay %.1f ms (all its threads), the minimal loop's "
		       "%.1f ms and its touches' alone %.1f ms: ufault's replay over them %.2fx\n",
		       store_names[stores[i]], cpu[i][WS_REPLAY][b->repeat / 2] / 1e6, one / 1e6,
		       floor / 1e6, (one + floor) / cpu[i][WS_REPLAY][b->repeat / 2]);
		qsort(mrep[i], b->repeat, sizeof(double), cmp_double);
		printf("%-6s minimal replay, measured: %.1f ms, %" PRIu64 " touches served by its "
		       "handler (last round); ufault's replay over it (minimal/replay, median of the "
		       "rounds') %.2fx %s\n",
		       store_names[stores[i]], mrep[i][b->repeat / 2] / 1e6, mrep_faults[i],
		       mpaired, b->quick ? "" : "(>= 0.9) info");
	}
	printf("(majors: faults that read their page, last round; goals judged on tmpfs; floor: "
	       "the touches alone after a prefetch waited for; minimal prefetch loop: pread, "
	       "UFFDIO_COPY and MADV_POPULATE_READ per recorded run, nothing else running; "
	       "best replay: the loop in one thread beside the touches, or the touches alone "
	       "over the pages the loop mapped and the two threads' CPU shared by the CPUs, "
	       "whichever is less, at least those touches; "
	       "minimal replay, measured: the loop in one thread started with the touches, a "
	       "minimal handler serving the touches that come first, timed as the replay, "
	       "in the same rounds)\n");
	if (miss && b->check)
		status = EXIT_MISS;
out:
	if (ret) {
		if (!status)
			fprintf(stderr, "ufault-bench: ws: %s\n", strerror(-ret));
		status = EXIT_ERR;
	}
	unlink(w->rec);
	for (i = 0; i < 2; i++)
		if (w->file[i].fd >= 0)
			close(w->file[i].fd);
	free(w);
	return status;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static void usage(FILE *out)
{
	size_t i, j, col = 0;

	fprintf(out,
		"usage: ufault-bench [--size MiB] [--repeat N] [--quick] [--check] [--only NAME]\n"
		"                    [--machine] [--disk-dir DIR] [--tmpfs-dir DIR] [--store URL]\n"
		"  --size MiB       bytes of data per case (default 64); zipf: a cache budget\n"
		"                   of size/8 (at least 1 MiB) over 10x that data\n"
		"  --repeat N       runs per case; the median is reported (default 3)\n"
		"  --quick          smoke test: 8 MiB, 1 repeat (unless given); it prints the\n"
		"                   figures without goals or PASS/MISS verdicts: at that size\n"
		"                   they would measure nothing, only that every case runs\n"
		"  --machine        BENCH key=value lines, one per case, at the end, instead\n"
		"                   of the tables\n"
		"  --check          exit 1 when a goal is missed\n"
		"  --only NAME      run only the cases named NAME or NAME-* (warm, cold, ...):\n"
		"                  ");
	/* the cases' names, each once, from the table */
	for (i = 0; i < NR_CASES; i++) {
		for (j = 0; j < i && strcmp(cases[j].name, cases[i].name); j++)
			;
		if (j < i)
			continue;
		if (col + strlen(cases[i].name) > 58) {
			fprintf(out, "\n                  ");
			col = 0;
		}
		col += fprintf(out, " %s", cases[i].name);
	}
	fprintf(out, "\n"
		"                   or a run of its own (without --only: every case above,\n"
		"                   then ws):\n"
		"                   ws      a recorded working set of 4096 pages, cold: touched\n"
		"                           lazily, while recorded, and replayed\n"
		"                   fork    a fork child's cold fault against the parent's, and\n"
		"                           fork() with a --size (default 1 GiB) mapping half\n"
		"                           cached\n"
		"                   serve   a Firecracker-style client of uf_object_serve_uffd\n"
		"                           (tools/serve/bench-serve.c)\n"
		"                   serve-ws  its serve-ws rows alone: a working set pushed\n"
		"                           into a client, beside a minimal push loop\n"
		"                   serve-flood  its serve-flood rows alone: a client beside\n"
		"                           an idle flood, a fault flood, lying offsets\n"
		"                           and a mapping flood of another uid\n"
		"                   serve-huge  its serve-restore-huge row alone: a hugetlbfs\n"
		"                           client's cold restore against the minimal servers\n"
		"                   attach  a second ufault client's warm reads against the\n"
		"                           kernel's tmpfs mapping, and 16 clients of one object\n"
		"                   with --store: store (all its cases, the default),\n"
		"                   cold-seq, cold-rand, or layout (below)\n"
		"  --disk-dir DIR   where the disk file lives (default /var/tmp)\n"
		"  --tmpfs-dir DIR  where the tmpfs file lives (default /dev/shm)\n"
		"  --store URL      objects in a Redis Cluster (redis://[[user]:password@]host:port\n"
		"                   [,...][/NAME][?options]): cold-seq and cold-rand beside the\n"
		"                   file store and raw GET/MGET (default 32 MiB); --only layout:\n"
		"                   cost per page of each layout in the cluster (default 16 MiB);\n"
		"                   --only ws: the working set replayed from the cluster beside\n"
		"                   the minimal loop (HMGETs) and a minimal replay, measured\n"
		"                   or the object at an http:// or https:// URL, read-only: its\n"
		"                   first --size MiB (default 32) cold-seq and cold-rand beside a\n"
		"                   tmpfs copy and one range GET per page; nothing is written\n"
		"                   there, so --only layout and ws are refused (exit 2)\n"
		"  -h, --help       this text\n"
		"  --version        the version of ufault\n"
		"exit: 0 done, 1 goal missed (--check), 2 error, 77 no userfaultfd\n");
}

int bench_attach(const char *dir, size_t size, unsigned int repeat, bool quick, bool check);

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || end == s || *end || *v == 0 || *v > max ? -EINVAL : 0;
}

/* ------------------------------------------------------------------ */
/* --only fork: a fork child's faults and the cost of fork()           */
/* ------------------------------------------------------------------ */

#define FORK_COLD_PAGES	4096	/* cold faults timed in each process */
#define FORK_ROUNDS	21

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ns per page to touch @n pages from @p, one page a fault (each cold). */
static uint64_t touch_ns(const volatile unsigned char *p, size_t n)
{
	uint64_t t0 = now_ns();
	size_t i;
	unsigned int sum = 0;

	for (i = 0; i < n; i++)
		sum += p[i * PG];
	(void)sum;
	return (now_ns() - t0) / n;
}

/* ns of one fork() + the child's _exit() + waitpid(), or 0. */
static uint64_t fork_once_ns(void)
{
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	return now_ns() - t0;
}

/* Page faults taken so far by this process's threads other than the
 * calling one (ufault's: the handlers, the monitor, the worker); with
 * @nthreads, the number of threads, the caller's too. */
static uint64_t other_threads_minflt(unsigned int *nthreads)
{
	char path[300], buf[1024];
	uint64_t sum = 0;
	pid_t self = (pid_t)syscall(SYS_gettid);
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	if (nthreads)
		*nthreads = 1;
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		unsigned long flt = 0;
		ssize_t n;
		char *p;
		int fd;

		if (d->d_name[0] == '.' || atoi(d->d_name) == self)
			continue;
		if (nthreads)
			++*nthreads;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		/* after "(comm)": state ppid pgrp session tty tpgid flags minflt */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lu", &flt) == 1)
			sum += flt;
	}
	closedir(dir);
	return sum;
}

/* The floor's handler: read the uffd's events (closing each fork's fd
 * at once, which lets the child go on unregistered) until @stopfd. */
struct fork_floor {
	int uffd, stopfd;
};

static void *fork_floor_handler(void *arg)
{
	struct fork_floor *ff = arg;
	struct pollfd p[2] = { { ff->uffd, POLLIN, 0 }, { ff->stopfd, POLLIN, 0 } };
	struct uffd_msg msg;

	while (poll(p, 2, -1) >= 0 && !(p[1].revents & POLLIN)) {
		if (read(ff->uffd, &msg, sizeof(msg)) == sizeof(msg) &&
		    msg.event == UFFD_EVENT_FORK)
			close((int)msg.arg.fork.ufd);
	}
	return NULL;
}

/* A thread that allocates once (the C library gives it a malloc arena,
 * as ufault's threads have) and then sleeps for good. */
static void *fork_idle_thread(void *arg)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
	void *volatile p = malloc(64);

	free(p);
	pthread_mutex_lock(&m);
	for (;;)
		pthread_cond_wait(&never, &m);
	return arg;
}

/*
 * A process to fork beside this one, round by round, so that both see the
 * same load: it maps @size bytes of @fd shared, touches the first half,
 * and with @bare_uffd registers the mapping MISSING on a userfaultfd of
 * its own with UFFD_FEATURE_EVENT_FORK, read by one minimal handler
 * thread (the kernel's own cost of a fork event).  It says when it is
 * ready (a 0 on @res), then, for each 'f'
 * read from @cmd, it forks once and writes the ns (0 on error) to @res;
 * it exits at anything else.
 */
static void fork_peer_main(int fd, size_t size, bool bare_uffd, int cmd, int res)
{
	unsigned char *k = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	struct fork_floor ff = { -1, -1 };
	uint64_t ns;
	pthread_t t;
	size_t i;
	char c;

	if (k == MAP_FAILED)
		_exit(1);
	for (i = 0; i < size / PG / 2; i++)
		(void)*(volatile unsigned char *)(k + i * PG);
	if (bare_uffd) {
		struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_FORK };
		struct uffdio_register reg = { .range = { (unsigned long)k, size },
					       .mode = UFFDIO_REGISTER_MODE_MISSING };

		ff.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		ff.stopfd = eventfd(0, EFD_CLOEXEC);
		if (ff.uffd < 0 || ff.stopfd < 0 || ioctl(ff.uffd, UFFDIO_API, &api) ||
		    ioctl(ff.uffd, UFFDIO_REGISTER, &reg) ||
		    pthread_create(&t, NULL, fork_floor_handler, &ff))
			_exit(1);
	}
	ns = 0;			/* ready: nothing of the set-up runs beside the timings */
	if (write(res, &ns, sizeof(ns)) != sizeof(ns))
		_exit(1);
	while (read(cmd, &c, 1) == 1) {
		if (c == 't') {
			unsigned char n = 0;

			/* n idle threads that have each allocated (an arena) */
			if (read(cmd, &n, 1) != 1)
				break;
			while (n--)
				if (pthread_create(&t, NULL, fork_idle_thread, NULL))
					_exit(1);
			usleep(10000);
			ns = 0;
		} else if (c == 'f') {
			ns = fork_once_ns();
		} else {
			break;
		}
		if (write(res, &ns, sizeof(ns)) != sizeof(ns))
			break;
	}
	_exit(0);
}

struct fork_peer {
	pid_t pid;
	int cmd, res;
};

/* Start a fork_peer_main() process and wait until it is ready; false on
 * error. */
static bool fork_peer_start(struct fork_peer *p, int fd, size_t size, bool bare_uffd)
{
	uint64_t ready;
	int c[2], r[2];

	if (pipe2(c, O_CLOEXEC) < 0)
		return false;
	if (pipe2(r, O_CLOEXEC) < 0) {
		close(c[0]);
		close(c[1]);
		return false;
	}
	p->pid = fork();
	if (p->pid == 0) {
		close(c[1]);
		close(r[0]);
		fork_peer_main(fd, size, bare_uffd, c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	p->cmd = c[1];
	p->res = r[0];
	return p->pid > 0 && read(p->res, &ready, sizeof(ready)) == sizeof(ready);
}

/* Start @n idle threads with a malloc arena each in the peer. */
static bool fork_peer_threads(struct fork_peer *p, unsigned char n)
{
	char c[2] = { 't', (char)n };
	uint64_t ns;

	return write(p->cmd, c, 2) == 2 && read(p->res, &ns, sizeof(ns)) == sizeof(ns);
}

/* One fork in the peer: its ns, or 0. */
static uint64_t fork_peer_ns(struct fork_peer *p)
{
	uint64_t ns = 0;

	if (write(p->cmd, "f", 1) != 1 || read(p->res, &ns, sizeof(ns)) != sizeof(ns))
		return 0;
	return ns;
}

/* (a quit command, not the pipe's end: another peer may hold its copy) */
static void fork_peer_end(struct fork_peer *p)
{
	int st;

	if (write(p->cmd, "q", 1) != 1)
		kill(p->pid, SIGKILL);
	close(p->cmd);
	close(p->res);
	if (p->pid > 0)
		waitpid(p->pid, &st, 0);
}

/*
 * A child's cold fault against the parent's (one-page readahead, so each
 * touch is a fault served from the tmpfs file store: the parent reads the
 * first half, the child the second), then fork() of a process with a
 * --size (default 1 GiB) ufault mapping half cached against fork() of a
 * process with a tmpfs mapping of the same size half touched, and for
 * information against a process whose tmpfs mapping is registered on a
 * bare userfaultfd with the fork event (the kernel's share).  The three
 * fork in turn, round by round (the two references are processes of
 * their own, started before this one has an mm), so that a change of
 * load touches them alike; medians of FORK_ROUNDS.
 */
static int bench_fork(struct bench *b, size_t size)
{
	struct uf_mm_config cfg = { .readahead_max = PG, .flags = UF_MM_NO_HUGE };
	char path[] = "/dev/shm/ufault-bench-fork-XXXXXX";
	uint64_t t[4][FORK_ROUNDS], *res, parent_ns, child_ns, uf_fork, k_fork, floor_fork, mt_fork, flt;
	struct fork_peer kern = { -1, -1, -1 }, bare = { -1, -1, -1 }, mt = { -1, -1, -1 };
	unsigned int nthreads;
	struct uf_object *obj = NULL;
	struct uf_mm *mm = NULL;
	unsigned char *m;
	int fd, st, ret, r;
	size_t i;
	pid_t pid;

	(void)b;
	res = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fd = mkstemp(path);
	if (res == MAP_FAILED || fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return 1;
	unlink(path);
	/* the references, started before this process has an mm */
	if (!fork_peer_start(&kern, fd, size, false) || !fork_peer_start(&bare, fd, size, true) ||
	    !fork_peer_start(&mt, fd, size, true)) {
		fprintf(stderr, "ufault-bench: fork: %s\n", strerror(errno));
		return 1;
	}
	ret = uf_mm_create(&cfg, &mm);
	if (!ret) {
		char fdpath[64];

		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		ret = uf_object_open(mm, fdpath, O_RDONLY, &obj);
	}
	if (!ret)
		ret = uf_mmap(mm, size, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m);
	if (ret) {
		fprintf(stderr, "ufault-bench: fork: %s\n", strerror(-ret));
		return 1;
	}
	/* one fault per page: the first half in the parent, the next in the child */
	parent_ns = touch_ns(m, FORK_COLD_PAGES);
	pid = fork();
	if (pid == 0) {
		res[0] = touch_ns(m + (size_t)FORK_COLD_PAGES * PG, FORK_COLD_PAGES);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	child_ns = res[0];
	printf("%-34s %9.2f us/page  parent %9.2f us/page  %6.2fx (goal <= 1.10x)\n",
	       "fork-cold-fault (child)", (double)child_ns / 1000, (double)parent_ns / 1000,
	       (double)child_ns / (double)parent_ns);

	/* half of the mapping cached, then fork() here and in the peers, in
	 * turn, round by round */
	for (i = 0; i < size / PG / 2; i++)
		(void)*(volatile unsigned char *)(m + i * PG);
	/* the last peer gets as many threads as ufault has here, the bare
	 * handler one of them, the others with a malloc arena each */
	flt = other_threads_minflt(&nthreads);
	nthreads = nthreads - 1 < 255 ? nthreads - 1 : 255;	/* ufault's */
	if (nthreads > 1 && !fork_peer_threads(&mt, (unsigned char)(nthreads - 1))) {
		fprintf(stderr, "ufault-bench: fork: %s\n", strerror(errno));
		return 1;
	}
	for (r = 0; r < FORK_ROUNDS; r++) {
		t[0][r] = fork_once_ns();
		t[1][r] = fork_peer_ns(&kern);
		t[2][r] = fork_peer_ns(&bare);
		t[3][r] = fork_peer_ns(&mt);
		if (!t[0][r] || !t[1][r] || !t[2][r] || !t[3][r]) {
			fprintf(stderr, "ufault-bench: fork: a round failed\n");
			return 1;
		}
	}
	flt = other_threads_minflt(NULL) - flt;
	for (i = 0; i < 4; i++)
		qsort(t[i], FORK_ROUNDS, sizeof(t[i][0]), cmp_u64);
	uf_fork = t[0][FORK_ROUNDS / 2];
	k_fork = t[1][FORK_ROUNDS / 2];
	floor_fork = t[2][FORK_ROUNDS / 2];
	mt_fork = t[3][FORK_ROUNDS / 2];
	fork_peer_end(&kern);
	fork_peer_end(&bare);
	fork_peer_end(&mt);
	uf_munmap(mm, m, size);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	close(fd);
	printf("%-34s %9.2f ms        tmpfs  %9.2f ms        %6.2fx (goal <= 1.50x)\n",
	       "fork (mapping half cached)", (double)uf_fork / 1e6, (double)k_fork / 1e6,
	       (double)uf_fork / (double)k_fork);
	printf("%-34s %9.2f ms        tmpfs  %9.2f ms        %6.2fx (info; ufault %.2fx it)\n",
	       "fork floor (bare uffd, fork event)", (double)floor_fork / 1e6,
	       (double)k_fork / 1e6, (double)floor_fork / (double)k_fork,
	       (double)uf_fork / (double)floor_fork);
	printf("%-34s %9.2f ms        tmpfs  %9.2f ms        %6.2fx (info; ufault %.2fx it)\n",
	       "fork floor (same threads, event)", (double)mt_fork / 1e6,
	       (double)k_fork / 1e6, (double)mt_fork / (double)k_fork,
	       (double)uf_fork / (double)mt_fork);
	printf("%-34s %9.1f              (info; copy-on-write after each fork)\n",
	       "fork: faults of ufault's threads", (double)flt / FORK_ROUNDS);
	munmap(res, PG);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "check", no_argument, NULL, 'c' },
		{ "only", required_argument, NULL, 'o' },
		{ "disk-dir", required_argument, NULL, 'd' },
		{ "tmpfs-dir", required_argument, NULL, 't' },
		{ "store", required_argument, NULL, 'S' },
		{ "machine", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct bench b = {
		.file = { [STORE_TMPFS] = { .dir = "/dev/shm", .fd = -1 },
			  [STORE_DISK] = { .dir = "/var/tmp", .fd = -1 } },
		.file_warm = { { .fd = -1 }, { .fd = -1 } },
	};
	unsigned long size_mib = 0, repeat = 0, v;
	const char *store = NULL;
	struct result res[NR_CASES];
	struct sample *runs = NULL;
	struct out o = { .tty = isatty(STDERR_FILENO) };
	bool quick = false, miss = false, need[2] = { false, false }, need_orders = false;
	bool need_zipf = false;
	int opt, ret, status = 0;
	unsigned int r;
	size_t i;

	while ((opt = getopt_long(argc, argv, "s:r:qco:d:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (parse_uint(optarg, 1 << 16, &v))
				goto bad_usage;
			size_mib = v;
			break;
		case 'r':
			if (parse_uint(optarg, 1000, &v))
				goto bad_usage;
			repeat = v;
			break;
		case 'q':
			quick = true;
			break;
		case 'c':
			b.check = true;
			break;
		case 'o':
			b.only = optarg;
			break;
		case 'd':
			b.file[STORE_DISK].dir = optarg;
			break;
		case 't':
			b.file[STORE_TMPFS].dir = optarg;
			break;
		case 'S':
			store = optarg;
			break;
		case 'm':
			o.machine = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ufault-bench (ufault) %s\n", UF_VERSION);
			return 0;
		default:
			goto bad_usage;
		}
	}
	if (optind != argc)
		goto bad_usage;
	if (store) {
		struct bench_redis_opts ro = {
			.url = store, .only = b.only, .tmpfs_dir = b.file[STORE_TMPFS].dir,
			.size = (size_t)(size_mib ? size_mib : quick ? 8 : 0) << 20,
			.repeat = (unsigned int)(repeat ? repeat : quick ? 1 : 0), .check = b.check,
			.quick = quick,
		};

		if (!strncmp(store, "http://", 7) || !strncmp(store, "https://", 8))
			return bench_http_store_main(&ro);	/* tools/bench/http-store.c */
		return bench_redis_main(&ro);
	}
	if (b.only && !strcmp(b.only, "fork"))
		return bench_fork(&b, (size_t)(size_mib ? size_mib : 1024) << 20);
	if (b.only && !strcmp(b.only, "attach"))	/* tools/bench/attach.c */
		return bench_attach(b.file[STORE_TMPFS].dir,
				    (size_t)(size_mib ? size_mib : quick ? 8 : 64) << 20,
				    (unsigned int)repeat, quick, b.check);
	o.quick = quick;
	b.quick = quick;
	b.size = (size_t)(size_mib ? size_mib : quick ? 8 : 64) << 20;
	b.repeat = (unsigned int)(repeat ? repeat : quick ? 1 : 3);
	b.npages = b.size / PG;
	if (b.only && !strcmp(b.only, "ws"))
		return bench_ws(&b);
	if (b.only && (!strcmp(b.only, "serve") || !strcmp(b.only, "serve-flood") ||
		       !strcmp(b.only, "serve-huge") || !strcmp(b.only, "serve-ws"))) {
		struct bench_serve_opts so = {
			.tmpfs_dir = b.file[STORE_TMPFS].dir, .repeat = (unsigned int)repeat,
			.quick = quick, .check = b.check,
			.flood_only = !strcmp(b.only, "serve-flood"),
			.huge_only = !strcmp(b.only, "serve-huge"),
			.ws_only = !strcmp(b.only, "serve-ws"),
		};

		return bench_serve_main(&so);
	}
	/* 8 MiB over 80 MiB, 200000 accesses by default; the accesses scale
	 * with the budget so that the cache turns over as many times */
	b.zipf.budget = b.size / 8 < (1 << 20) ? 1 << 20 : b.size / 8;
	b.zipf.size = ZIPF_DATA_X * b.zipf.budget;
	b.zipf.npages = b.zipf.size / PG;
	b.zipf.naccess = (size_t)((double)ZIPF_ACCESSES * (double)b.zipf.budget / (8 << 20));
	b.zipf.file = (struct bench_file){ .dir = b.file[STORE_TMPFS].dir, .fd = -1 };

	for (i = 0; i < NR_CASES; i++) {
		const struct bench_case *c = &cases[i];

		if (!selected(&b, c))
			continue;
		if (c->order == ORDER_ZIPF) {
			need_zipf = true;
			continue;
		}
		need_orders = true;
		if (c->store <= STORE_DISK)
			need[c->store] = true;
	}
	if (!need_orders && !need_zipf) {
		fprintf(stderr, "ufault-bench: no case is named %s\n", b.only);
		goto bad_usage;
	}

	ret = uf_mm_create(NULL, &b.mm);
	if (!ret) {
		struct uf_mm_config nohuge = { .flags = UF_MM_NO_HUGE };

		ret = uf_mm_create(&nohuge, &b.mm_nohuge);
	}
	if (ret) {
		fprintf(stderr, "ufault-bench: uf_mm_create: %s\n", strerror(-ret));
		return ret == -EPERM || ret == -ENOSYS ? EXIT_SKIP : EXIT_ERR;
	}
	if (need_orders)
		ret = make_orders(&b);
	for (i = STORE_TMPFS; !ret && i <= STORE_DISK; i++) {
		if (!need[i])
			continue;
		ret = file_create(&b.file[i], b.size);
		if (ret)
			fprintf(stderr, "ufault-bench: data file in %s: %s\n", b.file[i].dir,
				strerror(-ret));
	}
	if (!ret && need_zipf) {
		ret = make_zipf(&b);
		if (!ret) {
			ret = file_create(&b.zipf.file, b.zipf.size);
			if (ret)
				fprintf(stderr, "ufault-bench: zipf data file in %s: %s\n",
					b.zipf.file.dir, strerror(-ret));
		}
	}
	runs = calloc(NR_CASES * b.repeat, sizeof(*runs));
	if (!ret && !runs)
		ret = -ENOMEM;
	if (ret) {
		status = EXIT_ERR;
		goto out;
	}

	if (need_orders) {
		printf("ufault-bench: %zu MiB (%zu pages of %lu bytes) per case, median of %u, "
		       "%ld CPUs, one load per page, seed %#llx, 1 warm-up round\n", b.size >> 20,
		       b.npages, PG, b.repeat, sysconf(_SC_NPROCESSORS_ONLN),
		       (unsigned long long)SEED);
		printf("stores: tmpfs %s (%s), disk %s (%s)\n", b.file[STORE_TMPFS].dir,
		       fs_name(b.file[STORE_TMPFS].fstype), b.file[STORE_DISK].dir,
		       fs_name(b.file[STORE_DISK].fstype));
	}
	if (need_zipf)
		printf("ufault-bench: zipf: %zu MiB budget over %zu MiB on %s (%s), %zu accesses, "
		       "median of %u, %ld CPUs\n", (size_t)(b.zipf.budget >> 20), b.zipf.size >> 20,
		       b.zipf.file.dir, fs_name(b.zipf.file.fstype), b.zipf.naccess, b.repeat,
		       sysconf(_SC_NPROCESSORS_ONLN));
	if (quick)
		printf("ufault-bench: --quick: a smoke test (small data, one repeat): the times\n"
		       "show that every case runs, not how fast; no goals or verdicts on them\n");
	fflush(stdout);

	/*
	 * Round 0 is a warm-up whose samples are dropped: the first use of
	 * memory in a VM pays for the host backing it, and that should not
	 * land on whichever case happens to run first.  Then the repeats,
	 * interleaved, so drift over the run hits every case alike.  The zipf
	 * case is judged on major faults, not time: it skips the warm-up.
	 */
	for (r = 0; r <= b.repeat; r++) {
		for (i = 0; i < NR_CASES; i++) {
			const struct bench_case *c = &cases[i];
			struct sample warmup;

			if (!selected(&b, c) || (!r && c->order == ORDER_ZIPF))
				continue;
			if (r)
				progress(&o, "ufault-bench: round %u of %u: %s %s/%s", r, b.repeat,
					 c->name, c->target, store_names[c->store]);
			else
				progress(&o, "ufault-bench: warm-up round: %s %s/%s", c->name,
					 c->target, store_names[c->store]);
			ret = c->run(&b, c, r ? &runs[i * b.repeat + r - 1] : &warmup);
			if (ret) {
				progress(&o, NULL);
				fprintf(stderr, "ufault-bench: %s %s/%s: %s\n", c->name, c->target,
					store_names[c->store], strerror(-ret));
				status = EXIT_ERR;
				goto out;
			}
			if (r == b.repeat) {
				summarize_one(&b, runs, res, i);
				print_row(&o, &b, res, i);
			}
		}
	}
	progress(&o, NULL);

	for (i = 0; i < NR_CASES; i++)
		if (!selected(&b, &cases[i]))
			res[i] = (struct result){ .ref = -1 };
	summarize_ratios(res);
	print_results(&o, &b, res);
	if (need[STORE_TMPFS])
		print_bookkeeping(&b);
	if (!b.only) {
		int ws = bench_ws(&b);

		if (ws == EXIT_ERR)
			status = EXIT_ERR;
		else
			miss |= ws == EXIT_MISS;
	}
	for (i = 0; i < NR_CASES && !quick; i++)
		miss |= res[i].miss || res[i].time_miss;
	if (miss && b.check)
		status = EXIT_MISS;
out:
	uf_object_put(b.warm);
	uf_object_put(b.warm_nohuge);
	uf_mm_destroy(b.mm);
	uf_mm_destroy(b.mm_nohuge);
	for (i = 0; i < 2; i++)
		if (b.file_warm[i].fd >= 0)
			close(b.file_warm[i].fd);
	for (i = STORE_TMPFS; i <= STORE_DISK; i++)
		if (b.file[i].fd >= 0)
			close(b.file[i].fd);
	if (b.zipf.file.fd >= 0)
		close(b.zipf.file.fd);
	for (i = 0; i < NR_ORDERS; i++)
		free(b.order[i]);
	free(runs);
	return status;

bad_usage:
	usage(stderr);
	return EXIT_ERR;
}
