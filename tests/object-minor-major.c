/* Description: fault() is called only for pages missing from the object's
 * cache, on every store: a page another mapping already faulted in is
 * served by the kernel with no event (no new fault of any kind, no store
 * read), and uf_object_pread() of a missing page fills the cache so a
 * later mapping access is no fault at all; a missing page is one major
 * fault; uf_object_pwrite() of a whole page fills it too.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	64
#define SIZE	(NPAGES * UF_PAGE_SIZE)

static void touch(const char *name, unsigned char *map, uint64_t page, unsigned char want_byte)
{
	unsigned char v;
	struct ut_fault f;

	CHECK(ut_read(map + page * UF_PAGE_SIZE + 17, &v, &f) == 0, "%s: page %lu: signal %d",
	      name, (unsigned long)page, f.sig);
	CHECK(v == want_byte, "%s: page %lu byte %u, want %u", name, (unsigned long)page, v, want_byte);
}

#define PAT(pg)	ut_pattern((uint64_t)(pg) * UF_PAGE_SIZE + 17)

static void run(struct uf_mm *mm, struct uf_object *obj, const char *name, bool cached)
{
	unsigned char *a, *b, buf[8], page[UF_PAGE_SIZE];
	struct uf_stats sa, sb, m0, m1;

	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&a), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_PRIVATE, obj, 0, (void **)&b), 0);

	/* a missing page (not the first: that starts a readahead window) */
	m0 = os_mm_stats(mm);
	touch(name, a, 5, PAT(5));
	sa = os_vma_stats(mm, a);
	if (cached) {
		CHECK(os_events(&sa) == 0, "%s: %lu events on a cached object", name,
		      (unsigned long)os_events(&sa));
	} else {
		CHECK(sa.major_faults == 1 && os_events(&sa) == 1, "%s: first touch: major %lu events %lu",
		      name, (unsigned long)sa.major_faults, (unsigned long)os_events(&sa));
	}
	/* the same page through the second mapping: no event */
	m0 = os_mm_stats(mm);
	touch(name, b, 5, PAT(5));
	sb = os_vma_stats(mm, b);
	m1 = os_mm_stats(mm);
	CHECK(os_events(&sb) == 0, "%s: cached page: %lu events (major %lu minor %lu)", name,
	      (unsigned long)os_events(&sb), (unsigned long)sb.major_faults,
	      (unsigned long)sb.minor_faults);
	CHECK(m1.pages_read == m0.pages_read && os_events(&m1) == os_events(&m0),
	      "%s: cached page read %lu pages", name, (unsigned long)(m1.pages_read - m0.pages_read));

	/* pread of a missing page fills it: no fault afterwards */
	CHECK_RET(uf_object_pread(obj, buf, 8, 30 * UF_PAGE_SIZE + 17), 8);
	CHECK(buf[0] == PAT(30), "%s: pread byte", name);
	m0 = os_mm_stats(mm);
	touch(name, a, 30, PAT(30));
	touch(name, b, 30, PAT(30));
	m1 = os_mm_stats(mm);
	CHECK(os_events(&m1) == os_events(&m0) && m1.pages_read == m0.pages_read,
	      "%s: page filled by pread: %lu events, %lu pages read", name,
	      (unsigned long)(os_events(&m1) - os_events(&m0)),
	      (unsigned long)(m1.pages_read - m0.pages_read));

	/* a whole-page pwrite fills it too */
	memset(page, 0x3c, sizeof(page));
	CHECK_RET(uf_object_pwrite(obj, page, UF_PAGE_SIZE, 40 * UF_PAGE_SIZE), UF_PAGE_SIZE);
	m0 = os_mm_stats(mm);
	touch(name, b, 40, 0x3c);
	touch(name, a, 40, 0x3c);
	m1 = os_mm_stats(mm);
	CHECK(os_events(&m1) == os_events(&m0) && m1.pages_read == m0.pages_read,
	      "%s: page filled by pwrite: %lu events, %lu pages read", name,
	      (unsigned long)(os_events(&m1) - os_events(&m0)),
	      (unsigned long)(m1.pages_read - m0.pages_read));

	/* the second mapping faults a missing page itself: its own major */
	m0 = os_mm_stats(mm);
	touch(name, b, 50, PAT(50));
	sb = os_vma_stats(mm, b);
	m1 = os_mm_stats(mm);
	if (!cached)
		CHECK(sb.major_faults == 1 && m1.major_faults == m0.major_faults + 1,
		      "%s: second mapping's own miss: major %lu", name, (unsigned long)sb.major_faults);
	sa = os_vma_stats(mm, a);
	touch(name, a, 50, PAT(50));
	m1 = os_vma_stats(mm, a);
	CHECK(os_events(&m1) == os_events(&sa), "%s: first mapping faulted on a cached page", name);
	printf("%s: a: major %lu minor %lu; b: major %lu minor %lu\n", name,
	       (unsigned long)os_vma_stats(mm, a).major_faults,
	       (unsigned long)os_vma_stats(mm, a).minor_faults,
	       (unsigned long)os_vma_stats(mm, b).major_faults,
	       (unsigned long)os_vma_stats(mm, b).minor_faults);
	CHECK_RET(uf_munmap(mm, a, SIZE), 0);
	CHECK_RET(uf_munmap(mm, b, SIZE), 0);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct os_store st;
	struct uf_object *obj;
	int s;

	ut_catch_signals();
	os_watchdog(30);
	for (s = 0; s < UT_NSTORES; s++) {
		char path[256];

		obj = ut_object(mm, s, SIZE, path, sizeof(path));
		/* ut_object() fills the memory store through the cache */
		run(mm, obj, ut_store_names[s], s == UT_STORE_MEM);
		uf_object_put(obj);
		if (path[0])
			unlink(path);
	}
	os_init(&st, SIZE);
	obj = os_object(mm, &st);
	run(mm, obj, "recording", false);
	uf_object_put(obj);
	os_fini(&st);
	uf_mm_destroy(mm);
	return 0;
}
