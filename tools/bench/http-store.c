// SPDX-License-Identifier: MIT
/*
 * ufault-bench --store http(s)://URL - cold reads of the object the URL
 * names, beside the same bytes in a file on tmpfs, and beside the raw
 * store (one range GET per page, no ufault).
 *
 * The HTTP store is read-only, so the bench writes nothing there: it reads
 * the object that is already at the URL (its first --size MiB, 32 by
 * default, the whole object when smaller), copies those bytes once into a
 * tmpfs file with the raw store's reads, and keeps the first word of every
 * page; each touch is checked against it, so a wrong page is an error, not
 * a fast result.  The cases that write to the store (--only layout, ws)
 * are refused with a message.
 *
 *   cold-seq   get/raw: one range GET per page, in order (uf_http_store_open's
 *              ->read, kept-alive connections); ufault/tmpfs: the copy
 *              through the file store; ufault/http: uf_http_open(), a new
 *              object (empty cache) per run.
 *   cold-rand  the same, the pages in a fixed random order.
 *
 * All ratios are information: the goal of issue 37 (a restore from
 * loopback nginx <= 2x the file's cost per page) is judged by --only
 * serve's serve-restore-http row.  Without libcurl, uf_http_open() (of
 * tools/http/no-http.c) says how to get the HTTP store and exits 2.
 */
#define _GNU_SOURCE
#include "../http/bench-http.h"
#include "../redis/bench-redis.h"

#include <ufault.h>
#include <ufault-http.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG		((size_t)UF_PAGE_SIZE)
#define SEED		0x7566617574687470ULL
#define EXIT_ERR	2
#define EXIT_SKIP	77
#define CHUNK		(256 * PG)	/* bytes per read of the copy */

enum hs_target { H_RAW, H_FILE, H_HTTP };
enum hs_order { H_SEQ, H_RAND };

static const char *const hs_target_names[] = { "get", "ufault", "ufault" };
static const char *const hs_store_names[] = { "raw", "tmpfs", "http" };

struct hs_case {
	const char *name;
	enum hs_target target;
	enum hs_order order;
	int ref, ref2;		/* row indexes of the references, -1 none */
};

/* Row indexes are the references: keep them in step with the table. */
static const struct hs_case hs_cases[] = {
	/* 0 */ { "cold-seq", H_RAW, H_SEQ, -1, -1 },
	/* 1 */ { "cold-seq", H_FILE, H_SEQ, -1, -1 },
	/* 2 */ { "cold-seq", H_HTTP, H_SEQ, 1, 0 },
	/* 3 */ { "cold-rand", H_RAW, H_RAND, -1, -1 },
	/* 4 */ { "cold-rand", H_FILE, H_RAND, -1, -1 },
	/* 5 */ { "cold-rand", H_HTTP, H_RAND, 4, 3 },
};
#define NHCASES (sizeof(hs_cases) / sizeof(hs_cases[0]))

/* One run of one case. */
struct hs_sample {
	double ns;		/* per page */
	uint64_t gets, bytes;	/* ufault/http: the store's GETs and bytes */
};

struct hs_bench {
	const char *url;
	struct uf_mm *mm;
	const struct uf_store_ops *ops;	/* the raw store */
	void *store;
	size_t size, npages;
	uint64_t *tags;		/* the first word of each page */
	uint32_t *order[2];
	char file[256];
	unsigned char *page;
};

static uint64_t hs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t hs_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int hs_orders(struct hs_bench *hb)
{
	uint64_t s = SEED;
	size_t i;

	for (i = H_SEQ; i <= H_RAND; i++)
		if (!(hb->order[i] = malloc(hb->npages * sizeof(uint32_t))))
			return -ENOMEM;
	for (i = 0; i < hb->npages; i++)
		hb->order[H_SEQ][i] = hb->order[H_RAND][i] = (uint32_t)i;
	for (i = hb->npages - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = (size_t)(hs_next(&s) % (i + 1));
		uint32_t t = hb->order[H_RAND][i];

		hb->order[H_RAND][i] = hb->order[H_RAND][j];
		hb->order[H_RAND][j] = t;
	}
	return 0;
}

/* The object's first hb->size bytes, read with the raw store, into a
 * tmpfs file; the first word of each page into hb->tags. */
static int hs_copy(struct hs_bench *hb, const char *dir)
{
	unsigned char *buf = malloc(CHUNK);
	size_t off, n, i;
	ssize_t got;
	int fd, ret = 0;

	snprintf(hb->file, sizeof(hb->file), "%s/ufault-bench-http.%d", dir ? dir : "/dev/shm",
		 (int)getpid());
	fd = open(hb->file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !buf) {
		ret = fd < 0 ? -errno : -ENOMEM;
		fprintf(stderr, "ufault-bench: %s: %s\n", hb->file, strerror(-ret));
		goto out;
	}
	for (off = 0; off < hb->size; off += n) {
		n = hb->size - off < CHUNK ? hb->size - off : CHUNK;
		got = hb->ops->read(hb->store, buf, n, off);
		if (got != (ssize_t)n) {
			ret = got < 0 ? (int)got : -EIO;
			fprintf(stderr, "ufault-bench: reading %s: %s\n", hb->url, strerror(-ret));
			goto out;
		}
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			ret = -EIO;
			fprintf(stderr, "ufault-bench: writing %s failed\n", hb->file);
			goto out;
		}
		for (i = 0; i < n / PG; i++)
			memcpy(&hb->tags[off / PG + i], buf + i * PG, 8);
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static __attribute__((noinline)) size_t hs_touch(const struct hs_bench *hb, const char *base,
						  const uint32_t *order)
{
	size_t i, bad = 0;

	for (i = 0; i < hb->npages; i++) {
		uint32_t p = order[i];

		bad += *(const volatile uint64_t *)(base + (size_t)p * PG) != hb->tags[p];
	}
	return bad;
}

/* One run into *s; the pages that read wrong into *bad. */
static int hs_run(struct hs_bench *hb, const struct hs_case *c, struct hs_sample *s, size_t *bad)
{
	struct uf_http_stats st;
	const uint32_t *order = hb->order[c->order];
	struct uf_object *obj;
	uint64_t t0, t1;
	size_t i;
	void *p;
	int ret;

	*bad = 0;
	if (c->target == H_RAW) {
		t0 = hs_now();
		for (i = 0; i < hb->npages; i++) {
			uint64_t w;

			if (hb->ops->read(hb->store, hb->page, PG, (uint64_t)order[i] * PG) != (ssize_t)PG)
				return -EIO;
			memcpy(&w, hb->page, 8);
			*bad += w != hb->tags[order[i]];
		}
		s->ns = (double)(hs_now() - t0) / (double)hb->npages;
		s->gets = hb->npages;
		s->bytes = hb->npages * PG;
		return 0;
	}
	ret = c->target == H_HTTP ? uf_http_open(hb->mm, hb->url, NULL, &obj)
				  : uf_object_open(hb->mm, hb->file, O_RDONLY, &obj);
	if (ret)
		return ret;
	ret = uf_mmap(hb->mm, hb->size, PROT_READ, UF_MAP_SHARED, obj, 0, &p);
	if (!ret) {
		t0 = hs_now();
		*bad = hs_touch(hb, p, order);
		t1 = hs_now();
		uf_munmap(hb->mm, p, hb->size);
		s->ns = (double)(t1 - t0) / (double)hb->npages;
		if (c->target == H_HTTP && !uf_http_stats(obj, &st)) {
			s->gets = st.requests - 1;	/* (not the open's) */
			s->bytes = st.bytes;
		}
	}
	uf_object_put(obj);
	return ret;
}

static int cmp_sample(const void *a, const void *b)
{
	double x = ((const struct hs_sample *)a)->ns, y = ((const struct hs_sample *)b)->ns;

	return (x > y) - (x < y);
}

static bool hs_selected(const char *only, const struct hs_case *c)
{
	size_t n;

	if (!only || !strcmp(only, "store"))
		return true;
	n = strlen(only);
	return !strncmp(c->name, only, n) && (!c->name[n] || c->name[n] == '-');
}

static void hs_report(const struct hs_bench *hb, const char *only, const struct hs_sample *ms,
		      const double *spr, unsigned repeat)
{
	double med[NHCASES];
	size_t i;

	printf("\n%-9s %-8s %-5s %10s %9s %7s %8s %9s\n", "case", "target", "store", "ns/page",
	       "MiB/s", "spread", "GETs", "KiB/GET");
	for (i = 0; i < NHCASES; i++) {
		const struct hs_case *c = &hs_cases[i];

		med[i] = ms[i].ns;
		if (!hs_selected(only, c))
			continue;
		printf("%-9s %-8s %-5s %10.1f %9.0f %6.0f%%", c->name, hs_target_names[c->target],
		       hs_store_names[c->target], med[i], PG * 1e9 / med[i] / (1 << 20),
		       100 * spr[i]);
		if (c->target != H_FILE)
			printf(" %8" PRIu64 " %9.1f", ms[i].gets,
			       ms[i].gets ? (double)ms[i].bytes / 1024 / (double)ms[i].gets : 0);
		putchar('\n');
	}
	printf("\nratios (medians of this run; information):\n");
	for (i = 0; i < NHCASES; i++) {
		const struct hs_case *c = &hs_cases[i];

		if (c->ref < 0 || !hs_selected(only, c))
			continue;
		printf("  %-9s %-28s cost    %7.2fx\n", c->name, "ufault/http vs ufault/tmpfs",
		       med[i] / med[c->ref]);
		printf("  %-9s %-28s cost    %7.2fx\n", c->name, "ufault/http vs get/raw",
		       med[i] / med[c->ref2]);
	}
	putchar('\n');
	for (i = 0; i < NHCASES; i++) {
		const struct hs_case *c = &hs_cases[i];

		if (!hs_selected(only, c))
			continue;
		printf("BENCH case=%s target=%s store=%s order=%s ns_per_page=%.1f pages=%zu "
		       "repeat=%u spread=%.3f", c->name, hs_target_names[c->target],
		       hs_store_names[c->target], c->order == H_SEQ ? "sequential" : "random",
		       med[i], hb->npages, repeat, spr[i]);
		if (c->target != H_FILE)
			printf(" gets=%" PRIu64 " bytes=%" PRIu64, ms[i].gets, ms[i].bytes);
		if (c->ref >= 0)
			printf(" ratio=%.3f ratio_kind=cost ref=ufault/tmpfs ratio2=%.3f "
			       "ratio2_kind=cost ref2=get/raw", med[i] / med[c->ref],
			       med[i] / med[c->ref2]);
		putchar('\n');
	}
	printf("\nget/raw: one range GET of 4 KiB per page (uf_http_store_open's ->read);\n"
	       "ufault/http: uf_http_open(), a new object (empty cache) per run; ufault/tmpfs:\n"
	       "the same bytes through the file store.  GETs, KiB/GET: the store's range GETs\n"
	       "in the median run (uf_http_stats()).  Only ratios of one run mean anything\n"
	       "on these machines.\n");
}

/* Every selected case @repeat times after a warm-up round; 0 or -errno. */
static int hs_measure(struct hs_bench *hb, const char *only, unsigned repeat,
		      struct hs_sample *runs)
{
	struct hs_sample s;
	unsigned r;
	size_t i, bad;
	int ret;

	for (r = 0; r <= repeat; r++) {
		for (i = 0; i < NHCASES; i++) {
			const struct hs_case *c = &hs_cases[i];

			if (!hs_selected(only, c))
				continue;
			memset(&s, 0, sizeof(s));
			ret = hs_run(hb, c, &s, &bad);
			if (ret || bad) {
				fprintf(stderr, "ufault-bench: %s %s/%s: %s\n", c->name,
					hs_target_names[c->target], hs_store_names[c->target],
					ret ? strerror(-ret) : "pages read wrong bytes");
				if (bad)
					fprintf(stderr, "ufault-bench: %zu of %zu pages wrong\n", bad,
						hb->npages);
				return ret ? ret : -EIO;
			}
			if (r)
				runs[i * repeat + r - 1] = s;
		}
	}
	return 0;
}

static int hs_bench(struct hs_bench *hb, const struct bench_redis_opts *o, uint64_t osize)
{
	unsigned repeat = o->repeat ? o->repeat : 3;
	struct hs_sample *runs, med[NHCASES];
	double spr[NHCASES];
	size_t i;
	int ret;

	hb->size = o->size ? o->size : (size_t)32 << 20;
	if (hb->size > osize)
		hb->size = (size_t)osize;
	hb->size = hb->size / PG * PG;
	hb->npages = hb->size / PG;
	if (!hb->npages) {
		fprintf(stderr, "ufault-bench: %s: %" PRIu64 " bytes, not a whole page\n", hb->url,
			osize);
		return EXIT_ERR;
	}
	runs = calloc(NHCASES * repeat, sizeof(*runs));
	hb->tags = calloc(hb->npages, sizeof(*hb->tags));
	hb->page = malloc(PG);
	ret = !runs || !hb->tags || !hb->page ? -ENOMEM : hs_orders(hb);
	if (!ret)
		ret = hs_copy(hb, o->tmpfs_dir);
	if (!ret) {
		printf("ufault-bench --store: %s (%" PRIu64 " bytes, read-only): its first %zu MiB "
		       "(%zu pages) per case,\nmedian of %u, %ld CPUs, one load per page, 1 "
		       "warm-up round; file store %s\n", hb->url, osize, hb->size >> 20,
		       hb->npages, repeat, sysconf(_SC_NPROCESSORS_ONLN), hb->file);
		fflush(stdout);
		ret = hs_measure(hb, o->only, repeat, runs);
	}
	if (!ret) {
		for (i = 0; i < NHCASES; i++) {
			struct hs_sample *v = runs + i * repeat;

			if (!hs_selected(o->only, &hs_cases[i]))
				continue;
			qsort(v, repeat, sizeof(*v), cmp_sample);
			med[i] = v[repeat / 2];
			spr[i] = (v[repeat - 1].ns - v[0].ns) / med[i].ns;
		}
		hs_report(hb, o->only, med, spr, repeat);
	}
	free(runs);
	return ret ? EXIT_ERR : 0;
}

int bench_http_store_main(const struct bench_redis_opts *o)
{
	struct hs_bench hb = { .url = o->url };
	uint64_t osize;
	size_t i;
	int ret, status;

	if (o->only && (!strcmp(o->only, "layout") || !strcmp(o->only, "ws"))) {
		fprintf(stderr, "ufault-bench: --only %s writes its pages to the store, and an "
			"http(s):// store is read-only\n(use a redis:// --store for it)\n", o->only);
		return EXIT_ERR;
	}
	for (i = 0; i < NHCASES && !hs_selected(o->only, &hs_cases[i]); i++)
		;
	if (i == NHCASES) {
		fprintf(stderr, "ufault-bench: --store %s: no case is named %s (store, cold-seq, "
			"cold-rand)\n", o->url, o->only);
		return EXIT_ERR;
	}
	ret = uf_http_store_open(o->url, NULL, &hb.ops, &hb.store, &osize);
	if (ret) {
		fprintf(stderr, "ufault-bench: %s: %s\n", o->url, strerror(-ret));
		return EXIT_ERR;
	}
	ret = uf_mm_create(NULL, &hb.mm);
	if (ret) {
		fprintf(stderr, "ufault-bench: uf_mm_create: %s\n", strerror(-ret));
		hb.ops->release(hb.store);
		return ret == -EPERM || ret == -ENOSYS ? EXIT_SKIP : EXIT_ERR;
	}
	status = hs_bench(&hb, o, osize);
	if (hb.file[0])
		unlink(hb.file);
	uf_mm_destroy(hb.mm);
	hb.ops->release(hb.store);
	free(hb.tags);
	free(hb.page);
	free(hb.order[H_SEQ]);
	free(hb.order[H_RAND]);
	return status;
}
