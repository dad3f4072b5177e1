/* Description: the deprecated entry points still work: a mapping whose ops
 * have only ->nopage, ending in uf_filemap_nopage(), reads the object's
 * bytes (also at an offset, SIGBUS past EOF), and uf_filemap_nopage() says
 * SIGBUS for an address outside the VMA; uf_filemap_populate() makes a
 * window onto object pages pgoff.. and brings them in at once (reading them
 * then costs no fault), writes through it reach the object, and it returns
 * -EINVAL for prot != 0, an unaligned range and a nopage-only mapping.
 * Every store. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define _GNU_SOURCE
#include "trunc-target.h"

#define OBJ_PAGES	24
#define MAP_PAGES	8

static struct uf_page *np_nopage(struct uf_vma *vma, unsigned long address, int *type)
{
	return uf_filemap_nopage(vma, address, type);
}

static const struct uf_vm_operations nopage_ops = { .nopage = np_nopage };

static uint64_t faults(struct uf_vma *vma)
{
	struct uf_stats st;

	CHECK_RET(uf_vma_stats(vma, &st), 0);
	return st.minor_faults + st.major_faults;
}

static void expect_pages(const char *what, const unsigned char *p, uint64_t pgoff, size_t n,
			 bool zeros)
{
	unsigned char *want = malloc(n * PG);
	size_t i;

	CHECK(want, "out of memory");
	for (i = 0; i < n * PG; i++)
		want[i] = zeros ? 0 : ut_pattern(pgoff * PG + i);
	tt_expect_bytes(what, p, want, n * PG);
	free(want);
}

static void run(struct uf_mm *mm, enum ut_store s)
{
	const char *name = ut_store_names[s];
	struct uf_object *obj;
	struct uf_vma *vma;
	unsigned char *np, *sh, v;
	char path[256] = "", what[96];
	bool zeros = s == UT_STORE_MEM;
	uint64_t before;
	int type;

	/* a memory object from ut_object() is all cached: use an empty one */
	if (zeros)
		CHECK_RET(uf_object_create_mem(mm, OBJ_PAGES * PG, &obj), 0);
	else
		obj = ut_object(mm, s, OBJ_PAGES * PG, path, sizeof(path));

	/* nopage-only mapping at object page 20: pages 20-23, then EOF */
	CHECK_RET(uf_mmap(mm, MAP_PAGES * PG, PROT_READ, UF_MAP_SHARED, obj, 20 * PG,
			  (void **)&np), 0);
	vma = uf_find_vma(mm, np);
	CHECK_RET(uf_vma_set_ops(vma, &nopage_ops), 0);
	snprintf(what, sizeof(what), "%s: nopage mapping", name);
	expect_pages(what, np, 20, 4, zeros);
	CHECK(faults(vma) >= 1, "%s: nopage mapping took no fault", name);
	tt_expect_sigbus(what, np + 4 * PG + 9);
	type = UF_FAULT_MINOR;
	CHECK(uf_filemap_nopage(vma, (unsigned long)np + MAP_PAGES * PG, &type) == NULL, "nopage");
	CHECK(type == UF_FAULT_SIGBUS, "%s: nopage outside the VMA: type %d", name, type);
	CHECK_RET(uf_filemap_populate(vma, (unsigned long)np, PG, 0, 1, 0), -EINVAL);
	expect_pages(what, np, 20, 4, zeros);

	/* populate on a shared writable mapping */
	CHECK_RET(uf_mmap(mm, MAP_PAGES * PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&sh), 0);
	vma = uf_find_vma(mm, sh);
	CHECK_RET(uf_filemap_populate(vma, (unsigned long)sh + 2 * PG, 3 * PG, PROT_READ, 10, 0),
		  -EINVAL);
	CHECK_RET(uf_filemap_populate(vma, (unsigned long)sh + 2 * PG + 1, 3 * PG, 0, 10, 0),
		  -EINVAL);
	CHECK_RET(uf_filemap_populate(vma, (unsigned long)sh + 2 * PG, 3 * PG + 5, 0, 10, 0),
		  -EINVAL);
	CHECK_RET(uf_filemap_populate(vma, (unsigned long)sh + 6 * PG, 3 * PG, 0, 10, 0), -EINVAL);
	CHECK_RET(uf_filemap_populate(vma, (unsigned long)sh + 2 * PG, 3 * PG, 0, 10, 0), 0);
	before = faults(vma);
	snprintf(what, sizeof(what), "%s: populated window", name);
	expect_pages(what, sh + 2 * PG, 10, 3, zeros);
	CHECK(faults(vma) == before, "%s: populated pages faulted: %lu faults", name,
	      (unsigned long)(faults(vma) - before));
	snprintf(what, sizeof(what), "%s: linear part", name);
	expect_pages(what, sh, 0, 2, zeros);
	expect_pages(what, sh + 5 * PG, 5, 3, zeros);

	sh[3 * PG + 77] = 0xE7;		/* object 11p+77 */
	CHECK_RET(uf_object_pread(obj, &v, 1, 11 * PG + 77), 1);
	CHECK(v == 0xE7, "%s: write through a populated window: %#x", name, v);
	CHECK_RET(uf_object_pread(obj, &v, 1, 3 * PG + 77), 1);
	CHECK(v == (zeros ? 0 : ut_pattern(3 * PG + 77)), "%s: write went linear", name);
	CHECK_RET(uf_msync(mm, sh, MAP_PAGES * PG, UF_MS_SYNC), 0);
	if (path[0]) {
		struct tt t = { .name = name };

		memcpy(t.path, path, sizeof(path));
		CHECK(tt_store_pread(&t, &v, 1, 11 * PG + 77) == 1 && v == 0xE7,
		      "%s: file byte after msync %#x", name, v);
	}

	CHECK_RET(uf_munmap(mm, np, MAP_PAGES * PG), 0);
	CHECK_RET(uf_munmap(mm, sh, MAP_PAGES * PG), 0);
	uf_object_put(obj);
	if (path[0])
		unlink(path);
	printf("%s: ok\n", name);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	int s;

	ut_catch_signals();
	for (s = 0; s < UT_NSTORES; s++)
		run(mm, (enum ut_store)s);
	uf_mm_destroy(mm);
	return 0;
}
