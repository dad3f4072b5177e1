/* SPDX-License-Identifier: MIT */
/*
 * Working-set tests: a reader of the record file written from its
 * documented format (uf_object_record(3)), independent of the library's
 * decoder, and a wait for a prefetch to end.
 */
#ifndef UT_WS_TEST_H
#define UT_WS_TEST_H

#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#define WS_HDR	56

struct ws_file {
	unsigned int version, kind;
	uint64_t size, npages, nruns, body;
	uint64_t *pages;		/* in recorded order */
	size_t len;			/* bytes of the file */
};

static inline uint64_t ws_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static inline uint64_t ws_varint(const unsigned char **p, const unsigned char *end)
{
	uint64_t v = 0;
	int shift = 0;

	for (;;) {
		CHECK(*p < end, "run data ends inside a varint");
		v |= (uint64_t)(**p & 0x7f) << shift;
		shift += 7;
		if (!(*(*p)++ & 0x80))
			return v;
	}
}

/* Read the record at @path into @f (the pages expanded). */
static inline void ws_read_file(const char *path, struct ws_file *f)
{
	unsigned char *buf;
	const unsigned char *p, *end;
	uint64_t prev_end = 0, i, k, n = 0;
	struct stat st;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s: %s", path, strerror(errno));
	buf = malloc((size_t)st.st_size + 1);
	CHECK(buf && read(fd, buf, (size_t)st.st_size) == st.st_size, "read %s", path);
	close(fd);
	f->len = (size_t)st.st_size;
	CHECK(f->len >= WS_HDR && memcmp(buf, "UFWS", 4) == 0, "%s: no magic", path);
	f->version = (unsigned int)ws_le(buf + 4, 2);
	f->kind = (unsigned int)ws_le(buf + 6, 2);
	f->size = ws_le(buf + 8, 8);
	f->npages = ws_le(buf + 32, 8);
	f->nruns = ws_le(buf + 40, 4);
	f->body = ws_le(buf + 44, 4);
	CHECK(f->body == f->len - WS_HDR, "body %lu bytes, file %zu", (unsigned long)f->body, f->len);
	f->pages = malloc((f->npages + 1) * sizeof(*f->pages));
	p = buf + WS_HDR;
	end = buf + f->len;
	for (i = 0; i < f->nruns; i++) {
		uint64_t z = ws_varint(&p, end), len = ws_varint(&p, end) + 1;
		uint64_t start = prev_end + (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));

		for (k = 0; k < len; k++) {
			CHECK(n < f->npages, "more pages in the runs than the header's %lu",
			      (unsigned long)f->npages);
			f->pages[n++] = start + k;
		}
		prev_end = start + len;
	}
	CHECK(p == end && n == f->npages, "runs hold %lu pages, header %lu", (unsigned long)n,
	      (unsigned long)f->npages);
	free(buf);
}

/*
 * Wait until no prefetch of @obj runs: uf_object_record() refuses with
 * -EBUSY while one does (a bound, not a timing: 120 s against a hang).
 */
static inline void ws_wait_prefetch(struct uf_object *obj, const char *scratch)
{
	struct timespec ts = { 0, 1000000 };
	int ret, i;

	for (i = 0; i < 120000; i++) {
		ret = uf_object_record(obj, scratch);
		if (ret != -EBUSY)
			break;
		nanosleep(&ts, NULL);
	}
	CHECK_RET(ret, 0);
	CHECK(uf_object_record_stop(obj) >= 0, "record_stop");
	unlink(scratch);
}

/* How many of pages @pages[0..@n) of the mapping at @map are in this
 * process's page tables (/proc/self/pagemap's present bit). */
static inline size_t ws_pages_mapped(const void *map, const uint64_t *pages, size_t n)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	size_t mapped = 0, i;

	CHECK(pm >= 0, "open /proc/self/pagemap");
	for (i = 0; i < n; i++) {
		uint64_t e = 0;
		off_t at = (off_t)(((uintptr_t)map / UF_PAGE_SIZE + pages[i]) * sizeof(e));

		CHECK(pread(pm, &e, sizeof(e), at) == sizeof(e), "pagemap");
		mapped += e >> 63;
	}
	close(pm);
	return mapped;
}

/* What this machine charges a program for its first touch of a page mapped
 * ahead, in ns, measured as the prefetch measures it (uf_object_prefetch(3)):
 * 16 pages of anonymous memory, one in 16, each MADV_POPULATE_WRITE'd, then
 * each read timed alone; the median.  0 where it cannot be measured. */
static inline uint64_t ws_touch_ns(void)
{
	size_t len = 16 * 16 * UF_PAGE_SIZE, i, j;
	uint64_t t[16], x;
	volatile const char *p;
	struct timespec a, b;
	char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (map == MAP_FAILED)
		return 0;
	madvise(map, len, MADV_NOHUGEPAGE);
	for (i = 0; i < 16; i++)
		if (madvise(map + i * 16 * UF_PAGE_SIZE, UF_PAGE_SIZE, 23 /* POPULATE_WRITE */)) {
			munmap(map, len);
			return 0;
		}
	p = map;
	for (i = 0; i < 16; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		(void)p[i * 16 * UF_PAGE_SIZE];
		clock_gettime(CLOCK_MONOTONIC, &b);
		x = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ULL + (uint64_t)b.tv_nsec -
		    (uint64_t)a.tv_nsec;
		for (j = i; j > 0 && t[j - 1] > x; j--)
			t[j] = t[j - 1];
		t[j] = x;
	}
	munmap(map, len);
	return t[8];
}

static inline uint64_t ws_cache_pages(struct uf_mm *mm)
{
	struct uf_stats st;

	CHECK_RET(uf_mm_stats(mm, &st), 0);
	return st.cache_pages;
}

/*
 * Record into @rec, in a throwaway mm, the working set of the file @src
 * (@size bytes, made by ut_make_file) that touching @pages[0..@n) in that
 * order gives, each page's first byte checked against the pattern.
 * Returns what uf_object_record_stop() returned.
 */
static inline int ws_record_pages(const char *src, uint64_t size, const char *rec,
				  const uint64_t *pages, size_t n)
{
	struct uf_object *obj;
	struct uf_mm *mm;
	unsigned char *m;
	size_t i;
	int ret;

	CHECK_RET(uf_mm_create(NULL, &mm), 0);
	CHECK_RET(uf_object_open(mm, src, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, size, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (i = 0; i < n; i++)
		CHECK(m[pages[i] * UF_PAGE_SIZE] == ut_pattern(pages[i] * UF_PAGE_SIZE),
		      "recording: page %lu", (unsigned long)pages[i]);
	ret = uf_object_record_stop(obj);
	CHECK_RET(uf_munmap(mm, m, size), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return ret;
}

#endif
