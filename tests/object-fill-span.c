/* Description: a readahead window whose holes lie between present pages
 * is read from the store in one read per span (holes at most 8 present
 * pages apart), and the fill copies in only the holes: pages written
 * before (present, dirty, different from the store) keep their bytes.  A
 * remote store pays a round trip per read.  A recording store counts the
 * read calls.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	256
#define SIZE	((uint64_t)NPAGES * UF_PAGE_SIZE)
#define MARK	0xab

static void write_page(struct uf_object *obj, uint64_t pg)
{
	static unsigned char buf[UF_PAGE_SIZE];

	memset(buf, MARK, sizeof(buf));
	CHECK_RET(uf_object_pwrite(obj, buf, sizeof(buf), pg * UF_PAGE_SIZE),
		  (ssize_t)sizeof(buf));
}

/* Every byte of pages [first, first + n) of @map (object page @pgoff0 at
 * @map) is the store's pattern, or MARK on the pages in @written. */
static void check_pages(const unsigned char *map, uint64_t pgoff0, uint64_t first, uint64_t n,
			const unsigned char *written)
{
	uint64_t pg, i;

	for (pg = first; pg < first + n; pg++) {
		const unsigned char *p = map + (pg - pgoff0) * UF_PAGE_SIZE;

		for (i = 0; i < UF_PAGE_SIZE; i += 511) {
			unsigned char want = written[pg] ? MARK : ut_pattern(pg * UF_PAGE_SIZE + i);

			CHECK(p[i] == want, "page %lu byte %lu = %#x, want %#x",
			      (unsigned long)pg, (unsigned long)i, p[i], want);
		}
	}
}

static size_t reads_since(struct os_store *st, size_t from, struct os_io *out, size_t max)
{
	size_t n, i;

	pthread_mutex_lock(&st->lock);
	n = st->nreads - from;
	for (i = 0; i < n && i < max; i++)
		out[i] = st->reads[from + i];
	pthread_mutex_unlock(&st->lock);
	return n;
}

int main(void)
{
	struct uf_mm_config cfg = { .flags = UF_MM_NO_HUGE };
	unsigned char written[NPAGES] = { 0 };
	struct os_io r[16];
	struct os_store st;
	struct uf_object *obj;
	struct uf_stats vs;
	struct uf_mm *mm;
	unsigned char *map;
	size_t from, n;
	uint64_t pg;

	ut_catch_signals();
	os_watchdog(30);
	mm = ut_mm_create(&cfg);
	os_init(&st, SIZE);
	obj = os_object(mm, &st);

	/* 1. window [0, 16): holes between single written pages 3, 6, 9, 12 */
	for (pg = 3; pg <= 12; pg += 3) {
		write_page(obj, pg);
		written[pg] = 1;
	}
	from = st.nreads;
	CHECK_RET(uf_mmap(mm, 64 * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0,
			  (void **)&map), 0);
	CHECK(map[0] == ut_pattern(0), "page 0 byte 0");
	n = reads_since(&st, from, r, 16);
	printf("window [0, 16) with 4 written pages: %zu store read(s)", n);
	if (n)
		printf(", the first [%lu, +%zu)", (unsigned long)r[0].off, r[0].len);
	printf("\n");
	CHECK(n == 1, "%zu store reads for one window, want 1 (one per span)", n);
	CHECK(r[0].off == 0 && r[0].len == 16 * UF_PAGE_SIZE, "read [%lu, +%zu), want [0, +%lu)",
	      (unsigned long)r[0].off, r[0].len, (unsigned long)(16 * UF_PAGE_SIZE));
	vs = os_vma_stats(mm, map);
	CHECK(vs.major_faults == 1 && vs.readahead_pages == 11,
	      "major %lu readahead %lu, want 1 and 11 (16 pages less the 4 written)",
	      (unsigned long)vs.major_faults, (unsigned long)vs.readahead_pages);
	check_pages(map, 0, 0, 16, written);
	CHECK_RET(uf_munmap(mm, map, 64 * UF_PAGE_SIZE), 0);

	/* 2. window [64, 80): ten written pages 66..75, more than the gap a
	 * span bridges: two reads, [64, 66) and [76, 80) */
	for (pg = 66; pg <= 75; pg++) {
		write_page(obj, pg);
		written[pg] = 1;
	}
	from = st.nreads;
	CHECK_RET(uf_mmap(mm, 64 * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj,
			  64 * UF_PAGE_SIZE, (void **)&map), 0);
	CHECK(map[0] == ut_pattern(64 * UF_PAGE_SIZE), "page 64 byte 0");
	n = reads_since(&st, from, r, 16);
	printf("window [64, 80) with 10 written pages: %zu store read(s)\n", n);
	CHECK(n == 2, "%zu store reads, want 2", n);
	CHECK(r[0].off == 64 * UF_PAGE_SIZE && r[0].len == 2 * UF_PAGE_SIZE &&
	      r[1].off == 76 * UF_PAGE_SIZE && r[1].len == 4 * UF_PAGE_SIZE,
	      "reads [%lu, +%zu) [%lu, +%zu), want pages [64, 66) and [76, 80)",
	      (unsigned long)r[0].off, r[0].len, (unsigned long)r[1].off, r[1].len);
	check_pages(map, 64, 64, 16, written);
	CHECK_RET(uf_munmap(mm, map, 64 * UF_PAGE_SIZE), 0);

	/* 3. a store error on a cached page inside a span: the read over it
	 * fails, the runs of holes around it are read alone, and a pread of
	 * the whole range works (it needs nothing from that page) */
	write_page(obj, 130);
	written[130] = 1;
	pthread_mutex_lock(&st.lock);
	st.bad_page = 130;
	pthread_mutex_unlock(&st.lock);
	from = st.nreads;
	{
		static unsigned char buf[16 * UF_PAGE_SIZE];

		CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), 128 * UF_PAGE_SIZE),
			  (ssize_t)sizeof(buf));
		check_pages(buf, 128, 128, 16, written);
	}
	n = reads_since(&st, from, r, 16);
	printf("pread [128, 144) over a cached page the store fails: %zu store read(s)\n", n);
	CHECK(n == 3 && r[0].ret == -EIO && r[1].off == 128 * UF_PAGE_SIZE &&
	      r[1].len == 2 * UF_PAGE_SIZE && r[2].off == 131 * UF_PAGE_SIZE &&
	      r[2].len == 13 * UF_PAGE_SIZE,
	      "%zu reads, want the span (failed), then [128, 130) and [131, 144)", n);
	pthread_mutex_lock(&st.lock);
	st.bad_page = UINT64_MAX;
	pthread_mutex_unlock(&st.lock);

	/* the written pages reach the store as written, the rest unchanged */
	CHECK_RET(uf_object_sync(obj), 0);
	for (pg = 0; pg < 144; pg++)
		CHECK(st.data[pg * UF_PAGE_SIZE + 7] ==
		      (written[pg] ? MARK : ut_pattern(pg * UF_PAGE_SIZE + 7)),
		      "store page %lu", (unsigned long)pg);

	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	printf("ok\n");
	return 0;
}
