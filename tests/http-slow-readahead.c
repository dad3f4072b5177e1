/* Description: a slow server (nginx limit_rate, 8 MB/s a connection):
 * reading a mapping page by page, readahead hides it -- a few range GETs
 * of many pages each, and few faults that waited for the server, not one
 * per page; the bytes are right. */
#define _GNU_SOURCE
#include "http-test.h"

#define NPAGES	1024	/* 4 MiB */

int main(void)
{
	struct ht_server s;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct uf_http_stats hs;
	struct uf_stats ms;
	struct ut_fault f;
	size_t len = (size_t)NPAGES * UF_PAGE_SIZE;
	unsigned char *want = ht_pattern(len, 6), *p, b[64];
	char url[256];
	long logged;
	int ret;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	ht_put(&s, "slow/obj", want, len, 0);
	ht_url(&s, url, sizeof(url), "slow/obj");
	mm = ut_mm_create(NULL);
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open: %s", strerror(-ret));
	ret = uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));
	for (uint64_t pg = 0; pg < NPAGES; pg++) {
		CHECK(!ut_copy_from(b, p + pg * UF_PAGE_SIZE + 100, sizeof(b), &f), "page %llu: signal %d",
		      (unsigned long long)pg, f.sig);
		CHECK(!memcmp(b, want + pg * UF_PAGE_SIZE + 100, sizeof(b)), "page %llu wrong",
		      (unsigned long long)pg);
	}
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	CHECK_RET(uf_mm_stats(mm, &ms), 0);
	logged = ht_wait_requests(&s, "slow/obj", 0, (long)hs.requests);
	printf("%d pages: %llu range GETs (%ld logged), %llu connections, %llu major faults, "
	       "%llu minor, %llu pages read ahead\n", NPAGES, (unsigned long long)hs.requests, logged,
	       (unsigned long long)hs.connects, (unsigned long long)ms.major_faults,
	       (unsigned long long)ms.minor_faults, (unsigned long long)ms.readahead_pages);
	CHECK(logged == (long)hs.requests && hs.retries == 0, "%ld logged, %llu counted, %llu retries",
	      logged, (unsigned long long)hs.requests, (unsigned long long)hs.retries);
	CHECK(hs.requests <= NPAGES / 32, "%llu range GETs for %d pages: readahead did not batch them",
	      (unsigned long long)hs.requests, NPAGES);
	CHECK(ms.major_faults <= NPAGES / 32, "%llu faults of %d waited for the server",
	      (unsigned long long)ms.major_faults, NPAGES);
	CHECK(ms.readahead_pages >= NPAGES / 2, "%llu pages read ahead", (unsigned long long)ms.readahead_pages);
	CHECK_RET(uf_munmap(mm, p, len), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(want);
	printf("ok: readahead hid a slow server\n");
	return UT_PASS;
}
