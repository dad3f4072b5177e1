/* Description: uf_remap_file_pages() returns -EINVAL, and changes nothing
 * (every mapping still reads the same bytes, existing windows stay), for
 * prot != 0, flags != 0, an unaligned start, an unaligned size, size 0, a
 * range crossing the end of its VMA, an address in no VMA, a private object
 * mapping, an operation mapping (uf_mmap_ops), and a mapping whose ops have
 * only the deprecated ->nopage; uf_vma_set_ops() refuses nopage-only ops on
 * a mapping that has windows.  Every store. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define _GNU_SOURCE
#include "trunc-target.h"

#define OBJ_PAGES	16
#define MAP_PAGES	8
#define NMAPS		4

struct ctx {
	struct uf_mm *mm;
	unsigned char *map[NMAPS];	/* shared with a window, private, ops, nopage-only */
	unsigned char *snap[NMAPS];	/* their bytes before the errors */
};

static const char *const map_names[NMAPS] = { "shared", "private", "ops", "nopage-only" };

static struct uf_page *np_nopage(struct uf_vma *vma, unsigned long address, int *type)
{
	return uf_filemap_nopage(vma, address, type);
}

static const struct uf_vm_operations nopage_ops = { .nopage = np_nopage };

static struct uf_page *ops_fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct uf_page *page = uf_page_alloc(uf_vma_private(vma));

	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), (int)(fd->pgoff + 0x40), PG);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations fault_ops = { .fault = ops_fault };

static void unchanged(struct ctx *c, const char *name, const char *step)
{
	char what[128];
	int k;

	for (k = 0; k < NMAPS; k++) {
		snprintf(what, sizeof(what), "%s: after %s: %s mapping", name, step, map_names[k]);
		tt_expect_bytes(what, c->map[k], c->snap[k], MAP_PAGES * PG);
	}
}

#define EINVAL_CASE(c, name, step, call) do {				\
	CHECK_RET((call), -EINVAL);					\
	unchanged((c), (name), (step));					\
} while (0)

static void run(struct ctx *c, enum ut_store s)
{
	const char *name = ut_store_names[s];
	struct uf_mm *mm = c->mm;
	unsigned char *sh, *hole;
	struct uf_object *obj;
	char path[256];
	size_t i;
	int k;

	obj = ut_object(mm, s, OBJ_PAGES * PG, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, MAP_PAGES * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&c->map[0]), 0);
	CHECK_RET(uf_mmap(mm, MAP_PAGES * PG, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0,
			  (void **)&c->map[1]), 0);
	CHECK_RET(uf_mmap_ops(mm, MAP_PAGES * PG, PROT_READ | PROT_WRITE, &fault_ops, mm,
			      (void **)&c->map[2]), 0);
	CHECK_RET(uf_mmap(mm, MAP_PAGES * PG, PROT_READ, UF_MAP_SHARED, obj, 0,
			  (void **)&c->map[3]), 0);
	CHECK_RET(uf_vma_set_ops(uf_find_vma(mm, c->map[3]), &nopage_ops), 0);

	sh = c->map[0];
	CHECK_RET(uf_remap_file_pages(mm, sh + PG, PG, 0, 12, 0), 0);
	sh[5 * PG + 1] = 0x99;				/* a write of the shared mapping */
	c->map[1][2 * PG] = 0x98;			/* a private copy */
	for (k = 0; k < NMAPS; k++) {
		c->snap[k] = malloc(MAP_PAGES * PG);
		CHECK(c->snap[k], "out of memory");
		CHECK(ut_copy_from(c->snap[k], c->map[k], MAP_PAGES * PG, NULL) == 0,
		      "%s: %s mapping unreadable", name, map_names[k]);
	}
	for (i = 0; i < PG; i++)
		CHECK(c->snap[0][PG + i] == ut_pattern(12 * PG + i), "%s: window byte %zu", name, i);
	for (i = 0; i < PG; i++)
		CHECK(c->snap[3][i] == ut_pattern(i), "%s: nopage mapping byte %zu", name, i);

	EINVAL_CASE(c, name, "prot PROT_READ", uf_remap_file_pages(mm, sh, PG, PROT_READ, 3, 0));
	EINVAL_CASE(c, name, "prot PROT_WRITE",
		    uf_remap_file_pages(mm, sh + 2 * PG, PG, PROT_READ | PROT_WRITE, 3, 0));
	EINVAL_CASE(c, name, "flags 1", uf_remap_file_pages(mm, sh, PG, 0, 3, 1));
	EINVAL_CASE(c, name, "flags 0x10000", uf_remap_file_pages(mm, sh, PG, 0, 3, 0x10000));
	EINVAL_CASE(c, name, "unaligned start", uf_remap_file_pages(mm, sh + 1, PG, 0, 3, 0));
	EINVAL_CASE(c, name, "unaligned start (window)",
		    uf_remap_file_pages(mm, sh + PG + 2048, PG, 0, 3, 0));
	EINVAL_CASE(c, name, "unaligned size", uf_remap_file_pages(mm, sh, PG + 1, 0, 3, 0));
	EINVAL_CASE(c, name, "size PG/2", uf_remap_file_pages(mm, sh, PG / 2, 0, 3, 0));
	EINVAL_CASE(c, name, "size 0", uf_remap_file_pages(mm, sh, 0, 0, 3, 0));
	EINVAL_CASE(c, name, "crossing the end",
		    uf_remap_file_pages(mm, sh + 6 * PG, 4 * PG, 0, 3, 0));
	EINVAL_CASE(c, name, "whole mapping and one page more",
		    uf_remap_file_pages(mm, sh, (MAP_PAGES + 1) * PG, 0, 3, 0));
	EINVAL_CASE(c, name, "private mapping",
		    uf_remap_file_pages(mm, c->map[1], PG, 0, 3, 0));
	EINVAL_CASE(c, name, "private mapping, middle",
		    uf_remap_file_pages(mm, c->map[1] + 2 * PG, 2 * PG, 0, 9, 0));
	EINVAL_CASE(c, name, "operation mapping",
		    uf_remap_file_pages(mm, c->map[2], PG, 0, 3, 0));
	EINVAL_CASE(c, name, "nopage-only mapping",
		    uf_remap_file_pages(mm, c->map[3] + PG, PG, 0, 3, 0));
	EINVAL_CASE(c, name, "nopage-only ops on a mapping with windows",
		    uf_vma_set_ops(uf_find_vma(mm, sh), &nopage_ops));

	/* an address in no ufault mapping */
	hole = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(hole != MAP_FAILED, "mmap");
	hole[0] = 0x31;
	EINVAL_CASE(c, name, "no VMA", uf_remap_file_pages(mm, hole, PG, 0, 3, 0));
	CHECK(hole[0] == 0x31, "%s: plain memory changed", name);
	munmap(hole, 2 * PG);

	/* the existing window still works: remap it once more, and back */
	CHECK_RET(uf_remap_file_pages(mm, sh + PG, PG, 0, 13, 0), 0);
	for (i = 0; i < PG; i += 64)
		CHECK(sh[PG + i] == ut_pattern(13 * PG + i), "%s: window after errors", name);
	CHECK_RET(uf_remap_file_pages(mm, sh + PG, PG, 0, 12, 0), 0);
	unchanged(c, name, "the final remaps");

	CHECK_RET(uf_munmap(mm, c->map[0], MAP_PAGES * PG), 0);
	CHECK_RET(uf_munmap(mm, c->map[1], MAP_PAGES * PG), 0);
	CHECK_RET(uf_munmap(mm, c->map[2], MAP_PAGES * PG), 0);
	CHECK_RET(uf_munmap(mm, c->map[3], MAP_PAGES * PG), 0);
	for (k = 0; k < NMAPS; k++)
		free(c->snap[k]);
	uf_object_put(obj);
	if (path[0])
		unlink(path);
	printf("%s: ok\n", name);
}

int main(void)
{
	struct ctx c = { .mm = ut_mm_create(NULL) };
	int s;

	ut_catch_signals();
	CHECK_RET(uf_remap_file_pages(NULL, NULL, PG, 0, 0, 0), -EINVAL);
	for (s = 0; s < UT_NSTORES; s++)
		run(&c, (enum ut_store)s);
	uf_mm_destroy(c.mm);
	return 0;
}
