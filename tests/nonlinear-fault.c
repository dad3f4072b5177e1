/* Description: uf_remap_file_pages() makes a window of a shared object
 * mapping show object pages pgoff..: the window reads those pages, the rest
 * of the mapping stays linear; a fault inside a window reaches the VMA's
 * ->fault (installed with uf_vma_set_ops, ending in uf_filemap_fault) with
 * the window's pgoff and UF_FAULT_FLAG_NONLINEAR, a fault outside it with
 * the linear pgoff and no flag; windows can be remapped again and overlap
 * earlier windows (the newest wins).  Every store. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define OBJ_PAGES	40
#define MAP_PAGES	16

struct rec {
	unsigned int faults;	/* fault() calls for this page of the mapping */
	uint64_t pgoff;
	unsigned int flags;
};

struct ctx {
	unsigned char *map;
	struct rec rec[MAP_PAGES];
	uint64_t shows[MAP_PAGES];	/* object page each page of the mapping shows */
	bool window[MAP_PAGES];
	bool cached[OBJ_PAGES];		/* object pages faulted in already */
	unsigned int stray;		/* faults outside the mapping */
	bool zeros;			/* the object holds zeros, not the pattern */
	unsigned int nl_checked;	/* window faults seen and checked */
};

/*
 * Object mappings have no private_data, so ->fault finds the test's context
 * here.  Written once per store before the mapping is touched; only read
 * by ->fault afterwards.
 */
static struct ctx *fault_ctx;

static struct uf_page *rec_fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = __atomic_load_n(&fault_ctx, __ATOMIC_ACQUIRE);
	unsigned long a = fd->address, start = (unsigned long)c->map;

	if (a >= start && a < start + MAP_PAGES * PG) {
		struct rec *r = &c->rec[(a - start) / PG];

		__atomic_store_n(&r->pgoff, fd->pgoff, __ATOMIC_RELAXED);
		__atomic_store_n(&r->flags, fd->flags, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->faults, 1, __ATOMIC_RELEASE);
	} else {
		__atomic_add_fetch(&c->stray, 1, __ATOMIC_RELAXED);
	}
	return uf_filemap_fault(vma, fd);
}

static const struct uf_vm_operations rec_ops = { .fault = rec_fault };

static void remap(struct ctx *c, struct uf_mm *mm, size_t first, size_t n, uint64_t pgoff)
{
	size_t i;

	CHECK_RET(uf_remap_file_pages(mm, c->map + first * PG, n * PG, 0, pgoff, 0), 0);
	for (i = 0; i < n; i++) {
		c->shows[first + i] = pgoff + i;
		c->window[first + i] = true;
	}
}

/* Touch every page, last first (so readahead never runs ahead of us), and
 * check its bytes and the fault it caused. */
static void touch_all(struct ctx *c, const char *store, const char *step)
{
	unsigned char want[PG];
	char what[128];
	size_t i, j;

	for (i = MAP_PAGES; i-- > 0;) {
		struct rec *r = &c->rec[i];
		unsigned int before = __atomic_load_n(&r->faults, __ATOMIC_ACQUIRE), after;
		uint64_t pg = c->shows[i];

		for (j = 0; j < PG; j++)
			want[j] = c->zeros ? 0 : ut_pattern(pg * PG + j);
		snprintf(what, sizeof(what), "%s: %s: page %zu (object page %lu)", store, step, i,
			 (unsigned long)pg);
		tt_expect_bytes(what, c->map + i * PG, want, PG);
		after = __atomic_load_n(&r->faults, __ATOMIC_ACQUIRE);
		if (after != before) {
			uint64_t fp = __atomic_load_n(&r->pgoff, __ATOMIC_RELAXED);
			unsigned int ff = __atomic_load_n(&r->flags, __ATOMIC_RELAXED);

			CHECK(fp == pg, "%s: fault pgoff %lu, want %lu", what, (unsigned long)fp,
			      (unsigned long)pg);
			CHECK(!!(ff & UF_FAULT_FLAG_NONLINEAR) == c->window[i],
			      "%s: fault flags %#x, window %d", what, ff, c->window[i]);
			CHECK(!(ff & UF_FAULT_FLAG_WRITE), "%s: write flag on a read", what);
			c->nl_checked += c->window[i];
		} else {
			/* only a page already in the cache may be mapped without fault() */
			CHECK(c->cached[pg], "%s: no fault for an uncached page", what);
		}
		c->cached[pg] = true;
	}
}

static void run(struct ctx *c, struct uf_mm *mm, enum ut_store s)
{
	const char *name = ut_store_names[s];
	struct uf_object *obj;
	char path[256] = "";
	size_t i;

	memset(c, 0, sizeof(*c));
	if (s == UT_STORE_MEM) {
		/* ut_object() leaves every page of a memory object cached: start
		 * with an empty one so that pages fault */
		CHECK_RET(uf_object_create_mem(mm, OBJ_PAGES * PG, &obj), 0);
		c->zeros = true;
	} else {
		obj = ut_object(mm, s, OBJ_PAGES * PG, path, sizeof(path));
	}
	CHECK_RET(uf_mmap(mm, MAP_PAGES * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&c->map), 0);
	__atomic_store_n(&fault_ctx, c, __ATOMIC_RELEASE);
	CHECK_RET(uf_vma_set_ops(uf_find_vma(mm, c->map), &rec_ops), 0);
	for (i = 0; i < MAP_PAGES; i++)
		c->shows[i] = i;

	remap(c, mm, 4, 3, 20);		/* pages 4-6 show 20-22 */
	remap(c, mm, 10, 4, 2);		/* pages 10-13 show 2-5, also shown linearly */
	touch_all(c, name, "two windows");

	remap(c, mm, 5, 4, 28);		/* overlaps the first window and linear 7-8 */
	remap(c, mm, 12, 1, 33);	/* inside the second window */
	remap(c, mm, 0, 1, 39);		/* the first page: the last object page */
	touch_all(c, name, "overlapping windows");

	remap(c, mm, 5, 1, 21);		/* back onto a page cached through a window */
	touch_all(c, name, "remapped onto a cached page");

	CHECK(__atomic_load_n(&c->stray, __ATOMIC_RELAXED) == 0, "%s: faults outside", name);
	/* 20-22, 4-5, 28-31, 33, 39 were first met through windows */
	CHECK(c->nl_checked >= 10, "%s: only %u window faults", name, c->nl_checked);
	__atomic_store_n(&fault_ctx, NULL, __ATOMIC_RELEASE);
	CHECK_RET(uf_munmap(mm, c->map, MAP_PAGES * PG), 0);
	uf_object_put(obj);
	if (path[0])
		unlink(path);
	printf("%s: ok, %u window faults\n", name, c->nl_checked);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct ctx *c = calloc(1, sizeof(*c));
	int s;

	CHECK(c, "out of memory");
	ut_catch_signals();
	for (s = 0; s < UT_NSTORES; s++)
		run(c, mm, (enum ut_store)s);
	free(c);
	uf_mm_destroy(mm);
	return 0;
}
