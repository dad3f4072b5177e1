/* Description: uf_object_punch_hole() zeroes exactly the punched bytes in
 * every mapping (shared read-write, shared read-only, private not copied),
 * in uf_object_pread() and in the store (the file read with plain pread):
 * page-aligned ranges, unaligned edges (partial pages zeroed only in the
 * punched bytes), a range inside one page, cached and never-cached pages,
 * dirty bytes inside and beside the hole (a later msync writes the ones
 * beside, never the punched ones), and a range past EOF, which is clamped
 * (size unchanged).  Every store; the kernel's mmap of a tmpfs and a disk
 * file with fallocate(PUNCH_HOLE) is the oracle. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define SIZE	(16 * PG + 100)
#define MAPLEN	(17 * PG)

struct ctx {
	struct tt t;
	unsigned char *a, *b, *c;	/* shared rw, shared ro, private ro */
	unsigned char want[MAPLEN];	/* what the object holds */
	unsigned char store[MAPLEN];	/* what a ufault file store holds */
	unsigned char buf[MAPLEN];
};

static void check(struct ctx *c, const char *step)
{
	const unsigned char *fwant = tt_is_kernel(&c->t) ? c->want : c->store;
	char what[160];
	size_t i;

	snprintf(what, sizeof(what), "%s: %s: shared rw", c->t.name, step);
	tt_expect_bytes(what, c->a, c->want, MAPLEN);
	snprintf(what, sizeof(what), "%s: %s: shared ro", c->t.name, step);
	tt_expect_bytes(what, c->b, c->want, MAPLEN);
	snprintf(what, sizeof(what), "%s: %s: private", c->t.name, step);
	tt_expect_bytes(what, c->c, c->want, MAPLEN);

	CHECK_RET(tt_pread(&c->t, c->buf, MAPLEN, 0), SIZE);
	for (i = 0; i < SIZE; i++)
		CHECK(c->buf[i] == c->want[i], "%s: %s: pread byte %zu = %#x, want %#x",
		      c->t.name, step, i, c->buf[i], c->want[i]);
	CHECK(tt_size(&c->t) == SIZE, "%s: %s: size %lu", c->t.name, step,
	      (unsigned long)tt_size(&c->t));
	if (!c->t.path[0])
		return;
	CHECK(tt_store_size(&c->t) == SIZE, "%s: %s: file size %ld", c->t.name, step,
	      (long)tt_store_size(&c->t));
	CHECK(tt_store_pread(&c->t, c->buf, MAPLEN, 0) == SIZE, "%s: file pread", c->t.name);
	for (i = 0; i < SIZE; i++)
		CHECK(c->buf[i] == fwant[i], "%s: %s: file byte %zu = %#x, want %#x",
		      c->t.name, step, i, c->buf[i], fwant[i]);
}

static void punch(struct ctx *c, uint64_t off, uint64_t len)
{
	char step[96];
	uint64_t end = off + len > SIZE ? SIZE : off + len;

	snprintf(step, sizeof(step), "punch [%#lx, +%#lx)", (unsigned long)off, (unsigned long)len);
	CHECK_RET(tt_punch(&c->t, off, len), 0);
	if (off < end) {
		memset(c->want + off, 0, end - off);
		memset(c->store + off, 0, end - off);
	}
	check(c, step);
}

static void dirty(struct ctx *c, uint64_t off, unsigned char v)
{
	c->a[off] = v;
	c->want[off] = v;
}

static void run(struct ctx *c, struct uf_mm *mm, enum tt_kind kind)
{
	volatile unsigned char sink;
	size_t i;

	tt_open(&c->t, mm, kind, SIZE);
	memset(c->want, 0, MAPLEN);
	for (i = 0; i < SIZE; i++)
		c->want[i] = ut_pattern(i);
	memcpy(c->store, c->want, MAPLEN);
	c->a = tt_map(&c->t, MAPLEN, PROT_READ | PROT_WRITE, true, 0);
	c->b = tt_map(&c->t, MAPLEN, PROT_READ, true, 0);
	c->c = tt_map(&c->t, MAPLEN, PROT_READ, false, 0);

	/* pages 0-8 and 14-16 cached and mapped everywhere; 9-13 never touched */
	for (i = 0; i < 17; i++) {
		if (i >= 9 && i < 14)
			continue;
		sink = c->a[i * PG];
		sink = c->b[i * PG];
		sink = c->c[i * PG];
	}
	(void)sink;
	dirty(c, 5 * PG + 50, 0x11);	/* beside the coming hole */
	dirty(c, 5 * PG + 200, 0x22);	/* inside it */
	dirty(c, 6 * PG + 9, 0x44);	/* inside it, whole page */

	punch(c, 2 * PG, 2 * PG);			/* aligned */
	punch(c, 5 * PG + 100, 2 * PG + 200);		/* unaligned both ends */
	punch(c, 8 * PG + 10, 10);			/* inside one cached page */
	punch(c, 10 * PG + 1, 1);			/* inside one uncached page */
	punch(c, 11 * PG + 4000, PG + 101 + PG);	/* uncached edges */
	punch(c, 0, 1);					/* first byte */

	/* the dirty bytes beside the holes reach the store; the punched ones never */
	CHECK_RET(tt_msync(&c->t, c->a, MAPLEN), 0);
	memcpy(c->store, c->want, MAPLEN);
	check(c, "msync");

	punch(c, 16 * PG + 60, 40);			/* up to EOF, last page */
	punch(c, 14 * PG + 5, PG);			/* edges in two cached pages */
	punch(c, 15 * PG + 50, 10 * PG);		/* crosses EOF: clamped */
	punch(c, 20 * PG, PG);				/* wholly past EOF */
	punch(c, SIZE, 1);				/* at EOF */

	/* a mapping made now agrees */
	{
		unsigned char *late = tt_map(&c->t, MAPLEN, PROT_READ, true, 0);
		char what[96];

		snprintf(what, sizeof(what), "%s: new mapping", c->t.name);
		tt_expect_bytes(what, late, c->want, MAPLEN);
		tt_unmap(&c->t, late, MAPLEN);
	}
	tt_unmap(&c->t, c->a, MAPLEN);
	tt_unmap(&c->t, c->b, MAPLEN);
	tt_unmap(&c->t, c->c, MAPLEN);
	tt_close(&c->t);
	printf("%s: ok\n", tt_names[kind]);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct ctx *c = calloc(1, sizeof(*c));
	int kind;

	CHECK(c, "out of memory");
	ut_catch_signals();
	for (kind = 0; kind < TT_NKINDS; kind++)
		run(c, mm, (enum tt_kind)kind);
	free(c);
	uf_mm_destroy(mm);
	return 0;
}
