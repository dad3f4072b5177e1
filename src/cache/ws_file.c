// SPDX-License-Identifier: MIT
/*
 * The working set's record file: encode, decode, read and write it.  No
 * locks.
 *
 * The file (version 1; every integer little-endian):
 *
 *	off  size
 *	  0     4  magic "UFWS"
 *	  4     2  format version, 1
 *	  6     2  what names the object's version: 0 its size alone, 1 a
 *		   file's size and modification time (file and memory stores)
 *	  8     8  the object's size in bytes when the record started
 *	 16     8  mtime, seconds (kind 1; else 0)
 *	 24     4  mtime, nanoseconds (kind 1; else 0)
 *	 28     4  reserved, 0
 *	 32     8  pages recorded
 *	 40     4  runs
 *	 44     4  bytes of run data after the header
 *	 48     4  FNV-1a hash of the run data
 *	 52     4  reserved, 0
 *	 56        run data: per run of consecutive pages, in recorded order,
 *		   two LEB128 varints: the zigzag-encoded distance from the end
 *		   of the previous run (page 0 for the first) to its first
 *		   page, and its length minus one.
 *
 * A run far from the previous one in a 256 MiB object takes 4 bytes: 4096
 * pages in runs of 16 and singles take 8-17 KiB.  A record holds each page
 * once (ws_decode() refuses runs that overlap); pages past the size it
 * names are dropped as it is read, so a replay, even of a file made by
 * hand, costs no more than the object.
 */
#define _GNU_SOURCE
#include "cache/ws.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#define WS_MAGIC	"UFWS"
#define WS_VERSION	1
#define WS_HDR_SIZE	56
#define WS_MAX_BODY	(256U << 20)	/* a larger file is not a record */

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t fnv1a(const unsigned char *p, size_t len)
{
	uint32_t h = 2166136261u;

	while (len--) {
		h ^= *p++;
		h *= 16777619u;
	}
	return h;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

/* The record as a file's bytes; *lenp its length.  NULL: no memory. */
unsigned char *ws_encode(const struct ws_version *ver, const struct uf_ws_run *runs,
			 size_t nruns, uint64_t npages, size_t *lenp)
{
	unsigned char *buf = malloc(WS_HDR_SIZE + nruns * 20), *p;
	uint64_t prev_end = 0;
	size_t i;

	if (!buf)
		return NULL;
	p = buf + WS_HDR_SIZE;
	for (i = 0; i < nruns; i++) {
		int64_t d = (int64_t)(runs[i].start - prev_end);

		p += put_varint(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		p += put_varint(p, runs[i].len - 1);
		prev_end = runs[i].start + runs[i].len;
	}
	memset(buf, 0, WS_HDR_SIZE);
	memcpy(buf, WS_MAGIC, 4);
	put_le(buf + 4, WS_VERSION, 2);
	put_le(buf + 6, ver->kind, 2);
	put_le(buf + 8, ver->size, 8);
	put_le(buf + 16, (uint64_t)ver->mtime_sec, 8);
	put_le(buf + 24, ver->mtime_nsec, 4);
	put_le(buf + 32, npages, 8);
	put_le(buf + 40, nruns, 4);
	put_le(buf + 44, (uint64_t)(p - buf - WS_HDR_SIZE), 4);
	put_le(buf + 48, fnv1a(buf + WS_HDR_SIZE, (size_t)(p - buf - WS_HDR_SIZE)), 4);
	*lenp = (size_t)(p - buf);
	return buf;
}

int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int get_varint(const unsigned char **pp, const unsigned char *end, uint64_t *v)
{
	const unsigned char *p = *pp;
	unsigned int shift = 0;

	*v = 0;
	for (;;) {
		if (p == end || shift > 63)
			return -EINVAL;
		if (shift == 63 && (*p & 0x7e))
			return -EINVAL;		/* past 64 bits */
		*v |= (uint64_t)(*p & 0x7f) << shift;
		shift += 7;
		if (!(*p++ & 0x80))
			break;
	}
	*pp = p;
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct uf_ws_run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Leave out of @runs (*@n of them) the pages from @lim on. */
static void runs_trim(struct uf_ws_run *runs, size_t *n, uint64_t lim)
{
	size_t i, kept = 0;

	for (i = 0; i < *n; i++) {
		if (runs[i].start >= lim)
			continue;
		runs[kept] = runs[i];
		if (runs[kept].len > lim - runs[kept].start)
			runs[kept].len = lim - runs[kept].start;
		kept++;
	}
	*n = kept;
}

/*
 * Decode a record file's bytes: its version, its runs in recorded order,
 * and the same by first page in *@sortedp (both malloc'd).  A record holds
 * each page once (ufault never writes one that does not): runs that
 * overlap make it -EINVAL.  Pages past the size the record names (the
 * object grew while it ran; or a file made by hand) are past EOF
 * whenever the record applies: they are left out.  So a replay reads
 * each page of the object once at most.
 */
static int ws_decode(const unsigned char *buf, size_t len, struct ws_version *ver,
		     struct uf_ws_run **runsp, size_t *nrunsp, struct uf_ws_run **sortedp)
{
	const unsigned char *p, *end;
	uint64_t npages, nruns, body, sum = 0, prev_end = 0, i;
	struct uf_ws_run *runs, *sorted = NULL;
	size_t nsorted;

	if (len < WS_HDR_SIZE || memcmp(buf, WS_MAGIC, 4) || get_le(buf + 4, 2) != WS_VERSION)
		return -EINVAL;
	ver->kind = (uint16_t)get_le(buf + 6, 2);
	ver->size = get_le(buf + 8, 8);
	ver->mtime_sec = (int64_t)get_le(buf + 16, 8);
	ver->mtime_nsec = (uint32_t)get_le(buf + 24, 4);
	npages = get_le(buf + 32, 8);
	nruns = get_le(buf + 40, 4);
	body = get_le(buf + 44, 4);
	if (ver->kind > WS_KIND_FILE || get_le(buf + 28, 4) || get_le(buf + 52, 4) ||
	    body != len - WS_HDR_SIZE || nruns > body / 2 || nruns > npages ||
	    fnv1a(buf + WS_HDR_SIZE, body) != get_le(buf + 48, 4))
		return -EINVAL;
	runs = malloc((nruns ? nruns : 1) * sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	p = buf + WS_HDR_SIZE;
	end = buf + len;
	for (i = 0; i < nruns; i++) {
		uint64_t z, l;
		int64_t d;

		if (get_varint(&p, end, &z) || get_varint(&p, end, &l) || l >= UF_MAX_SIZE >> PAGE_SHIFT)
			goto bad;
		d = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
		runs[i].start = prev_end + (uint64_t)d;
		runs[i].len = l + 1;
		if (runs[i].start >= UF_MAX_SIZE >> PAGE_SHIFT ||
		    runs[i].len > (UF_MAX_SIZE >> PAGE_SHIFT) - runs[i].start)
			goto bad;
		prev_end = runs[i].start + runs[i].len;
		sum += runs[i].len;
	}
	if (p != end || sum != npages)
		goto bad;
	sorted = malloc((nruns ? nruns : 1) * sizeof(*sorted));
	if (!sorted) {
		free(runs);
		return -ENOMEM;
	}
	memcpy(sorted, runs, nruns * sizeof(*sorted));
	qsort(sorted, nruns, sizeof(*sorted), cmp_run);
	for (i = 1; i < nruns; i++)
		if (sorted[i].start - sorted[i - 1].start < sorted[i - 1].len)
			goto bad;
	*nrunsp = nsorted = nruns;
	runs_trim(runs, nrunsp, size_pages(ver->size));
	runs_trim(sorted, &nsorted, size_pages(ver->size));
	*runsp = runs;
	*sortedp = sorted;
	return 0;
bad:
	free(sorted);
	free(runs);
	return -EINVAL;
}

/* Read and decode the record at @path (ws_decode()). */
int ws_read(const char *path, struct ws_version *ver, struct uf_ws_run **runsp,
	    size_t *nrunsp, struct uf_ws_run **sortedp)
{
	unsigned char *buf;
	struct stat st;
	size_t done = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < WS_HDR_SIZE ||
	    (uint64_t)st.st_size > WS_HDR_SIZE + (uint64_t)WS_MAX_BODY) {
		ret = -EINVAL;		/* (a directory, too) */
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	ret = ws_decode(buf, done, ver, runsp, nrunsp, sortedp);
	free(buf);
out:
	close(fd);
	return ret;
}

/* The run of @sorted (@n runs by first page) holding page @pg, or NULL.
 * Locking: none (sorted runs do not change). */
const struct uf_ws_run *runs_find(const struct uf_ws_run *sorted, size_t n, uint64_t pg)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sorted[mid].start > pg)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* (a record holds each page once: runs never overlap) */
	return lo && pg - sorted[lo - 1].start < sorted[lo - 1].len ? &sorted[lo - 1] : NULL;
}

bool same_version(const struct ws_version *a, const struct ws_version *b)
{
	return a->kind == b->kind && a->size == b->size && a->mtime_sec == b->mtime_sec &&
	       a->mtime_nsec == b->mtime_nsec;
}
