/* Description: a prefetch of a read-only object maps the set's pages in
 * the program's mappings that its copy cannot fill (the shared mapping of
 * a read-only object, which is the cache mapped private, and a private
 * mapping): once it ends, the set's pages are in both mappings' page
 * tables (/proc/self/pagemap) and reading them takes no fault at all, not
 * even the kernel's; the bytes are the file's, and a write through the
 * private mapping stays there (the cache and pread keep the file's bytes).
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>
#include <sys/resource.h>

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NSET	1024

/* scattered, each once (an odd stride mod a power of 2) */
static uint64_t set_page(size_t i)
{
	return (i * 2654435761ULL + 777) % NPAGES;
}

/* One load per page of the set in each mapping, uninstrumented (a
 * sanitizer's shadow memory would fault on its own). */
__attribute__((no_sanitize_address, no_sanitize("thread"), noinline))
static unsigned int load_set(const unsigned char *a, const unsigned char *b, const uint64_t *pages)
{
	unsigned int sum = 0;
	size_t i;

	for (i = 0; i < NSET; i++)
		sum += *(const volatile unsigned char *)(a + pages[i] * PG + 5) +
		       *(const volatile unsigned char *)(b + pages[i] * PG + 5);
	return sum;
}

static long thread_faults(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_THREAD, &ru) == 0, "getrusage");
	return ru.ru_minflt + ru.ru_majflt;
}

int main(void)
{
	char path[256], rec[300], scratch[300];
	unsigned char *shared, *priv, v;
	uint64_t pages[NSET];
	struct uf_object *obj;
	struct ut_fault f;
	struct uf_stats st;
	struct uf_mm *mm;
	size_t i, ms, mp;
	unsigned int sum;
	long faults;
	int fd;

	ut_catch_signals();
	fd = ut_make_file("/var/tmp", SIZE, path, sizeof(path));
	snprintf(rec, sizeof(rec), "%s.ws", path);
	snprintf(scratch, sizeof(scratch), "%s.scratch", path);
	for (i = 0; i < NSET; i++)
		pages[i] = set_page(i);
	CHECK_RET(ws_record_pages(path, SIZE, rec, pages, NSET), NSET);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&shared), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0,
			  (void **)&priv), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);

	/* (best effort: a prefetch that met a busy table leaves a piece to
	 * the program's faults) */
	ms = ws_pages_mapped(shared, pages, NSET);
	mp = ws_pages_mapped(priv, pages, NSET);
	printf("%zu and %zu of %d pages of the set mapped by the prefetch\n", ms, mp, NSET);
	CHECK(ms >= NSET * 9 / 10 && mp >= NSET * 9 / 10,
	      "shared %zu, private %zu of %d pages mapped", ms, mp, NSET);

	faults = thread_faults();
	sum = load_set(shared, priv, pages);
	faults = thread_faults() - faults;
	printf("%ld faults reading the set twice over (sum %u)\n", faults, sum);
	CHECK(faults <= (long)(2 * NSET - ms - mp) + 8, "%ld faults, %zu + %zu pages mapped",
	      faults, ms, mp);
	for (i = 0; i < NSET; i++) {
		uint64_t off = pages[i] * PG + 5;

		CHECK(ut_read(shared + off, &v, &f) == 0 && v == ut_pattern(off),
		      "shared page %lu: wrong byte", (unsigned long)pages[i]);
		CHECK(ut_read(priv + off, &v, &f) == 0 && v == ut_pattern(off),
		      "private page %lu: wrong byte", (unsigned long)pages[i]);
	}
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.major_faults == 0, "%lu major faults", (unsigned long)st.major_faults);

	/* a write through the private mapping is its own */
	priv[pages[0] * PG + 5] = (unsigned char)~ut_pattern(pages[0] * PG + 5);
	CHECK(shared[pages[0] * PG + 5] == ut_pattern(pages[0] * PG + 5),
	      "a private write reached the shared mapping");
	CHECK_RET(uf_object_pread(obj, &v, 1, pages[0] * PG + 5), 1);
	CHECK(v == ut_pattern(pages[0] * PG + 5), "a private write reached the cache");

	CHECK_RET(uf_munmap(mm, priv, SIZE), 0);
	CHECK_RET(uf_munmap(mm, shared, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	close(fd);
	unlink(rec);
	unlink(path);
	return 0;
}
