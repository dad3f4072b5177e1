/* SPDX-License-Identifier: MIT */
/*
 * For the tests that count a replay's system calls (ws-replay-syscalls,
 * redis-ws-replay-syscalls): a recorded set whose runs lie in groups that
 * touch in the object (a replay copies a group at once), recorded by
 * touching it, and the bounds the counts must keep.  Not a test itself.
 */
#ifndef UT_WS_SYSCALLS_H
#define UT_WS_SYSCALLS_H

#include "syscall-count.h"
#include "ws-test.h"

#define WSC_SIZE	(64UL << 20)
#define WSC_NPAGES	(WSC_SIZE / UF_PAGE_SIZE)
#define WSC_GROUPS	32	/* three runs of 2 pages each, recorded middle, low, high */
#define WSC_SINGLES	160	/* single pages 40 apart */
#define WSC_LONG	8	/* runs of 8 */
#define WSC_RUNS	(3 * WSC_GROUPS + WSC_SINGLES + WSC_LONG)
#define WSC_EXTENTS	(WSC_GROUPS + WSC_SINGLES + WSC_LONG)	/* runs that touch, joined */
#define WSC_NSET	(6 * WSC_GROUPS + WSC_SINGLES + 8 * WSC_LONG)

/* The set's pages in recorded order into @pages (WSC_NSET of them):
 * groups, singles and long runs interleaved. */
static inline void wsc_pages(uint64_t *pages)
{
	size_t n = 0, i, k;

	for (i = 0; i < WSC_SINGLES; i++) {
		if (i < WSC_GROUPS) {
			uint64_t b = 100 + 300 * i;	/* pages 100 .. 9400 */
			static const int at[3] = { 2, 0, 4 };

			for (k = 0; k < 6; k++)
				pages[n++] = b + at[k / 2] + k % 2;
		}
		pages[n++] = 10000 + 40 * i;		/* .. 16360 */
		if (i < WSC_LONG)
			for (k = 0; k < 8; k++)
				pages[n++] = 9700 + 20 * i + k;
	}
	CHECK(n == WSC_NSET, "set of %zu pages", n);
}

static inline size_t wsc_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

/*
 * Record @obj (mapped at @map, shared) into @rec: one page touched, for
 * the header that names the object's version, then the set's runs written
 * in its place from the documented format (a record ufault made keeps
 * pages touched between two faults in page order, which would join a
 * group's runs).
 */
static inline void wsc_record(struct uf_object *obj, const unsigned char *map, const char *rec)
{
	static unsigned char buf[WS_HDR + WSC_RUNS * 20];
	uint64_t pages[WSC_NSET], prev_end = 0, start, len;
	size_t at = WS_HDR, i, j, nruns = 0;
	uint32_t h = 2166136261u;
	struct ws_file f;
	int fd, k;

	wsc_pages(pages);
	CHECK_RET(uf_object_record(obj, rec), 0);
	(void)*(const volatile unsigned char *)map;
	CHECK_RET(uf_object_record_stop(obj), 1);
	fd = open(rec, O_RDWR);
	CHECK(fd >= 0 && read(fd, buf, WS_HDR) == WS_HDR, "read %s", rec);
	for (i = 0; i < WSC_NSET; i = j) {
		int64_t d;

		for (j = i + 1; j < WSC_NSET && pages[j] == pages[j - 1] + 1; j++)
			;
		start = pages[i];
		len = j - i;
		d = (int64_t)(start - prev_end);
		at += wsc_varint(buf + at, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		at += wsc_varint(buf + at, len - 1);
		prev_end = start + len;
		nruns++;
	}
	for (i = WS_HDR; i < at; i++) {
		h ^= buf[i];
		h *= 16777619u;
	}
	for (k = 0; k < 8; k++)
		buf[32 + k] = (unsigned char)((uint64_t)WSC_NSET >> (8 * k));
	for (k = 0; k < 4; k++) {
		buf[40 + k] = (unsigned char)(nruns >> (8 * k));
		buf[44 + k] = (unsigned char)((at - WS_HDR) >> (8 * k));
		buf[48 + k] = (unsigned char)(h >> (8 * k));
	}
	CHECK(pwrite(fd, buf, at, 0) == (ssize_t)at && ftruncate(fd, (off_t)at) == 0,
	      "write %s", rec);
	close(fd);
	ws_read_file(rec, &f);
	CHECK(f.nruns == WSC_RUNS && f.npages == WSC_NSET, "record of %lu runs, want %d",
	      (unsigned long)f.nruns, WSC_RUNS);
	free(f.pages);
}

/* Wait (bounded: 120 s against a hang) until @mm's prefetch brought in
 * @n pages. */
static inline void wsc_wait(struct uf_mm *mm, uint64_t n)
{
	struct timespec ts = { 0, 1000000 };
	struct uf_stats st;
	int i;

	for (i = 0; i < 120000; i++) {
		CHECK_RET(uf_mm_stats(mm, &st), 0);
		if (st.readahead_pages >= n)
			return;
		nanosleep(&ts, NULL);
	}
	CHECK(0, "the prefetch brought %lu pages of %lu", (unsigned long)st.readahead_pages,
	      (unsigned long)n);
}

/*
 * What a replay of the set may cost: a copy per group of runs that touch
 * (WSC_EXTENTS) and per batch at most (a group a batch's end splits), one
 * populate per batch (a batch holds 32 pages at least, but the last) or,
 * where process_madvise(2) cannot populate, one per group.  Before
 * batching a replay made a read, a copy and a populate per run.
 */
static inline void wsc_check(const struct sc_counts *c, const char *what)
{
	unsigned long batches = WSC_NSET / 32 + 1;
	unsigned long populates = sc_populate_batched() ? batches : WSC_EXTENTS + batches;

	printf("%s: %lu copies, %lu reads, %lu sends, %lu populates, %lu calls in all; "
	       "%d runs, %d groups that touch\n", what, c->copies, c->reads, c->sends,
	       c->populates, c->total, WSC_RUNS, WSC_EXTENTS);
	CHECK(c->copies >= WSC_EXTENTS && c->copies <= WSC_EXTENTS + batches,
	      "%s: %lu UFFDIO_COPY for %d groups of runs", what, c->copies, WSC_EXTENTS);
	CHECK(c->populates >= 1 && c->populates <= populates,
	      "%s: %lu populates, want at most %lu", what, c->populates, populates);
}

#endif
