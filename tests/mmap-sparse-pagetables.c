/* Description: a writable shared mapping of a sparse object costs page
 * tables for what is cached, not for its length: mapping 16 GiB with
 * nothing cached adds at most 1 MiB of page tables (VmPTE), with and
 * without a cache budget; a 1 TiB mapping written in a few pages, synced,
 * truncated to one page and unmapped stays within 1 MiB at every step, the
 * written pages reach the store and an access past the new end gets
 * SIGBUS. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PG		UF_PAGE_SIZE
#define GIB		(1ULL << 30)
#ifndef MAX_GROWTH_KB
#define MAX_GROWTH_KB	1024
#endif
#define NWRITES		6

/* A sparse store: reads give zeros, writes are logged (offset and the
 * first byte of each page). */
struct sparse_store {
	pthread_mutex_t lock;
	struct {
		uint64_t off;
		unsigned char first;
	} log[4096];
	size_t nlog;
	uint64_t size;
};

static ssize_t ss_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store;
	(void)off;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static int ss_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct sparse_store *s = store;
	size_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < len; i += PG)
		if (s->nlog < sizeof(s->log) / sizeof(s->log[0]))
			s->log[s->nlog++] = (typeof(s->log[0])){ off + i,
								 ((const unsigned char *)buf)[i] };
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int ss_truncate(void *store, uint64_t size)
{
	struct sparse_store *s = store;

	pthread_mutex_lock(&s->lock);
	s->size = size;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static const struct uf_store_ops ss_ops = {
	.read = ss_read, .write = ss_write, .truncate = ss_truncate,
};

/* VmPTE of this process, in kB. */
static long vm_pte_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	CHECK(f, "open /proc/self/status");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPTE: %ld kB", &kb) == 1)
			break;
	fclose(f);
	CHECK(kb >= 0, "no VmPTE line");
	return kb;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct ctx {
	const char *mode;
	long base_kb;		/* VmPTE before the mapping */
};

static void check_growth(struct ctx *c, const char *step, double t)
{
	long kb = vm_pte_kb();

	printf("%s: %-22s VmPTE +%ld kB  %.3f ms\n", c->mode, step, kb - c->base_kb, t * 1e3);
	CHECK(kb - c->base_kb <= MAX_GROWTH_KB, "%s: %s added %ld kB of page tables", c->mode,
	      step, kb - c->base_kb);
}

/* 16 GiB, nothing cached: map and unmap. */
static void map_16g(struct uf_mm *mm, struct ctx *c)
{
	struct sparse_store s = { .lock = PTHREAD_MUTEX_INITIALIZER, .size = 16 * GIB };
	struct uf_object *obj;
	double t;
	void *p;

	CHECK_RET(uf_object_create(mm, &ss_ops, &s, s.size, &obj), 0);
	c->base_kb = vm_pte_kb();
	t = now_s();
	CHECK_RET(uf_mmap(mm, s.size, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, &p), 0);
	check_growth(c, "16 GiB uf_mmap", now_s() - t);
	CHECK_RET(uf_munmap(mm, p, s.size), 0);
	uf_object_put(obj);
}

/* 1 TiB (less where a sanitizer runtime keeps the address space): map,
 * write a few pages, sync, truncate to one page, unmap. */
static void map_1t(struct uf_mm *mm, struct ctx *c)
{
	struct sparse_store *s = calloc(1, sizeof(*s));
	uint64_t size = 1024 * GIB, at[NWRITES];
	struct uf_object *obj;
	struct ut_fault f;
	unsigned char v;
	unsigned char *p;
	size_t i, j;
	double t;
	int ret;

	CHECK(s, "out of memory");
	pthread_mutex_init(&s->lock, NULL);
	for (;;) {
		s->size = size;
		ret = uf_object_create(mm, &ss_ops, s, size, &obj);
		if (!ret) {
			c->base_kb = vm_pte_kb();
			t = now_s();
			ret = uf_mmap(mm, size, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
				      (void **)&p);
			if (ret)
				uf_object_put(obj);
		}
		if (ret != -ENOMEM || size <= 16 * GIB)
			break;
		size /= 4;
	}
	CHECK(ret == 0, "%s: object and mapping of %llu GiB: %s", c->mode,
	      (unsigned long long)(size / GIB), strerror(-ret));
	if (size != 1024 * GIB)
		printf("%s: %llu GiB (no address space for 1 TiB)\n", c->mode,
		       (unsigned long long)(size / GIB));
	check_growth(c, "1 TiB uf_mmap", now_s() - t);
	at[0] = 0;
	at[1] = 7 * PG;
	at[2] = (size / 341 & ~(PG - 1)) + 5 * PG;
	at[3] = size / 5 & ~(PG - 1);
	at[4] = (size / 10 * 7 & ~(PG - 1)) + 17 * PG;
	at[5] = size - PG;

	for (i = 0; i < NWRITES; i++)
		CHECK_RET(ut_write(p + at[i], (unsigned char)(0x40 + i), &f), 0);
	check_growth(c, "1 TiB writes", 0);
	t = now_s();
	CHECK_RET(uf_msync(mm, p, s->size, UF_MS_SYNC), 0);
	check_growth(c, "1 TiB uf_msync", now_s() - t);
	for (i = 0; i < NWRITES; i++) {
		uint64_t off = at[i];
		bool found = false;

		for (j = 0; j < s->nlog; j++)
			if (s->log[j].off == off && s->log[j].first == 0x40 + i)
				found = true;
		CHECK(found, "%s: the write at %#llx did not reach the store", c->mode,
		      (unsigned long long)off);
	}
	CHECK(s->nlog == NWRITES, "%s: %zu pages written for %d written", c->mode, s->nlog,
	      NWRITES);

	t = now_s();
	CHECK_RET(uf_object_truncate(obj, PG), 0);
	check_growth(c, "1 TiB truncate to 1 pg", now_s() - t);
	CHECK_RET(ut_read(p, &v, &f), 0);
	CHECK(v == 0x40, "%s: page 0 holds %#x after the truncate", c->mode, v);
	CHECK_RET(ut_read(p + PG, &v, &f), SIGBUS);
	CHECK_RET(ut_read(p + at[4], &v, &f), SIGBUS);
	CHECK(s->size == PG, "%s: the store was not truncated", c->mode);

	t = now_s();
	CHECK_RET(uf_munmap(mm, p, size), 0);
	check_growth(c, "1 TiB uf_munmap", now_s() - t);
	uf_object_put(obj);
	free(s);
}

int main(void)
{
	static const struct {
		const char *name;
		struct uf_mm_config cfg;
	} modes[] = {
		{ "no budget", { .flags = 0 } },
		{ "no wp-async", { .flags = UF_MM_NO_WP_ASYNC } },
		{ "budget", { .cache_budget = 64 << 20 } },
	};
	size_t m;

	ut_catch_signals();
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct ctx c = { .mode = modes[m].name };
		struct uf_mm *mm = ut_mm_create(&modes[m].cfg);

		map_16g(mm, &c);
		map_1t(mm, &c);
		uf_mm_destroy(mm);
	}
	return UT_PASS;
}
