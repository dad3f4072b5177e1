/* Description: uf_msync(UF_MS_SYNC) and uf_object_sync() write exactly the
 * dirty pages -- pages written through a shared mapping and pages written
 * with uf_object_pwrite() -- once each and nothing else, recorded by a
 * store that logs every write call; a sync with no new writes writes
 * nothing; a page written again after a sync is written by the next one;
 * uf_msync() of a range writes only the dirty pages in it; dirty pages
 * survive uf_munmap() and reach the store on the next sync or the last
 * uf_object_put(); writes through a private mapping never reach the store.
 * Run with asynchronous write-protect (exact) and with UF_MM_NO_WP_ASYNC
 * (every cached page may be written, but each dirty one must be).
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	65
#define SIZE	(64 * UF_PAGE_SIZE + 100)
#define MAPLEN	(66 * UF_PAGE_SIZE)

struct ctx {
	const char *mode;
	bool exact;
	struct uf_mm *mm;
	struct os_store st;
	struct uf_object *obj;
	unsigned char model[SIZE];
	unsigned int count[NPAGES];
	size_t mark;			/* first write-log entry of this step */
	uint64_t written_stat;		/* mm pages_written at mark */
};

static void begin(struct ctx *c)
{
	c->mark = os_nwrites(&c->st);
	c->written_stat = os_mm_stats(c->mm).pages_written;
}

/* The writes since begin() covered exactly @pages (exact mode), or at least
 * them and each page at most once (fallback mode). */
static void expect_written(struct ctx *c, const char *step, const uint64_t *pages, size_t n)
{
	bool want[NPAGES] = { false };
	uint64_t p, total = 0;
	size_t i;

	os_written_pages(&c->st, c->mark, c->count, NPAGES, SIZE);
	for (i = 0; i < n; i++)
		want[pages[i]] = true;
	for (p = 0; p < NPAGES; p++) {
		total += c->count[p];
		if (want[p])
			CHECK(c->count[p] == 1, "%s: %s: dirty page %lu written %u times",
			      c->mode, step, (unsigned long)p, c->count[p]);
		else if (c->exact)
			CHECK(c->count[p] == 0, "%s: %s: clean page %lu written %u times",
			      c->mode, step, (unsigned long)p, c->count[p]);
		else
			CHECK(c->count[p] <= 1, "%s: %s: page %lu written %u times",
			      c->mode, step, (unsigned long)p, c->count[p]);
	}
	CHECK(os_mm_stats(c->mm).pages_written - c->written_stat == total,
	      "%s: %s: pages_written grew by %lu, store saw %lu pages", c->mode, step,
	      (unsigned long)(os_mm_stats(c->mm).pages_written - c->written_stat),
	      (unsigned long)total);
	printf("%s: %s: %lu pages written\n", c->mode, step, (unsigned long)total);
}

static void expect_store(struct ctx *c, const char *step)
{
	uint64_t i;

	pthread_mutex_lock(&c->st.lock);
	for (i = 0; i < SIZE; i++)
		CHECK(c->st.data[i] == c->model[i], "%s: %s: store byte %lu = %u, want %u",
		      c->mode, step, (unsigned long)i, c->st.data[i], c->model[i]);
	pthread_mutex_unlock(&c->st.lock);
}

static void map_write(struct ctx *c, unsigned char *map, uint64_t off, unsigned char v)
{
	struct ut_fault f;

	CHECK(os_poke(map + off, v, &f) == 0, "%s: write at %lu: signal %d", c->mode,
	      (unsigned long)off, f.sig);
	c->model[off] = v;
}

static void obj_write(struct ctx *c, uint64_t off, size_t len, unsigned char v)
{
	unsigned char buf[2 * UF_PAGE_SIZE];

	memset(buf, v, len);
	CHECK_RET(uf_object_pwrite(c->obj, buf, len, off), len);
	memset(c->model + off, v, len);
}

static void run(bool no_wp_async)
{
	struct uf_mm_config cfg = { .flags = no_wp_async ? UF_MM_NO_WP_ASYNC : 0 };
	struct ctx *c = calloc(1, sizeof(*c));
	unsigned char *map, *priv, *map2, v;
	struct ut_fault f;
	uint64_t i;

	CHECK(c, "out of memory");
	c->mode = no_wp_async ? "no-wp-async" : "wp-async";
	c->exact = !no_wp_async && os_have_wp_async();
	if (!no_wp_async && !c->exact)
		printf("kernel without asynchronous write-protect: checking the fallback only\n");
	c->mm = ut_mm_create(&cfg);
	os_init(&c->st, SIZE);
	memcpy(c->model, c->st.data, SIZE);
	c->obj = os_object(c->mm, &c->st);

	CHECK_RET(uf_mmap(c->mm, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c->obj, 0,
			  (void **)&map), 0);
	/* every page cached (and mapped) but clean */
	for (i = 0; i < SIZE; i += UF_PAGE_SIZE) {
		CHECK(ut_read(map + i, &v, &f) == 0, "%s: read page %lu: signal %d", c->mode,
		      (unsigned long)(i / UF_PAGE_SIZE), f.sig);
		CHECK(v == c->model[i], "%s: byte %lu = %u", c->mode, (unsigned long)i, v);
	}
	CHECK(os_nwrites(&c->st) == 0, "%s: reading wrote to the store", c->mode);

	/* a sync with nothing dirty writes nothing */
	begin(c);
	CHECK_RET(uf_object_sync(c->obj), 0);
	expect_written(c, "clean sync", NULL, 0);

	map_write(c, map, 3 * UF_PAGE_SIZE + 1, 0xa1);
	map_write(c, map, 4 * UF_PAGE_SIZE + 4095, 0xa2);
	map_write(c, map, 10 * UF_PAGE_SIZE, 0xa3);
	map_write(c, map, 64 * UF_PAGE_SIZE + 50, 0xa4);	/* the partial last page */
	obj_write(c, 20 * UF_PAGE_SIZE + 4000, 200, 0xb1);	/* pages 20 and 21 */
	obj_write(c, 40 * UF_PAGE_SIZE, UF_PAGE_SIZE, 0xb2);
	obj_write(c, 12 * UF_PAGE_SIZE + 7, 1, 0xb3);

	/* msync of the first 16 pages: the dirty pages there, nothing else */
	begin(c);
	CHECK_RET(uf_msync(c->mm, map, 16 * UF_PAGE_SIZE, UF_MS_SYNC), 0);
	expect_written(c, "msync [0,16)", (const uint64_t[]){ 3, 4, 10, 12 }, 4);

	begin(c);
	CHECK_RET(uf_object_sync(c->obj), 0);
	expect_written(c, "object sync", (const uint64_t[]){ 20, 21, 40, 64 }, 4);
	expect_store(c, "after first syncs");

	if (c->exact) {
		begin(c);
		CHECK_RET(uf_object_sync(c->obj), 0);
		CHECK_RET(uf_msync(c->mm, map, MAPLEN, UF_MS_SYNC), 0);
		expect_written(c, "second sync", NULL, 0);
	}

	/* written again after the sync: written again by the next one */
	map_write(c, map, 3 * UF_PAGE_SIZE + 2, 0xc1);
	obj_write(c, 40 * UF_PAGE_SIZE + 9, 1, 0xc2);
	begin(c);
	CHECK_RET(uf_msync(c->mm, map, MAPLEN, 0), 0);
	expect_written(c, "msync after rewrite", (const uint64_t[]){ 3, 40 }, 2);
	expect_store(c, "after rewrite");

	/* a private mapping's writes never reach the store */
	CHECK_RET(uf_mmap(c->mm, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, c->obj, 0,
			  (void **)&priv), 0);
	for (i = 5; i < 9; i++) {
		CHECK(os_poke(priv + i * UF_PAGE_SIZE + 3, 0xdd, &f) == 0, "%s: private write: %d",
		      c->mode, f.sig);
		CHECK(map[i * UF_PAGE_SIZE + 3] == c->model[i * UF_PAGE_SIZE + 3],
		      "%s: private write seen through the shared mapping", c->mode);
	}
	if (c->exact) {
		begin(c);
		CHECK_RET(uf_msync(c->mm, priv, MAPLEN, UF_MS_SYNC), 0);
		CHECK_RET(uf_object_sync(c->obj), 0);
		expect_written(c, "sync after private writes", NULL, 0);
	} else {
		CHECK_RET(uf_object_sync(c->obj), 0);
	}
	expect_store(c, "after private writes");

	/* dirty pages survive the unmap of the mapping that wrote them */
	map_write(c, map, 7 * UF_PAGE_SIZE + 77, 0xe1);
	CHECK_RET(uf_munmap(c->mm, map, MAPLEN), 0);
	begin(c);
	CHECK_RET(uf_object_sync(c->obj), 0);
	expect_written(c, "sync after munmap", (const uint64_t[]){ 7 }, 1);
	expect_store(c, "after munmap");

	/* ... and on the last put */
	CHECK_RET(uf_mmap(c->mm, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c->obj, 0,
			  (void **)&map2), 0);
	map_write(c, map2, 8 * UF_PAGE_SIZE + 8, 0xe2);
	map_write(c, map2, 9 * UF_PAGE_SIZE + 9, 0xe3);
	CHECK(priv[8 * UF_PAGE_SIZE + 3] == 0xdd, "%s: private copy lost", c->mode);
	CHECK_RET(uf_munmap(c->mm, priv, MAPLEN), 0);
	CHECK_RET(uf_munmap(c->mm, map2, MAPLEN), 0);
	begin(c);
	uf_object_put(c->obj);
	expect_written(c, "last put", (const uint64_t[]){ 8, 9 }, 2);
	expect_store(c, "after last put");

	uf_mm_destroy(c->mm);
	os_fini(&c->st);
	free(c);
}

int main(void)
{
	ut_catch_signals();
	os_watchdog(30);
	run(false);
	run(true);
	return 0;
}
