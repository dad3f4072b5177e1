/* Description: growing an object never exposes old bytes: bytes written
 * through a shared mapping past EOF in the last partial page read zero after
 * uf_object_truncate() grows the object (by less than the page, then past
 * it), through the mapping, a new mapping, uf_object_pread() and, after
 * msync, the file; with and without an msync before the grow.  Every store.
 * The kernel's mmap of a tmpfs and a disk file runs the same steps; tmpfs on
 * Linux 6.18 leaks those bytes, so what the kernel did is only printed. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define OLD_SIZE	(10 * PG + 100)
#define MID_SIZE	(10 * PG + 150)
#define NEW_SIZE	(12 * PG)

/* Count the bytes of [from, to) that are not zero, through the mapping, a
 * new mapping, pread and the file; fail on a signal. */
static size_t nonzero(struct tt *t, unsigned char *map, uint64_t from, uint64_t to,
		      const char *step, bool check_file)
{
	unsigned char buf[3 * PG], *late;
	struct ut_fault f;
	size_t n = 0, i, len = (size_t)(to - from);

	CHECK(ut_copy_from(buf, map + from, len, &f) == 0, "%s: %s: signal %d at %p",
	      t->name, step, f.sig, f.addr);
	for (i = 0; i < len; i++)
		n += buf[i] != 0;

	late = tt_map(t, NEW_SIZE, PROT_READ, true, 0);
	CHECK(ut_copy_from(buf, late + from, len, &f) == 0, "%s: %s: new mapping: signal %d",
	      t->name, step, f.sig);
	for (i = 0; i < len; i++)
		n += buf[i] != 0;
	tt_unmap(t, late, NEW_SIZE);

	CHECK_RET(tt_pread(t, buf, len, from), len);
	for (i = 0; i < len; i++)
		n += buf[i] != 0;

	if (check_file && t->path[0]) {
		CHECK(tt_store_pread(t, buf, len, from) == (ssize_t)len, "%s: file pread", t->name);
		for (i = 0; i < len; i++)
			n += buf[i] != 0;
	}
	return n;
}

/* Return the number of leaked bytes seen. */
static size_t run(struct uf_mm *mm, enum tt_kind kind, bool sync_first)
{
	struct tt t;
	unsigned char *map;
	size_t leaked, i;

	tt_open(&t, mm, kind, OLD_SIZE);
	map = tt_map(&t, NEW_SIZE, PROT_READ | PROT_WRITE, true, 0);
	for (i = 0; i < OLD_SIZE; i += PG / 2)
		CHECK(map[i] == ut_pattern(i), "%s: byte %zu before", t.name, i);
	CHECK(map[OLD_SIZE] == 0, "%s: past EOF before", t.name);

	/* legal: the last partial page is mapped to its end */
	memset(map + OLD_SIZE, 0xEE, 11 * PG - OLD_SIZE);
	if (sync_first)
		CHECK_RET(tt_msync(&t, map, NEW_SIZE), 0);

	CHECK_RET(tt_truncate(&t, MID_SIZE), 0);
	leaked = nonzero(&t, map, OLD_SIZE, MID_SIZE, "grow by 50", false);
	CHECK_RET(tt_truncate(&t, NEW_SIZE), 0);
	CHECK_RET(tt_msync(&t, map, NEW_SIZE), 0);
	leaked += nonzero(&t, map, MID_SIZE, NEW_SIZE, "grow to 12 pages", true);
	leaked += nonzero(&t, map, OLD_SIZE, MID_SIZE, "grow to 12 pages", true);

	/* bytes before the old EOF are untouched */
	for (i = 0; i < OLD_SIZE; i++)
		CHECK(map[i] == ut_pattern(i), "%s: byte %zu after grow", t.name, i);

	printf("%s%s: %zu old bytes seen after the grows\n", t.name,
	       sync_first ? " (msync first)" : "", leaked);
	if (!tt_is_kernel(&t))
		CHECK(leaked == 0, "%s%s: %zu bytes written past EOF exposed by the grow",
		      t.name, sync_first ? " (msync first)" : "", leaked);
	tt_unmap(&t, map, NEW_SIZE);
	tt_close(&t);
	return leaked;
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	int kind;

	ut_catch_signals();
	for (kind = 0; kind < TT_NKINDS; kind++) {
		run(mm, (enum tt_kind)kind, false);
		run(mm, (enum tt_kind)kind, true);
	}
	uf_mm_destroy(mm);
	return 0;
}
