/* Description: records ufault did not write, whose header and checksum
 * hold (made here from the documented format), cost no more than the
 * object: a record that holds a page twice (overlapping runs, or one run
 * repeated) is -EINVAL for uf_object_prefetch() and
 * uf_object_serve_prefetch(), and caches nothing; runs past the size the
 * record names (2^40 pages from page 2^40) are left out, so the prefetch
 * ends, having cached just the set's pages inside the object.  Then 300
 * records of random runs (near the object or far past it, long or short,
 * overlapping or not), each on a fresh object: -EINVAL exactly when two
 * runs overlap, else the prefetch ends with just the runs' pages inside
 * the object cached.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(1UL << 20)
#define PG	UF_PAGE_SIZE

struct run {
	uint64_t start, len;
};

static void put_le(unsigned char *p, uint64_t v, int n)
{
	while (n--) {
		*p++ = (unsigned char)v;
		v >>= 8;
	}
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

/* Write at @path a record with @hdr's header (the object's version) and
 * runs @r[0..@n), its counts and checksum made to match. */
static void craft(const char *path, const unsigned char *hdr, const struct run *r, size_t n)
{
	unsigned char buf[WS_HDR + 64 * 20];	/* a varint: 10 bytes at most */
	uint64_t prev_end = 0, npages = 0;
	size_t len = WS_HDR, i;
	uint32_t h = 2166136261u;
	int fd;

	CHECK(n <= 64, "too many runs");
	memcpy(buf, hdr, WS_HDR);
	for (i = 0; i < n; i++) {
		int64_t d = (int64_t)(r[i].start - prev_end);

		len += put_varint(buf + len, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		len += put_varint(buf + len, r[i].len - 1);
		prev_end = r[i].start + r[i].len;
		npages += r[i].len;
	}
	for (i = WS_HDR; i < len; i++) {
		h ^= buf[i];
		h *= 16777619u;
	}
	put_le(buf + 32, npages, 8);
	put_le(buf + 40, n, 4);
	put_le(buf + 44, len - WS_HDR, 4);
	put_le(buf + 48, h, 4);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len, "write %s", path);
	close(fd);
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int cmp_start(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Random records of @hdr's object (@path, SIZE bytes), each prefetched
 * into a fresh object. */
static void random_records(struct uf_mm *mm, const char *path, const char *rec,
			   const char *scratch, const unsigned char *hdr)
{
	uint64_t seed = 0x77637261667465ULL;
	int round, overlaps = 0;

	for (round = 0; round < 300; round++) {
		struct run r[8], sorted[8];
		size_t n = 1 + rnd(&seed) % 8, i;
		uint64_t pg, inside = 0;
		bool overlap = false;
		struct uf_object *obj;
		int ret;

		for (i = 0; i < n; i++) {
			bool far = rnd(&seed) % 4 == 0, longer = rnd(&seed) % 8 == 0;

			r[i].start = far ? rnd(&seed) % (1ULL << 41) : rnd(&seed) % 400;
			r[i].len = 1 + (longer ? rnd(&seed) % (1ULL << 35) : rnd(&seed) % 8);
		}
		memcpy(sorted, r, n * sizeof(*r));
		qsort(sorted, n, sizeof(*sorted), cmp_start);
		for (i = 1; i < n; i++)
			overlap |= sorted[i].start - sorted[i - 1].start < sorted[i - 1].len;
		for (pg = 0; pg < SIZE / PG; pg++)
			for (i = 0; i < n; i++)
				if (pg - r[i].start < r[i].len) {
					inside++;
					break;
				}
		craft(rec, hdr, r, n);
		CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
		ret = uf_object_prefetch(obj, rec);
		CHECK(ret == (overlap ? -EINVAL : 0), "round %d (%zu runs): %d, overlap %d", round,
		      n, ret, overlap);
		if (!ret)
			ws_wait_prefetch(obj, scratch);
		CHECK(ws_cache_pages(mm) == (overlap ? 0 : inside), "round %d: %lu pages cached, "
		      "want %lu", round, (unsigned long)ws_cache_pages(mm),
		      (unsigned long)(overlap ? 0 : inside));
		uf_object_put(obj);
		overlaps += overlap;
	}
	printf("300 random records, %d with overlapping runs\n", overlaps);
}

int main(void)
{
	static const struct run twice[] = { { 3, 2 }, { 4, 3 } };
	static const struct run again[] = { { 9, 1 }, { 20, 4 }, { 9, 1 } };
	static const struct run past[] = { { 7, 1 }, { 1ULL << 40, 1ULL << 40 }, { 250, 10 } };
	struct uf_mm *mm = ut_mm_create(NULL);
	char path[256], rec[300], scratch[300];
	unsigned char hdr[WS_HDR], page[PG];
	struct uf_object *obj;
	unsigned char *map;
	volatile unsigned char sink;
	uint64_t pg;
	int fd;

	fd = ut_make_file("/var/tmp", SIZE, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	snprintf(scratch, sizeof(scratch), "%s.scratch", path);

	/* a real record, for its header */
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	sink = map[5 * PG];
	(void)sink;
	CHECK_RET(uf_object_record_stop(obj), 1);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	fd = open(rec, O_RDONLY);
	CHECK(fd >= 0 && read(fd, hdr, WS_HDR) == WS_HDR, "read %s", rec);
	close(fd);

	/* a page twice: -EINVAL, nothing cached, for both kinds of prefetch */
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	craft(rec, hdr, twice, 2);
	CHECK_RET(uf_object_prefetch(obj, rec), -EINVAL);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), -EINVAL);
	craft(rec, hdr, again, 3);
	CHECK_RET(uf_object_prefetch(obj, rec), -EINVAL);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), -EINVAL);
	CHECK(ws_cache_pages(mm) == 0, "%lu pages cached", (unsigned long)ws_cache_pages(mm));

	/* runs past the recorded size: what lies inside is prefetched, and
	 * the prefetch ends (ws_wait_prefetch() gives it 120 s) */
	craft(rec, hdr, past, 3);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), 0);
	CHECK_RET(uf_object_serve_prefetch(obj, NULL), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	CHECK(ws_cache_pages(mm) == 7, "%lu pages cached, want 7 (page 7, pages 250-255)",
	      (unsigned long)ws_cache_pages(mm));
	for (pg = 250; pg < 256; pg++) {
		CHECK_RET(uf_object_pread(obj, page, PG, pg * PG), PG);
		CHECK(page[9] == ut_pattern(pg * PG + 9), "page %lu", (unsigned long)pg);
	}
	uf_object_put(obj);
	random_records(mm, path, rec, scratch, hdr);
	uf_mm_destroy(mm);
	unlink(rec);
	unlink(path);
	return 0;
}
