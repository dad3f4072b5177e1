/* Description: every retry is counted: nginx answers 503 to requests over
 * its rate (limit_req, 2 a second), the store retries each with backoff
 * until it is served, and its counts of requests and retries equal the
 * 206 and 503 answers nginx logged, for faults and for a batched read. */
#define _GNU_SOURCE
#include "http-test.h"

#define NPAGES	64

int main(void)
{
	struct uf_mm_config cfg = { .readahead_max = UF_PAGE_SIZE };	/* a read per fault */
	struct ht_server s;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct uf_http_stats hs;
	struct ut_fault f;
	size_t len = (size_t)NPAGES * UF_PAGE_SIZE;
	unsigned char *want = ht_pattern(len, 5), *p, b[64], *buf = malloc(4 * UF_PAGE_SIZE);
	struct uf_store_iov iov[4];
	const struct uf_store_ops *ops;
	uint64_t size;
	void *store;
	long ok, busy, ok0, busy0;
	char url[256];
	int ret;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	CHECK(buf, "malloc");
	ht_put(&s, "limited/obj", want, len, 0);
	ht_url(&s, url, sizeof(url), "limited/obj");
	mm = ut_mm_create(&cfg);
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open: %s", strerror(-ret));
	ret = uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));
	for (uint64_t pg = 0; pg < 4; pg++) {
		CHECK(!ut_copy_from(b, p + pg * 9 * UF_PAGE_SIZE, sizeof(b), &f), "page %llu: signal %d",
		      (unsigned long long)pg * 9, f.sig);
		CHECK(!memcmp(b, want + pg * 9 * UF_PAGE_SIZE, sizeof(b)), "page %llu wrong",
		      (unsigned long long)pg * 9);
	}
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	ok = ht_wait_requests(&s, "limited/obj", 206, (long)(hs.requests - hs.retries));
	busy = ht_wait_requests(&s, "limited/obj", 503, (long)hs.retries);
	printf("faults: %llu requests, %llu retries; nginx: %ld answered 206, %ld answered 503\n",
	       (unsigned long long)hs.requests, (unsigned long long)hs.retries, ok, busy);
	CHECK(hs.retries > 0 && busy == (long)hs.retries && ok == (long)(hs.requests - hs.retries),
	      "the store counts %llu requests, %llu retries; nginx logged %ld 206, %ld 503",
	      (unsigned long long)hs.requests, (unsigned long long)hs.retries, ok, busy);
	CHECK(hs.failures == 0, "%llu failures", (unsigned long long)hs.failures);
	CHECK_RET(uf_munmap(mm, p, len), 0);
	uf_object_put(obj);

	/* a batched read: four runs at once, each retried on its own */
	ret = uf_http_store_open(url, NULL, &ops, &store, &size);
	CHECK(ret == 0, "uf_http_store_open: %s", strerror(-ret));
	for (int i = 0; i < 4; i++)
		iov[i] = (struct uf_store_iov){ buf + i * UF_PAGE_SIZE, UF_PAGE_SIZE, (uint64_t)i * 10 * UF_PAGE_SIZE };
	CHECK_RET(uf_http_store_readv(store, iov, 4), 0);
	for (int i = 0; i < 4; i++)
		CHECK(!memcmp(buf + i * UF_PAGE_SIZE, want + i * 10 * UF_PAGE_SIZE, UF_PAGE_SIZE),
		      "readv extent %d wrong", i);
	CHECK_RET(uf_http_store_stats(store, &hs), 0);
	busy0 = busy;
	ok0 = ok;
	ok = ht_wait_requests(&s, "limited/obj", 206, ok0 + (long)(hs.requests - hs.retries)) - ok0;
	busy = ht_wait_requests(&s, "limited/obj", 503, busy0 + (long)hs.retries) - busy0;
	printf("readv: %llu requests, %llu retries; nginx: %ld answered 206, %ld answered 503\n",
	       (unsigned long long)hs.requests, (unsigned long long)hs.retries, ok, busy);
	CHECK(hs.retries > 0 && busy == (long)hs.retries && ok == (long)(hs.requests - hs.retries),
	      "the store counts %llu requests, %llu retries; nginx logged %ld 206, %ld 503",
	      (unsigned long long)hs.requests, (unsigned long long)hs.retries, ok, busy);
	ops->release(store);
	uf_mm_destroy(mm);
	free(want);
	free(buf);
	printf("ok: every retry counted\n");
	return UT_PASS;
}
