/* Description: a prefetch fills the head of the set itself before
 * uf_object_prefetch() returns: the set's first 32 pages in recorded
 * order, and from a file in memory (tmpfs) 15% of its pages in all (read
 * by the calling thread itself: /proc/thread-self/io), are then mapped in
 * the program's mapping (/proc/self/pagemap) and read the file's bytes
 * with no fault of ufault's, while the fillers bring in the rest.  Where
 * this machine's first touch of a page mapped ahead is cheap (measured
 * here as the prefetch measures it), the head is the set: 90% of it at
 * least is mapped when the call returns. */
#define _GNU_SOURCE
#include "ws-test.h"

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NSET	1024
#define HEAD	32	/* a replay's first batch (UF_WS_BATCH_FIRST) */
#define HEAD_ALL (NSET * 15 / 100)	/* a file's head (PF_HEAD_PCT) */
#define CHEAP_NS 100	/* a first touch this cheap asks for the whole set */

/* scattered, each once (an odd stride mod a power of 2) */
static uint64_t set_page(size_t i)
{
	return (i * 2654435761ULL + 777) % NPAGES;
}

/* Bytes this thread's system calls have read (/proc/thread-self/io's
 * rchar), or -1 where the kernel does not count them. */
static long long thread_rchar(void)
{
	FILE *f = fopen("/proc/thread-self/io", "r");
	long long v = -1;
	char line[128];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %lld", &v) == 1)
			break;
	fclose(f);
	return v;
}

int main(void)
{
	char path[256], rec[300], scratch[300];
	uint64_t pages[NSET];
	struct uf_object *obj;
	unsigned char *map, v;
	struct ut_fault f;
	struct uf_stats st;
	struct uf_mm *mm;
	long long rchar;
	size_t i, mapped;
	uint64_t touch;
	int fd;

	ut_catch_signals();
	touch = ws_touch_ns();
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));	/* (in memory) */
	snprintf(rec, sizeof(rec), "%s.ws", path);
	snprintf(scratch, sizeof(scratch), "%s.scratch", path);
	for (i = 0; i < NSET; i++)
		pages[i] = set_page(i);
	CHECK_RET(ws_record_pages(path, SIZE, rec, pages, NSET), NSET);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	rchar = thread_rchar();
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	if (rchar >= 0) {
		/* the head was read by this very thread, beside the fillers:
		 * the file's pages (and the record's few bytes) */
		rchar = thread_rchar() - rchar;
		printf("this thread read %lld bytes in the call (the head: %lu at least)\n",
		       rchar, (unsigned long)(HEAD_ALL * PG));
		CHECK(rchar >= (long long)(HEAD_ALL * PG), "the call read %lld bytes itself",
		      rchar);
	}
	/* at once: what the call left in */
	mapped = ws_pages_mapped(map, pages, HEAD);
	printf("%zu of the set's first %d pages mapped when the prefetch returned\n", mapped,
	       HEAD);
	CHECK(mapped == HEAD, "%zu of the first %d pages mapped", mapped, HEAD);
	mapped = ws_pages_mapped(map, pages, NSET);
	printf("%zu of the set's %d pages mapped when it returned (the head: %d at least)\n",
	       mapped, NSET, HEAD_ALL);
	CHECK(mapped >= HEAD_ALL, "%zu of the set's pages mapped", mapped);
	if (touch && touch < CHEAP_NS) {
		/* the program's touches cost next to nothing here: the
		 * call fills the set, all but the last few pages */
		printf("a first touch costs %lu ns here: the head is the set (%d of %d "
		       "pages at least)\n", (unsigned long)touch, NSET * 9 / 10, NSET);
		CHECK(mapped >= NSET * 9 / 10, "%zu of the set's pages mapped", mapped);
	} else {
		printf("a first touch costs %lu ns here: no more asked than the least "
		       "head\n", (unsigned long)touch);
	}
	for (i = 0; i < HEAD; i++) {
		uint64_t off = pages[i] * PG + 7;

		CHECK(ut_read(map + off, &v, &f) == 0 && v == ut_pattern(off),
		      "page %lu: wrong byte", (unsigned long)pages[i]);
	}
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.major_faults == 0, "%lu major faults reading the head",
	      (unsigned long)st.major_faults);

	/* the rest comes in as before */
	ws_wait_prefetch(obj, scratch);
	for (i = HEAD; i < NSET; i++) {
		uint64_t off = pages[i] * PG + 7;

		CHECK(ut_read(map + off, &v, &f) == 0 && v == ut_pattern(off),
		      "page %lu: wrong byte", (unsigned long)pages[i]);
	}
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	printf("%lu major faults over the set\n", (unsigned long)st.major_faults);
	CHECK(st.major_faults == 0, "%lu major faults", (unsigned long)st.major_faults);

	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	close(fd);
	unlink(rec);
	unlink(path);
	return 0;
}
