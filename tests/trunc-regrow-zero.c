/* Description: the store is truncated with the object, so a later fill never
 * brings old bytes back: shrink then grow again reads zeros past the old
 * shrink point through old and new mappings, uf_object_pread() and the file
 * itself, for pages that were cached and pages that were not, for bytes
 * written through a mapping and msync'ed before the shrink, and for dirty
 * bytes never synced (a later sync must not write them).  Every store; the
 * kernel's mmap of a tmpfs and a disk file is the oracle. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define NPAGES	16
#define LEN	((size_t)NPAGES * PG)

struct ctx {
	struct tt t;
	unsigned char *map;
	unsigned char want[LEN];
	unsigned char buf[LEN];
};

static void check_all(struct ctx *c, const char *step)
{
	char what[128];
	unsigned char *late;
	ssize_t n;
	size_t i;

	snprintf(what, sizeof(what), "%s: %s: mapping", c->t.name, step);
	tt_expect_bytes(what, c->map, c->want, LEN);

	late = tt_map(&c->t, LEN, PROT_READ, true, 0);
	snprintf(what, sizeof(what), "%s: %s: new mapping", c->t.name, step);
	tt_expect_bytes(what, late, c->want, LEN);
	tt_unmap(&c->t, late, LEN);

	CHECK_RET(tt_pread(&c->t, c->buf, LEN, 0), LEN);
	for (i = 0; i < LEN; i++)
		CHECK(c->buf[i] == c->want[i], "%s: %s: pread byte %zu = %#x, want %#x",
		      c->t.name, step, i, c->buf[i], c->want[i]);

	if (!c->t.path[0])
		return;
	CHECK(tt_store_size(&c->t) == (int64_t)LEN, "%s: %s: file size %ld", c->t.name, step,
	      (long)tt_store_size(&c->t));
	n = tt_store_pread(&c->t, c->buf, LEN, 0);
	CHECK(n == (ssize_t)LEN, "%s: %s: file pread %ld", c->t.name, step, (long)n);
	for (i = 0; i < LEN; i++)
		CHECK(c->buf[i] == c->want[i], "%s: %s: file byte %zu = %#x, want %#x",
		      c->t.name, step, i, c->buf[i], c->want[i]);
}

static void shrink_grow(struct ctx *c, uint64_t to)
{
	CHECK_RET(tt_truncate(&c->t, to), 0);
	CHECK(tt_size(&c->t) == to, "%s: size after shrink", c->t.name);
	if (c->t.path[0])
		CHECK(tt_store_size(&c->t) == (int64_t)to, "%s: file size %ld after shrink to %lu",
		      c->t.name, (long)tt_store_size(&c->t), (unsigned long)to);
	CHECK_RET(tt_truncate(&c->t, LEN), 0);
	memset(c->want + to, 0, LEN - to);
}

static void run(struct ctx *c, struct uf_mm *mm, enum tt_kind kind)
{
	struct tt *t = &c->t;
	volatile unsigned char sink;
	size_t i;

	tt_open(t, mm, kind, LEN);
	for (i = 0; i < LEN; i++)
		c->want[i] = ut_pattern(i);
	c->map = tt_map(t, LEN, PROT_READ | PROT_WRITE, true, 0);

	/* pattern only: pages 0-5 cached, 6-15 never touched */
	for (i = 0; i < 6; i++)
		sink = c->map[i * PG];
	(void)sink;
	shrink_grow(c, 3 * PG + 100);
	check_all(c, "shrink to 3p+100 and grow");

	/* bytes written through the mapping and msync'ed */
	memset(c->map + 2 * PG, 0xAB, LEN - 2 * PG);
	memset(c->want + 2 * PG, 0xAB, LEN - 2 * PG);
	CHECK_RET(tt_msync(t, c->map, LEN), 0);
	check_all(c, "written and msync'ed");
	shrink_grow(c, 5 * PG + 7);
	check_all(c, "msync'ed, shrink to 5p+7 and grow");

	/* dirty bytes never synced: cut by the shrink, a sync must not revive them */
	memset(c->map + 4 * PG, 0xCD, LEN - 4 * PG);
	memset(c->want + 4 * PG, 0xCD, LEN - 4 * PG);
	shrink_grow(c, 9 * PG);
	CHECK_RET(tt_msync(t, c->map, LEN), 0);
	check_all(c, "dirty, shrink to 9p and grow, msync");

	/* to zero and back */
	shrink_grow(c, 0);
	CHECK_RET(tt_msync(t, c->map, LEN), 0);
	check_all(c, "shrink to 0 and grow");

	tt_unmap(t, c->map, LEN);
	tt_close(t);
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
