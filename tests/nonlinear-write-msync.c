/* Description: writes through a nonlinear window land in the object page the
 * window shows: they are seen at that object offset by another (linear)
 * mapping and by pread, and not at the linear offset of the address; a
 * pwrite to that page is seen in the window; uf_msync() of the window, or of
 * the whole mapping, writes them to the right place in the store (the file
 * read with plain pread), including writes made before the window was
 * remapped elsewhere.  Every store; the kernel's remap_file_pages() on its
 * mmap of a tmpfs and a disk file is the oracle. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define OBJ_PAGES	16
#define LEN		((size_t)OBJ_PAGES * PG)
#define A_PAGES		8

struct ctx {
	struct tt t;
	unsigned char *a;		/* shared rw, 8 pages, with windows */
	unsigned char *l;		/* shared ro, linear, whole object */
	unsigned char want[LEN];	/* the object */
	unsigned char store[LEN];	/* what the store must hold */
	unsigned char buf[LEN];
};

static void put(struct ctx *c, size_t a_off, uint64_t obj_off, unsigned char v)
{
	c->a[a_off] = v;
	c->want[obj_off] = v;
}

static void check(struct ctx *c, const char *step)
{
	char what[128];
	size_t i;

	snprintf(what, sizeof(what), "%s: %s: linear mapping", c->t.name, step);
	tt_expect_bytes(what, c->l, c->want, LEN);
	CHECK_RET(tt_pread(&c->t, c->buf, LEN, 0), LEN);
	for (i = 0; i < LEN; i++)
		CHECK(c->buf[i] == c->want[i], "%s: %s: pread byte %zu = %#x, want %#x", c->t.name,
		      step, i, c->buf[i], c->want[i]);
	if (!c->t.path[0])
		return;
	CHECK(tt_store_pread(&c->t, c->buf, LEN, 0) == (ssize_t)LEN, "%s: file pread", c->t.name);
	for (i = 0; i < LEN; i++) {
		unsigned char w = tt_is_kernel(&c->t) ? c->want[i] : c->store[i];

		CHECK(c->buf[i] == w, "%s: %s: file byte %zu (page %zu) = %#x, want %#x",
		      c->t.name, step, i, i / PG, c->buf[i], w);
	}
}

static void run(struct ctx *c, struct uf_mm *mm, enum tt_kind kind)
{
	unsigned char v = 0x77;
	size_t i;

	tt_open(&c->t, mm, kind, LEN);
	for (i = 0; i < LEN; i++)
		c->want[i] = ut_pattern(i);
	memcpy(c->store, c->want, LEN);
	c->a = tt_map(&c->t, A_PAGES * PG, PROT_READ | PROT_WRITE, true, 0);
	c->l = tt_map(&c->t, LEN, PROT_READ, true, 0);

	/* A pages 2-3 show object pages 10-11 */
	CHECK_RET(tt_remap(&c->t, c->a + 2 * PG, 2 * PG, 10), 0);
	put(c, 2 * PG + 5, 10 * PG + 5, 0xA1);
	put(c, 3 * PG + 100, 11 * PG + 100, 0xA2);
	put(c, 1 * PG + 3, 1 * PG + 3, 0xA3);		/* linear part */
	check(c, "written through a window");

	CHECK_RET(tt_msync(&c->t, c->a + 2 * PG, 2 * PG), 0);
	c->store[10 * PG + 5] = 0xA1;
	c->store[11 * PG + 100] = 0xA2;
	/* the linear write may or may not be synced by a window msync */
	if (c->t.path[0] && !tt_is_kernel(&c->t)) {
		CHECK(tt_store_pread(&c->t, &c->store[PG + 3], 1, PG + 3) == 1, "file pread");
		CHECK(c->store[PG + 3] == 0xA3 || c->store[PG + 3] == ut_pattern(PG + 3),
		      "%s: file byte %d = %#x", c->t.name, (int)PG + 3, c->store[PG + 3]);
	}
	check(c, "msync of the window");

	/* write, remap the window elsewhere, write again, msync everything */
	put(c, 2 * PG + 7, 10 * PG + 7, 0xB1);
	CHECK_RET(tt_remap(&c->t, c->a + 2 * PG, 2 * PG, 14), 0);
	put(c, 2 * PG + 9, 14 * PG + 9, 0xB2);
	put(c, 3 * PG + 4095, 15 * PG + 4095, 0xB3);
	check(c, "remapped");
	CHECK_RET(tt_msync(&c->t, c->a, A_PAGES * PG), 0);
	memcpy(c->store, c->want, LEN);
	check(c, "msync of the mapping");

	/* pwrite into the page a window shows */
	CHECK_RET(tt_pwrite(&c->t, &v, 1, 14 * PG + 20), 1);
	c->want[14 * PG + 20] = v;
	CHECK(c->a[2 * PG + 20] == v, "%s: pwrite not seen in the window", c->t.name);

	tt_unmap(&c->t, c->a, A_PAGES * PG);
	tt_unmap(&c->t, c->l, LEN);
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
