/* Description: hole punch and truncate stay exact on huge extents: after
 * the collapse, a one-page punch in the middle of an extent splits it
 * (huge_extents drops by one) and that page reads zero (store too) while
 * its neighbours keep their bytes; a sub-page punch zeroes just those
 * bytes; a truncate to the middle of an extent splits it, gives SIGBUS
 * past the new end, and growing again reads zero there; extents collapse
 * again once refilled.  Over each store. */
#define _GNU_SOURCE
#include "helpers.h"

#include <sys/mman.h>
#include <unistd.h>

#define MB	(1UL << 20)
#define EXT	(2 * MB)
#define SIZE	(4 * EXT)

struct ctx {
	struct uf_mm *mm;
	struct uf_object *obj;
	char path[256];
	unsigned char *model;		/* what every byte must read */
	unsigned char *p;		/* read-only mapping */
	unsigned char *w;		/* writable mapping */
};

static void check_all(struct ctx *c, uint64_t size, const char *what)
{
	uint64_t i;

	for (i = 0; i < size; i++) {
		CHECK(c->p[i] == c->model[i], "%s: mapping byte %lu is %u, want %u", what,
		      (unsigned long)i, c->p[i], c->model[i]);
		CHECK(c->w[i] == c->model[i], "%s: writable byte %lu is %u, want %u", what,
		      (unsigned long)i, c->w[i], c->model[i]);
	}
}

static uint64_t huge_now(struct ctx *c)
{
	struct uf_stats st;

	CHECK(uf_mm_stats(c->mm, &st) == 0, "stats");
	return st.huge_extents;
}

static void run(enum ut_store store)
{
	struct ctx c = { 0 };
	struct ut_fault f;
	unsigned char v;
	uint64_t i;

	c.mm = ut_mm_create(NULL);
	c.obj = ut_object(c.mm, store, SIZE, c.path, sizeof(c.path));
	c.model = malloc(SIZE);
	CHECK(c.model, "malloc");
	for (i = 0; i < SIZE; i++)
		c.model[i] = ut_pattern(i);
	CHECK(uf_mmap(c.mm, SIZE, PROT_READ, UF_MAP_SHARED, c.obj, 0, (void **)&c.p) == 0, "mmap");
	CHECK(uf_mmap(c.mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.obj, 0,
		      (void **)&c.w) == 0, "mmap rw");
	check_all(&c, SIZE, "first read");
	CHECK(ut_wait_huge(c.mm, 4) == 4, "%s: not collapsed", ut_store_names[store]);
	check_all(&c, SIZE, "after collapse");

	/* written bytes in an extent about to be split are kept */
	c.w[EXT + 99 * 4096 + 7] = c.model[EXT + 99 * 4096 + 7] = 0xee;
	c.w[EXT + 101 * 4096] = c.model[EXT + 101 * 4096] = 0xef;

	/* one page in the middle of extent 1 */
	CHECK(uf_object_punch_hole(c.obj, EXT + 100 * 4096, 4096) == 0, "punch");
	memset(c.model + EXT + 100 * 4096, 0, 4096);
	CHECK(huge_now(&c) == 3, "%lu huge extents after a punch, want 3",
	      (unsigned long)huge_now(&c));
	check_all(&c, SIZE, "after punch");
	if (store != UT_STORE_MEM)
		CHECK(ut_file_byte(c.path, EXT + 100 * 4096 + 5) == 0, "store not punched");

	/* bytes inside one page of extent 2: zeroed, extent stays */
	CHECK(uf_object_punch_hole(c.obj, 2 * EXT + 1000, 100) == 0, "sub-page punch");
	memset(c.model + 2 * EXT + 1000, 0, 100);
	check_all(&c, SIZE, "after sub-page punch");

	/* writes reach the store exactly */
	CHECK(uf_object_sync(c.obj) == 0, "sync");
	if (store != UT_STORE_MEM) {
		CHECK(ut_file_byte(c.path, EXT + 99 * 4096 + 7) == 0xee, "write lost");
		CHECK(ut_file_byte(c.path, EXT + 101 * 4096) == 0xef, "write lost");
	}

	/* reading the punched page filled extent 1 again: collapsed again */
	CHECK(ut_wait_huge(c.mm, 4) == 4, "%s: extent 1 not collapsed again",
	      ut_store_names[store]);

	/* truncate into the middle of extent 2 */
	CHECK(uf_object_truncate(c.obj, 2 * EXT + 300 * 4096 + 17) == 0, "truncate");
	memset(c.model + 2 * EXT + 300 * 4096 + 17, 0, SIZE - (2 * EXT + 300 * 4096 + 17));
	CHECK(huge_now(&c) == 2, "%lu huge extents after truncate, want 2",
	      (unsigned long)huge_now(&c));
	check_all(&c, 2 * EXT + 301 * 4096, "after truncate");
	CHECK(ut_read(c.p + 2 * EXT + 301 * 4096, &v, &f) == SIGBUS, "no SIGBUS past EOF");
	CHECK(ut_read(c.p + 3 * EXT + 5, &v, &f) == SIGBUS, "no SIGBUS past EOF");

	/* grow: the rest reads zero, and fills collapse again */
	CHECK(uf_object_truncate(c.obj, SIZE) == 0, "grow");
	check_all(&c, SIZE, "after grow");
	CHECK(ut_wait_huge(c.mm, 4) == 4, "%s: not collapsed again (%lu)", ut_store_names[store],
	      (unsigned long)huge_now(&c));
	check_all(&c, SIZE, "collapsed again");
	CHECK(uf_object_sync(c.obj) == 0, "sync");
	if (store != UT_STORE_MEM)
		for (i = 0; i < SIZE; i += 4093)
			CHECK(ut_file_byte(c.path, i) == c.model[i], "file byte %lu", (unsigned long)i);

	uf_munmap(c.mm, c.w, SIZE);
	uf_munmap(c.mm, c.p, SIZE);
	uf_object_put(c.obj);
	uf_mm_destroy(c.mm);
	free(c.model);
	if (c.path[0])
		unlink(c.path);
}

int main(void)
{
	int s;

	if (!ut_collapse_works()) {
		printf("SKIP: MADV_COLLAPSE does not make huge pages of a memfd here\n");
		return UT_SKIP;
	}
	ut_catch_signals();
	for (s = 0; s < UT_NSTORES; s++)
		run(s);
	return UT_PASS;
}
