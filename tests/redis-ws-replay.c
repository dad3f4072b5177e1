/* Description: a working set of a Redis object (its record names the
 * object's size alone: kind 0) is recorded in one mm and prefetched into
 * another through the store's batched read: the cache then holds exactly
 * the set, with the bytes written, and the cluster ran one HMGET per
 * extent of a batch, not one per piece (the set's 800-odd pieces lie in 8
 * extents); an object of another size refuses it with -ESTALE.  Where
 * this machine's first touch of a page mapped ahead is cheap, the call
 * returns with 90% of the set in at least (uf_object_prefetch(3)). */
#define _GNU_SOURCE
#include "redis-test.h"
#include "ws-test.h"

#include <sys/mman.h>

#define NPAGES	4096
#define SIZE	((uint64_t)NPAGES * UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE

static unsigned char want(uint64_t off)
{
	return (unsigned char)(ut_pattern(off) ^ 0x33);
}

/* every 5th page, and runs of 8 every 512 pages */
static bool in_set(uint64_t pg)
{
	return pg % 5 == 0 || pg % 512 < 8;
}

int main(void)
{
	struct rt_cluster c;
	char url[512], url2[512], rec[] = "/tmp/redis-ws-replay-XXXXXX", scratch[300];
	unsigned char *buf = malloc(SIZE), *map, *page = malloc(PG);
	struct uf_object *obj;
	struct uf_mm *mm;
	struct ws_file f;
	uint64_t pg, i, nset = 0, npieces = 0, inpages, touch;
	long hmgets;
	int fd;

	rt_cluster(&c, "wsreplay");
	rt_url(&c, url, sizeof(url), "obj", "");
	rt_url(&c, url2, sizeof(url2), "small", "");
	fd = mkstemp(rec);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	snprintf(scratch, sizeof(scratch), "%s.scratch", rec);
	for (i = 0; i < SIZE; i++)
		buf[i] = want(i);

	/* the object, and a smaller one */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj), 0);
	CHECK_RET(uf_object_pwrite(obj, buf, SIZE, 0), (long)SIZE);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	CHECK_RET(uf_redis_open(mm, url2, O_RDWR | O_CREAT, &obj), 0);
	CHECK_RET(uf_object_pwrite(obj, buf, SIZE / 2, 0), (long)(SIZE / 2));
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* record */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (pg = 0; pg < NPAGES; pg++)
		if (in_set(pg)) {
			CHECK(map[pg * PG + 1] == want(pg * PG + 1), "page %lu", (unsigned long)pg);
			nset++;
			npieces += pg == 0 || !in_set(pg - 1);
		}
	CHECK_RET(uf_object_record_stop(obj), (long)nset);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	ws_read_file(rec, &f);
	CHECK(f.kind == 0 && f.size == SIZE && f.npages == nset, "header: kind %u size %lu pages %lu",
	      f.kind, (unsigned long)f.size, (unsigned long)f.npages);
	free(f.pages);

	/* replay */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url2, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), -ESTALE);
	uf_object_put(obj);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), 0);
	hmgets = rt_hmget_calls(&c);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	inpages = ws_cache_pages(mm);
	touch = ws_touch_ns();
	printf("%lu of %lu pages cached when the call returned; a first touch costs %lu ns\n",
	       (unsigned long)inpages, (unsigned long)nset, (unsigned long)touch);
	/* where the program's touches cost next to nothing, the caller
	 * fills beside the fillers until the set is in */
	if (touch && touch < 100)
		CHECK(inpages >= nset * 9 / 10, "%lu of %lu pages cached when the call returned",
		      (unsigned long)inpages, (unsigned long)nset);
	ws_wait_prefetch(obj, scratch);
	hmgets = rt_hmget_calls(&c) - hmgets;
	printf("%lu pages in %lu pieces: %ld HMGETs\n", (unsigned long)nset,
	       (unsigned long)npieces, hmgets);
	/* batches of at most 512 pages, from 32 up: 7 for this set, at most
	 * 8 extents each */
	CHECK(hmgets > 0 && hmgets <= 8 * 8, "%ld HMGETs for %lu pieces in 8 extents", hmgets,
	      (unsigned long)npieces);
	CHECK(ws_cache_pages(mm) == nset, "%lu pages cached, set %lu",
	      (unsigned long)ws_cache_pages(mm), (unsigned long)nset);
	for (pg = 0; pg < NPAGES; pg++) {
		if (!in_set(pg))
			continue;
		CHECK_RET(uf_object_pread(obj, page, PG, pg * PG), PG);
		CHECK(memcmp(page, buf + pg * PG, PG) == 0, "page %lu differs", (unsigned long)pg);
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	CHECK_RET(uf_redis_remove(url2), 0);
	unlink(rec);
	free(buf);
	free(page);
	return 0;
}
