/* Description: a writable shared mapping of an object whose pages are
 * already cached maps them at once: right after uf_mmap() every cached page
 * is mapped (/proc/self/pagemap) and no other (fault-around is off for
 * write-protect registration, so without this each page would take its own
 * fault), the bytes are right, and dirty tracking stays exact:
 * a uf_msync() after the reads writes nothing to the store, and after one
 * written byte it writes exactly that page.  Huge extents are off: a
 * collapse of the fully cached first 2 MiB would unmap its pages while the
 * test looks (they come back as one PMD at the next touch).
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES	1024
#define SIZE	(NPAGES * UF_PAGE_SIZE)

/* Is the page at @addr mapped (present in this process's page table)? */
static bool mapped(int pagemap, const void *addr)
{
	uint64_t e = 0;

	CHECK(pread(pagemap, &e, sizeof(e), (off_t)((uintptr_t)addr / UF_PAGE_SIZE * 8)) ==
	      sizeof(e), "read /proc/self/pagemap");
	return (e >> 63) & 1;
}

int main(void)
{
	struct uf_mm *mm;
	struct os_store st;
	struct uf_object *obj;
	unsigned int count[NPAGES];
	unsigned char *buf, *map;
	uint64_t p;
	size_t w0;
	int i, pagemap;

	ut_catch_signals();
	os_watchdog(60);
	if (!os_have_wp_async()) {
		printf("no asynchronous write-protect here: dirty tracking is not exact\n");
		return UT_SKIP;
	}
	mm = ut_mm_create(&(struct uf_mm_config){ .flags = UF_MM_NO_HUGE });
	os_init(&st, SIZE);
	obj = os_object(mm, &st);
	buf = malloc(SIZE);
	CHECK(buf, "out of memory");
	/* everything but the last 8 pages in the cache */
	CHECK_RET(uf_object_pread(obj, buf, SIZE - 8 * UF_PAGE_SIZE, 0),
		  SIZE - 8 * UF_PAGE_SIZE);

	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&map), 0);
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	CHECK(pagemap >= 0, "open /proc/self/pagemap");
	for (p = 0; p < NPAGES; p++)
		CHECK(mapped(pagemap, map + p * UF_PAGE_SIZE) == (p < NPAGES - 8),
		      "page %lu (%s) %s after uf_mmap", (unsigned long)p,
		      p < NPAGES - 8 ? "cached" : "not cached",
		      p < NPAGES - 8 ? "not mapped" : "mapped");
	close(pagemap);
	for (p = 0; p < NPAGES; p++) {
		uint64_t off = p * UF_PAGE_SIZE + (p * 29) % UF_PAGE_SIZE;

		CHECK(map[off] == ut_pattern(off), "page %lu: byte %u, want %u", (unsigned long)p,
		      map[off], ut_pattern(off));
	}

	w0 = os_nwrites(&st);
	CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), 0);
	CHECK(os_nwrites(&st) == w0, "msync after reads only: %zu store writes",
	      os_nwrites(&st) - w0);

	map[100 * UF_PAGE_SIZE + 7] ^= 0xff;
	map[NPAGES * UF_PAGE_SIZE - 1] ^= 0xff;		/* a page faulted in, not populated */
	CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), 0);
	os_written_pages(&st, w0, count, NPAGES, SIZE);
	for (i = 0; i < NPAGES; i++)
		CHECK(count[i] == (i == 100 || i == NPAGES - 1), "page %d written %u times", i,
		      count[i]);
	pthread_mutex_lock(&st.lock);
	CHECK(st.data[100 * UF_PAGE_SIZE + 7] == (unsigned char)~ut_pattern(100 * UF_PAGE_SIZE + 7),
	      "the written byte did not reach the store");
	pthread_mutex_unlock(&st.lock);

	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	free(buf);
	return 0;
}
