/* Description: a prefetch into a writable object mapped shared and
 * writable copies the set's pages straight into that mapping (most of
 * them are in its page tables once it ends, /proc/self/pagemap), and a write
 * there afterwards is not lost: after uf_msync() the file holds every
 * write, pages of the set not written keep the file's bytes, and the
 * touches of the prefetched set take no major fault.  Disk file store.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NSET	1024

/* scattered, each once (an odd stride mod a power of 2) */
static uint64_t set_page(size_t i)
{
	return (i * 2654435761ULL + 777) % NPAGES;
}

int main(void)
{
	char path[256], rec[300], scratch[300];
	uint64_t pages[NSET];
	unsigned char *map, v;
	struct uf_object *obj;
	struct ut_fault f;
	struct uf_stats st;
	struct uf_mm *mm;
	size_t i;
	int fd;

	ut_catch_signals();
	fd = ut_make_file("/var/tmp", SIZE, path, sizeof(path));
	snprintf(rec, sizeof(rec), "%s.ws", path);
	snprintf(scratch, sizeof(scratch), "%s.scratch", path);
	for (i = 0; i < NSET; i++)
		pages[i] = set_page(i);
	CHECK_RET(ws_record_pages(path, SIZE, rec, pages, NSET), NSET);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	{
		size_t mapped = ws_pages_mapped(map, pages, NSET);

		printf("%zu of %d pages of the set mapped by the prefetch\n", mapped, NSET);
		CHECK(mapped >= NSET / 2, "%zu of %d pages mapped", mapped, NSET);
	}
	/* write every other page of the set, read the rest */
	for (i = 0; i < NSET; i++) {
		uint64_t off = pages[i] * PG + 5;

		if (i % 2 == 0) {
			map[off] = (unsigned char)~ut_pattern(off);
		} else {
			CHECK(ut_read(map + off, &v, &f) == 0 && v == ut_pattern(off),
			      "page %lu: wrong byte", (unsigned long)pages[i]);
		}
	}
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.major_faults == 0, "%lu major faults over the prefetched set",
	      (unsigned long)st.major_faults);
	CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), 0);
	for (i = 0; i < NSET; i++) {
		uint64_t off = pages[i] * PG + 5;
		unsigned char want = i % 2 == 0 ? (unsigned char)~ut_pattern(off) : ut_pattern(off);

		CHECK(pread(fd, &v, 1, (off_t)off) == 1 && v == want,
		      "file page %lu: %#x, want %#x", (unsigned long)pages[i], v, want);
	}
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	close(fd);
	unlink(rec);
	unlink(path);
	return 0;
}
