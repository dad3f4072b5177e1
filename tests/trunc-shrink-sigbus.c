/* Description: after uf_object_truncate() shrinks an object, no mapping
 * (shared read-write, shared read-only, private with and without copied
 * pages, one at an offset) maps a page at or past EOF: every access there
 * gets SIGBUS with si_addr the accessed address; the last partial page reads
 * zero past EOF (also bytes written there before); uf_object_pread() is
 * short at EOF; a file store is truncated too.  Every store; the kernel's
 * own mmap of a tmpfs and a disk file runs the same steps as the oracle. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define OLD_PAGES	20
#define NEW_SIZE	(7 * PG + 300)
#define MAP_PAGES	(OLD_PAGES + 2)

struct mapping {
	const char *name;
	unsigned char *p;
	size_t len;
	uint64_t off;		/* object offset of p[0] */
	bool shared, writable;
};

static void check_mapping(struct tt *t, const struct mapping *m, unsigned char *want)
{
	uint64_t eof_page_end = (NEW_SIZE + PG - 1) & ~(PG - 1);
	char what[128];
	size_t i;

	for (i = 0; i < m->len; i += PG) {
		uint64_t o = m->off + i;

		snprintf(what, sizeof(what), "%s: %s page %zu", t->name, m->name, i / PG);
		if (o >= eof_page_end) {
			tt_expect_sigbus(what, m->p + i);
			tt_expect_sigbus(what, m->p + i + PG - 1);
			if (m->writable)
				tt_expect_sigbus_write(what, m->p + i + 123);
			continue;
		}
		tt_expect_bytes(what, m->p + i, want + o, PG);
	}
}

static void run(struct uf_mm *mm, enum tt_kind kind)
{
	size_t olen = (size_t)OLD_PAGES * PG;
	unsigned char *want = calloc(1, MAP_PAGES * PG), buf[3 * PG];
	struct mapping m[5];
	struct tt t;
	uint64_t i;
	int k;

	CHECK(want, "out of memory");
	tt_open(&t, mm, kind, olen);
	m[0] = (struct mapping){ "shared rw", NULL, MAP_PAGES * PG, 0, true, true };
	m[1] = (struct mapping){ "shared ro", NULL, OLD_PAGES * PG, 0, true, false };
	m[2] = (struct mapping){ "private copied", NULL, OLD_PAGES * PG, 0, false, true };
	m[3] = (struct mapping){ "private clean", NULL, OLD_PAGES * PG, 0, false, false };
	m[4] = (struct mapping){ "shared at page 4", NULL, 16 * PG, 4 * PG, true, false };
	for (k = 0; k < 5; k++)
		m[k].p = tt_map(&t, m[k].len, PROT_READ | (m[k].writable ? PROT_WRITE : 0),
				m[k].shared, m[k].off);

	/* fault everything in; copy pages of the private mapping past the new EOF */
	for (i = 0; i < olen; i++)
		want[i] = ut_pattern(i);
	for (k = 0; k < 5; k++) {
		char what[64];
		size_t n = m[k].len < olen - m[k].off ? m[k].len : olen - m[k].off;

		snprintf(what, sizeof(what), "%s: %s before", t.name, m[k].name);
		tt_expect_bytes(what, m[k].p, want + m[k].off, n);
	}
	for (i = 9; i < OLD_PAGES; i += 3)
		m[2].p[i * PG + 7] = 0xC0;
	/* bytes in the last partial page past the coming EOF */
	memset(m[0].p + NEW_SIZE, 0xEE, 200);
	memset(m[0].p + NEW_SIZE + 1000, 0xEF, 10);

	CHECK_RET(tt_truncate(&t, NEW_SIZE), 0);
	CHECK(tt_size(&t) == NEW_SIZE, "%s: size %lu", t.name, (unsigned long)tt_size(&t));

	memset(want + NEW_SIZE, 0, MAP_PAGES * PG - NEW_SIZE);
	for (k = 0; k < 5; k++)
		check_mapping(&t, &m[k], want);

	/* pread: whole, short at EOF, nothing at and past EOF */
	CHECK_RET(tt_pread(&t, buf, sizeof(buf), 6 * PG), NEW_SIZE - 6 * PG);
	for (i = 0; i < NEW_SIZE - 6 * PG; i++)
		CHECK(buf[i] == ut_pattern(6 * PG + i), "%s: pread byte %lu", t.name,
		      (unsigned long)i);
	CHECK_RET(tt_pread(&t, buf, 10, NEW_SIZE - 4), 4);
	CHECK_RET(tt_pread(&t, buf, 10, NEW_SIZE), 0);
	CHECK_RET(tt_pread(&t, buf, 10, 12 * PG), 0);

	/* the store itself */
	if (t.path[0]) {
		ssize_t n;

		CHECK(tt_store_size(&t) == NEW_SIZE, "%s: file size %ld, want %lu", t.name,
		      (long)tt_store_size(&t), (unsigned long)NEW_SIZE);
		n = tt_store_pread(&t, buf, sizeof(buf), 6 * PG);
		CHECK(n == (ssize_t)(NEW_SIZE - 6 * PG), "%s: file pread %ld", t.name, (long)n);
	}

	/* a mapping made after the truncate: the same */
	{
		struct mapping late = { "late shared", NULL, OLD_PAGES * PG, 0, true, true };

		late.p = tt_map(&t, late.len, PROT_READ | PROT_WRITE, true, 0);
		check_mapping(&t, &late, want);
		tt_unmap(&t, late.p, late.len);
	}
	for (k = 0; k < 5; k++)
		tt_unmap(&t, m[k].p, m[k].len);
	tt_close(&t);
	free(want);
	printf("%s: ok\n", tt_names[kind]);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	int kind;

	ut_catch_signals();
	for (kind = 0; kind < TT_NKINDS; kind++)
		run(mm, (enum tt_kind)kind);
	uf_mm_destroy(mm);
	return 0;
}
