/* Description: fully cached 2 MiB extents of an object's cache are
 * collapsed into huge pages in the background (uf_mm_stats huge_extents,
 * huge_collapses; the partial last extent is not), a read-only mapping then
 * maps them with PMDs (smaps) and reads them with no fault(), bytes
 * unchanged, over each store; a private mapping too, and its write stays
 * its own; a writable mapping still writes back exactly
 * the pages written; UF_MM_NO_HUGE turns it off.  Skips where MADV_COLLAPSE
 * does not work. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>
#include <unistd.h>

#define MB		(1UL << 20)
#define EXTENTS		4
#define SIZE		(EXTENTS * 2 * MB + 3 * 4096 + 100)	/* a partial 5th extent */

struct ctx {
	struct uf_mm *mm;
	struct uf_object *obj;
	char path[256];
};

static void check_bytes(const unsigned char *p, uint64_t len, const char *what)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		CHECK(p[i] == ut_pattern(i), "%s: byte %lu is %u, want %u", what,
		      (unsigned long)i, p[i], ut_pattern(i));
}

static void run(enum ut_store store)
{
	struct ctx c = { 0 };
	struct uf_stats st0, st1;
	unsigned char *p, *w;
	uint64_t kb;
	int ret;

	c.mm = ut_mm_create(NULL);
	c.obj = ut_object(c.mm, store, SIZE, c.path, sizeof(c.path));
	ret = uf_mmap(c.mm, SIZE & ~4095UL, PROT_READ, UF_MAP_SHARED, c.obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %d", ret);
	CHECK(((unsigned long)p & (2 * MB - 1)) == 0, "mapping %p not 2 MiB aligned", (void *)p);
	check_bytes(p, SIZE & ~4095UL, "first read");

	CHECK(ut_wait_huge(c.mm, EXTENTS) == EXTENTS, "%s: huge extents never reached %d",
	      ut_store_names[store], EXTENTS);
	usleep(50000);
	CHECK(uf_mm_stats(c.mm, &st0) == 0, "stats");
	CHECK(st0.huge_extents == EXTENTS, "%s: %lu huge extents, want %d (the partial one is not)",
	      ut_store_names[store], (unsigned long)st0.huge_extents, EXTENTS);
	CHECK(st0.huge_collapses >= EXTENTS, "huge_collapses %lu", (unsigned long)st0.huge_collapses);

	/* the next reads map PMDs, with no fault() */
	check_bytes(p, SIZE & ~4095UL, "read after collapse");
	kb = ut_pmd_mapped_kb(p);
	printf("%s: %lu huge extents, %lu KiB PMD-mapped\n", ut_store_names[store],
	       (unsigned long)st0.huge_extents, (unsigned long)kb);
	CHECK(kb >= EXTENTS * 2048, "%s: only %lu KiB PMD-mapped", ut_store_names[store],
	      (unsigned long)kb);
	CHECK(uf_mm_stats(c.mm, &st1) == 0, "stats");
	CHECK(st1.major_faults == st0.major_faults && st1.minor_faults == st0.minor_faults,
	      "faults after collapse: %lu/%lu -> %lu/%lu", (unsigned long)st0.minor_faults,
	      (unsigned long)st0.major_faults, (unsigned long)st1.minor_faults,
	      (unsigned long)st1.major_faults);

	/* a private mapping reads them through PMDs too, until written */
	{
		unsigned char *q;
		uint64_t i;

		CHECK(uf_mmap(c.mm, SIZE & ~4095UL, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, c.obj, 0,
			      (void **)&q) == 0, "uf_mmap private");
		check_bytes(q, SIZE & ~4095UL, "private mapping");
		kb = ut_pmd_mapped_kb(q);
		CHECK(kb >= EXTENTS * 2048, "%s: private: only %lu KiB PMD-mapped",
		      ut_store_names[store], (unsigned long)kb);
		q[4096] = (unsigned char)~q[4096];	/* copied on write, cache unchanged */
		CHECK(p[4096] == ut_pattern(4096), "a private write reached the cache");
		check_bytes(q, 4096, "private mapping after a write");
		for (i = 8192; i < (SIZE & ~4095UL); i++)
			CHECK(q[i] == ut_pattern(i), "private mapping after a write: byte %lu",
			      (unsigned long)i);
		uf_munmap(c.mm, q, SIZE & ~4095UL);
	}

	/* a writable mapping of huge extents: writes reach the store per
	 * 4 KiB page, exactly */
	ret = uf_mmap(c.mm, SIZE & ~4095UL, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.obj, 0,
		      (void **)&w);
	CHECK(ret == 0, "uf_mmap rw: %d", ret);
	check_bytes(w, SIZE & ~4095UL, "writable mapping");
	CHECK(uf_msync(c.mm, w, SIZE & ~4095UL, UF_MS_SYNC) == 0, "msync");
	CHECK(uf_mm_stats(c.mm, &st0) == 0, "stats");
	w[5 * 4096 + 1] = 0xa5;
	w[700 * 4096] = 0x5a;
	w[3 * 512 * 4096 + 4095] = 0x11;
	CHECK(uf_msync(c.mm, w, SIZE & ~4095UL, UF_MS_SYNC) == 0, "msync");
	CHECK(uf_mm_stats(c.mm, &st1) == 0, "stats");
	CHECK(st1.pages_written - st0.pages_written == 3, "%lu pages written, want 3",
	      (unsigned long)(st1.pages_written - st0.pages_written));
	CHECK(p[5 * 4096 + 1] == 0xa5 && p[700 * 4096] == 0x5a && p[3 * 512 * 4096 + 4095] == 0x11,
	      "the read-only mapping does not see the writes");
	if (store != UT_STORE_MEM) {
		CHECK(ut_file_byte(c.path, 5 * 4096 + 1) == 0xa5, "file byte");
		CHECK(ut_file_byte(c.path, 700 * 4096) == 0x5a, "file byte");
		CHECK(ut_file_byte(c.path, 3 * 512 * 4096 + 4095) == 0x11, "file byte");
		CHECK(ut_file_byte(c.path, 5 * 4096) == ut_pattern(5 * 4096), "file byte");
	}
	uf_munmap(c.mm, w, SIZE & ~4095UL);
	uf_munmap(c.mm, p, SIZE & ~4095UL);
	uf_object_put(c.obj);
	uf_mm_destroy(c.mm);
	if (c.path[0])
		unlink(c.path);
}

/* UF_MM_NO_HUGE: nothing is collapsed. */
static void run_off(void)
{
	struct uf_mm_config cfg = { .flags = UF_MM_NO_HUGE };
	struct ctx c = { 0 };
	struct uf_stats st;
	unsigned char *p;

	c.mm = ut_mm_create(&cfg);
	c.obj = ut_object(c.mm, UT_STORE_MEM, SIZE, c.path, sizeof(c.path));
	CHECK(uf_mmap(c.mm, SIZE & ~4095UL, PROT_READ, UF_MAP_SHARED, c.obj, 0, (void **)&p) == 0,
	      "uf_mmap");
	check_bytes(p, SIZE & ~4095UL, "huge off");
	usleep(300000);
	CHECK(uf_mm_stats(c.mm, &st) == 0, "stats");
	CHECK(st.huge_extents == 0 && st.huge_collapses == 0, "off, yet %lu huge extents",
	      (unsigned long)st.huge_extents);
	CHECK(ut_pmd_mapped_kb(p) == 0, "off, yet PMD-mapped");
	uf_munmap(c.mm, p, SIZE & ~4095UL);
	uf_object_put(c.obj);
	uf_mm_destroy(c.mm);
}

int main(void)
{
	int s;

	if (!ut_collapse_works()) {
		printf("SKIP: MADV_COLLAPSE does not make huge pages of a memfd here\n");
		return UT_SKIP;
	}
	for (s = 0; s < UT_NSTORES; s++)
		run(s);
	run_off();
	return UT_PASS;
}
