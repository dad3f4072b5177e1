/* Description: truncate, grow and hole punch reach nonlinear windows exactly
 * as linear mappings: a window onto a page past EOF gets SIGBUS (exact
 * si_addr, reads and writes) until the object grows, then reads zero; after
 * a shrink a window onto a cut page gets SIGBUS and one onto the new last
 * page reads zero past EOF; after growing again it reads zero, never the
 * bytes written through it before; a punch zeroes the punched bytes in the
 * window, in a linear mapping and in the store.  Every store; the kernel's
 * remap_file_pages() on its mmap of a tmpfs and a disk file is the oracle. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define A_PAGES	8
#define L_PAGES	12

struct ctx {
	struct tt t;
	unsigned char *a;		/* shared rw with windows */
	unsigned char *l;		/* shared ro, linear */
	unsigned char want[L_PAGES * PG];
	uint64_t size;
	uint64_t shows[A_PAGES];	/* object page of each page of a */
};

/* Check both mappings and pread against want/size. */
static void check(struct ctx *c, const char *step)
{
	uint64_t eof_end = (c->size + PG - 1) & ~(PG - 1);
	unsigned char buf[L_PAGES * PG];
	char what[160];
	size_t i;

	for (i = 0; i < A_PAGES; i++) {
		uint64_t o = c->shows[i] * PG;

		snprintf(what, sizeof(what), "%s: %s: page %zu showing object page %lu", c->t.name,
			 step, i, (unsigned long)c->shows[i]);
		if (o >= eof_end) {
			tt_expect_sigbus(what, c->a + i * PG + 33);
			tt_expect_sigbus_write(what, c->a + i * PG + 4000);
		} else {
			tt_expect_bytes(what, c->a + i * PG, c->want + o, PG);
		}
	}
	for (i = 0; i < L_PAGES; i++) {
		snprintf(what, sizeof(what), "%s: %s: linear page %zu", c->t.name, step, i);
		if (i * PG >= eof_end)
			tt_expect_sigbus(what, c->l + i * PG);
		else
			tt_expect_bytes(what, c->l + i * PG, c->want + i * PG, PG);
	}
	CHECK_RET(tt_pread(&c->t, buf, sizeof(buf), 0), c->size);
	for (i = 0; i < c->size; i++)
		CHECK(buf[i] == c->want[i], "%s: %s: pread byte %zu", c->t.name, step, i);
}

static void check_file(struct ctx *c, const char *step)
{
	unsigned char buf[L_PAGES * PG];
	size_t i;

	CHECK_RET(tt_msync(&c->t, c->a, A_PAGES * PG), 0);
	if (!c->t.path[0])
		return;
	CHECK(tt_store_size(&c->t) == (int64_t)c->size, "%s: %s: file size %ld", c->t.name, step,
	      (long)tt_store_size(&c->t));
	CHECK(tt_store_pread(&c->t, buf, sizeof(buf), 0) == (ssize_t)c->size, "file pread");
	for (i = 0; i < c->size; i++)
		CHECK(buf[i] == c->want[i], "%s: %s: file byte %zu = %#x, want %#x", c->t.name,
		      step, i, buf[i], c->want[i]);
}

static void resize(struct ctx *c, uint64_t size)
{
	CHECK_RET(tt_truncate(&c->t, size), 0);
	if (size < c->size)
		memset(c->want + size, 0, c->size - size);
	c->size = size;
}

static void window(struct ctx *c, size_t page, uint64_t pgoff)
{
	CHECK_RET(tt_remap(&c->t, c->a + page * PG, PG, pgoff), 0);
	c->shows[page] = pgoff;
}

static void run(struct ctx *c, struct uf_mm *mm, enum tt_kind kind)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	c->size = A_PAGES * PG;
	tt_open(&c->t, mm, kind, c->size);
	for (i = 0; i < c->size; i++)
		c->want[i] = ut_pattern(i);
	for (i = 0; i < A_PAGES; i++)
		c->shows[i] = i;
	c->a = tt_map(&c->t, A_PAGES * PG, PROT_READ | PROT_WRITE, true, 0);
	c->l = tt_map(&c->t, L_PAGES * PG, PROT_READ, true, 0);

	window(c, 2, 10);		/* past EOF */
	window(c, 5, 11);		/* past EOF */
	check(c, "windows past EOF");
	resize(c, L_PAGES * PG);
	check(c, "grown over the windows");

	memset(c->a + 2 * PG, 0xC1, PG);
	memset(c->want + 10 * PG, 0xC1, PG);
	memset(c->a + 5 * PG, 0xC2, PG);
	memset(c->want + 11 * PG, 0xC2, PG);
	check(c, "written through the windows");
	check_file(c, "written through the windows");

	resize(c, 10 * PG + 100);
	check(c, "shrunk into the first window's page");
	check_file(c, "shrunk into the first window's page");
	resize(c, 9 * PG);
	check(c, "shrunk below both windows");
	resize(c, L_PAGES * PG);
	check(c, "grown again");
	check_file(c, "grown again");

	/* hole punch through windows */
	memset(c->a + 2 * PG, 0xD1, PG);
	memset(c->want + 10 * PG, 0xD1, PG);
	window(c, 7, 3);
	CHECK_RET(tt_punch(&c->t, 10 * PG + 100, 200), 0);
	memset(c->want + 10 * PG + 100, 0, 200);
	CHECK_RET(tt_punch(&c->t, 3 * PG, PG), 0);
	memset(c->want + 3 * PG, 0, PG);
	check(c, "punched");
	check_file(c, "punched");

	tt_unmap(&c->t, c->a, A_PAGES * PG);
	tt_unmap(&c->t, c->l, L_PAGES * PG);
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
