/* Description: a Redis object read sequentially in windows (the store then
 * asks the cluster for the next window ahead of time) whose writer then
 * punches that next window, or truncates into it and grows it again, reads
 * zeros there, never the read-ahead's older bytes; a window written and
 * synced reads as written. */
#define _GNU_SOURCE
#include "redis-test.h"

#define WIN	512			/* pages: the core's largest window */
#define NPAGES	(5 * WIN)
#define PG	4096

static unsigned char page_byte(uint64_t pg, int gen)
{
	return (unsigned char)(0x11 + pg * 7 + (uint64_t)gen * 0x40);
}

/* Fill pages [first, first + n) with generation @gen's bytes. */
static void put_pages(struct uf_object *obj, unsigned char *buf, uint64_t first, uint64_t n,
		      int gen)
{
	for (uint64_t i = 0; i < n; i++)
		memset(buf + i * PG, page_byte(first + i, gen), PG);
	CHECK_RET(uf_object_pwrite(obj, buf, n * PG, first * PG), (ssize_t)(n * PG));
}

/* Pages [first, first + n) read as generation @gen (or zeros for gen < 0). */
static void expect(struct uf_object *obj, unsigned char *buf, uint64_t first, uint64_t n, int gen,
		   const char *when)
{
	CHECK_RET(uf_object_pread(obj, buf, n * PG, first * PG), (ssize_t)(n * PG));
	for (uint64_t i = 0; i < n; i++) {
		unsigned char want = gen < 0 ? 0 : page_byte(first + i, gen);

		CHECK(buf[i * PG] == want && buf[i * PG + PG - 1] == want,
		      "%s: page %lu reads %#x, want %#x", when, (unsigned long)(first + i),
		      buf[i * PG], want);
	}
}

/* A new mm and a new (empty) cache over the object: read windows 0 and 1
 * in order, so that the store's read-ahead has window 2 on its way. */
static struct uf_object *open_and_stream(struct uf_mm *mm, const char *url, unsigned char *buf)
{
	struct uf_object *obj;
	int ret = uf_redis_open(mm, url, O_RDWR, &obj);

	CHECK(ret == 0, "open: %s", strerror(-ret));
	expect(obj, buf, 0, WIN, 0, "window 0");
	expect(obj, buf, WIN, WIN, 0, "window 1");
	return obj;
}

int main(void)
{
	struct rt_cluster c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *buf = malloc(WIN * PG);
	char url[512];
	int ret;

	CHECK(buf, "malloc");
	rt_cluster(&c, "redis-readahead-change");
	rt_url(&c, url, sizeof(url), "obj", "");

	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "create: %s", strerror(-ret));
	CHECK_RET(uf_object_truncate(obj, (uint64_t)NPAGES * PG), 0);
	for (uint64_t w = 0; w < NPAGES / WIN; w++)
		put_pages(obj, buf, w * WIN, WIN, 0);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* a punch of the window read ahead */
	mm = ut_mm_create(NULL);
	obj = open_and_stream(mm, url, buf);
	CHECK_RET(uf_object_punch_hole(obj, 2 * WIN * PG, WIN * PG), 0);
	expect(obj, buf, 2 * WIN, WIN, -1, "after punch");
	expect(obj, buf, 3 * WIN, WIN, 0, "window after the punched one");
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* a write of it, synced (generation 1) */
	mm = ut_mm_create(NULL);
	obj = open_and_stream(mm, url, buf);
	put_pages(obj, buf, 2 * WIN, WIN, 1);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	mm = ut_mm_create(NULL);
	obj = open_and_stream(mm, url, buf);
	expect(obj, buf, 2 * WIN, WIN, 1, "after write");
	/* a truncate into it, then a grow: the dropped pages read as zeros */
	CHECK_RET(uf_object_truncate(obj, (uint64_t)(2 * WIN + 1) * PG), 0);
	CHECK_RET(uf_object_truncate(obj, (uint64_t)NPAGES * PG), 0);
	expect(obj, buf, 2 * WIN + 1, WIN - 1, -1, "after truncate and grow");
	expect(obj, buf, 3 * WIN, WIN, -1, "past the truncate");
	uf_object_put(obj);
	uf_mm_destroy(mm);

	CHECK_RET(uf_redis_remove(url), 0);
	free(buf);
	printf("pass\n");
	return 0;
}
