/* Description: a prefetch racing uf_object_truncate() and
 * uf_object_punch_hole() brings no cut page back: after it, a recorded
 * page past the new end gets SIGBUS and is not cached, recorded pages in
 * the punched range read zero (mapping, uf_object_pread() and the file),
 * and the rest of the set reads the file's bytes.  Three rounds on the
 * disk file store, the set recorded high pages first so the prefetch is
 * past the new end when the truncate comes.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(64UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NEW_END	(NPAGES / 2)			/* pages */
#define P_FIRST	(NPAGES / 4)
#define P_LEN	(NPAGES / 8)

struct ctx {
	char path[256], rec[300], scratch[300];
	unsigned char *buf, *zero;
};

/* runs of 16 every 64 pages, from the top down: 4096 pages */
static uint64_t set_page(size_t i)
{
	uint64_t run = i / 16;

	return NPAGES - 64 * (run + 1) + i % 16;
}
#define NSET	(NPAGES / 64 * 16)

static void record(struct ctx *c)
{
	static uint64_t pages[NSET];
	size_t i;

	for (i = 0; i < NSET; i++)
		pages[i] = set_page(i);
	CHECK_RET(ws_record_pages(c->path, SIZE, c->rec, pages, NSET), NSET);
}

static void round_(struct ctx *c, int r)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	unsigned char *map, v;
	struct ut_fault f;
	uint64_t below = 0, cached;
	size_t i;
	int fd;

	CHECK_RET(uf_object_open(mm, c->path, O_RDWR, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, c->rec), 0);
	CHECK_RET(uf_object_truncate(obj, NEW_END * PG), 0);
	CHECK_RET(uf_object_punch_hole(obj, P_FIRST * PG, P_LEN * PG), 0);
	ws_wait_prefetch(obj, c->scratch);

	for (i = 0; i < NSET; i++)
		if (set_page(i) < NEW_END)
			below++;
	cached = ws_cache_pages(mm);
	printf("round %d: %lu pages cached, %lu of the set below the new end\n", r,
	       (unsigned long)cached, (unsigned long)below);
	CHECK(cached <= below, "round %d: %lu pages cached, only %lu of the set inside EOF", r,
	      (unsigned long)cached, (unsigned long)below);

	fd = open(c->path, O_RDONLY);
	CHECK(fd >= 0, "open");
	for (i = 0; i < NSET; i++) {
		uint64_t pg = set_page(i);

		if (pg >= NEW_END) {
			CHECK(ut_read(map + pg * PG, &v, &f) == SIGBUS, "round %d: page %lu past the end "
			      "reads (signal %d)", r, (unsigned long)pg, f.sig);
			continue;
		}
		CHECK(ut_copy_from(c->buf, map + pg * PG, PG, &f) == 0, "round %d: page %lu: signal %d",
		      r, (unsigned long)pg, f.sig);
		if (pg >= P_FIRST && pg < P_FIRST + P_LEN) {
			CHECK(memcmp(c->buf, c->zero, PG) == 0, "round %d: punched page %lu not zero",
			      r, (unsigned long)pg);
			CHECK_RET(uf_object_pread(obj, c->buf, PG, pg * PG), PG);
			CHECK(memcmp(c->buf, c->zero, PG) == 0, "round %d: pread of punched page %lu",
			      r, (unsigned long)pg);
			CHECK(pread(fd, c->buf, PG, (off_t)(pg * PG)) == PG &&
			      memcmp(c->buf, c->zero, PG) == 0, "round %d: file page %lu not zero", r,
			      (unsigned long)pg);
		} else {
			CHECK(c->buf[5] == ut_pattern(pg * PG + 5) &&
			      c->buf[PG - 1] == ut_pattern(pg * PG + PG - 1), "round %d: page %lu damaged",
			      r, (unsigned long)pg);
		}
	}
	close(fd);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ctx c = { 0 };
	int r, fd;

	ut_catch_signals();
	c.buf = malloc(PG);
	c.zero = calloc(1, PG);
	for (r = 0; r < 3; r++) {
		fd = ut_make_file("/var/tmp", SIZE, c.path, sizeof(c.path));
		close(fd);
		snprintf(c.rec, sizeof(c.rec), "%s.ws", c.path);
		snprintf(c.scratch, sizeof(c.scratch), "%s.scratch", c.path);
		record(&c);
		round_(&c, r);
		unlink(c.rec);
		unlink(c.path);
	}
	free(c.buf);
	free(c.zero);
	return 0;
}
