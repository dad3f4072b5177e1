/* Description: an object served by nginx four times larger than the mm's
 * cache budget reads right twice through one mapping, in order and
 * scattered: pages the budget evicted are read again with range GETs (every
 * one of which nginx logged), and the cache stays within the budget plus a
 * readahead window. */
#define _GNU_SOURCE
#include "http-test.h"

#define SIZE	(16u << 20)
#define BUDGET	(4u << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)

int main(void)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET };
	struct ht_server s;
	struct uf_http_stats hs;
	struct uf_object *obj;
	struct uf_stats st;
	struct uf_mm *mm;
	unsigned char *want, *map;
	char url[256];
	long logged;
	int ret;

	ht_start(&s, NULL);
	alarm(120);
	want = ht_pattern(SIZE, 2);
	ht_put(&s, "obj", want, SIZE, 0);
	ht_url(&s, url, sizeof(url), "obj");
	mm = ut_mm_create(&cfg);
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open %s: %s", url, strerror(-ret));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t k = 0; k < NPAGES; k++) {
			uint64_t pg = pass ? (k * 2654435761u) % NPAGES : k;

			CHECK(!memcmp(want + pg * UF_PAGE_SIZE, map + pg * UF_PAGE_SIZE,
				      UF_PAGE_SIZE), "pass %d: page %lu differs", pass,
			      (unsigned long)pg);
		}
		CHECK_RET(uf_mm_stats(mm, &st), 0);
		CHECK(st.cache_pages * UF_PAGE_SIZE <= BUDGET + BUDGET / 8,
		      "pass %d: %lu pages cached over a budget of %u", pass,
		      (unsigned long)st.cache_pages, BUDGET / 4096);
	}
	CHECK(st.evicted_pages > 0, "nothing evicted");
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	CHECK(hs.bytes > SIZE && hs.retries == 0 && hs.failures == 0,
	      "%llu bytes read (want more than the object: evicted pages read again), "
	      "%llu retries, %llu failures", (unsigned long long)hs.bytes,
	      (unsigned long long)hs.retries, (unsigned long long)hs.failures);
	logged = ht_wait_requests(&s, "obj", 206, (long)hs.requests);
	CHECK(logged == (long)hs.requests, "nginx logged %ld 206 answers, the store counts %llu",
	      logged, (unsigned long long)hs.requests);
	printf("%lu pages evicted, %lu read, %llu GETs, %llu bytes\n",
	       (unsigned long)st.evicted_pages, (unsigned long)st.pages_read,
	       (unsigned long long)hs.requests, (unsigned long long)hs.bytes);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(want);
	return UT_PASS;
}
