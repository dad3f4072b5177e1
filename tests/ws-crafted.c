/* Description: records ufault did not write, whose header and checksum
 * hold (made here from the documented format), cost no more than the
 * object: a record that holds a page twice (overlapping runs, or one run
 * repeated) is -EINVAL for uf_object_prefetch() and
 * uf_object_serve_prefetch(), and caches nothing; runs past the size the
 * record names (2^40 pages from page 2^40) are left out, so the prefetch
 * ends, having cached just the set's pages inside the object.
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
	unsigned char buf[WS_HDR + 64 * 20];
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
	uf_mm_destroy(mm);
	unlink(rec);
	unlink(path);
	return 0;
}
