/* Description: a working set recorded on an object served over HTTP and
 * prefetched into a fresh one: the prefetch's batched reads send one range
 * GET per recorded run (not per page), the pages arrive before they are
 * touched (no fault waits for the server), and every byte is right. */
#define _GNU_SOURCE
#include "http-test.h"

#define NPAGES	4096	/* 16 MiB */
#define NRUNS	24	/* runs of RUN pages ... */
#define RUN	8
#define NSINGLE	40	/* ... and single pages, 3 pages apart at least */
#define NSET	(NRUNS * RUN + NSINGLE)

static uint32_t set[NSET];

/* Runs and singles spread over the object, 56 pages apart at least,
 * touched in an order that is not the object's. */
static void make_set(void)
{
	size_t n = 0;

	for (uint32_t i = 0; i < NRUNS + NSINGLE; i++) {
		uint32_t item = (i * 37) % (NRUNS + NSINGLE);	/* 37: prime to 64 */
		uint32_t start = 7 + item * (NPAGES / (NRUNS + NSINGLE));
		uint32_t len = item < NRUNS ? RUN : 1;

		for (uint32_t k = 0; k < len; k++)
			set[n++] = start + k;
	}
	CHECK(n == NSET, "a set of %zu pages", n);
}

static struct uf_object *open_obj(struct uf_mm *mm, const char *url)
{
	struct uf_object *obj;
	int ret = uf_http_open(mm, url, NULL, &obj);

	CHECK(ret == 0, "uf_http_open: %s", strerror(-ret));
	return obj;
}

int main(void)
{
	struct uf_mm_config one = { .readahead_max = UF_PAGE_SIZE };
	size_t len = (size_t)NPAGES * UF_PAGE_SIZE;
	unsigned char *want = ht_pattern(len, 8), *p, b[64];
	struct uf_http_stats hs;
	struct uf_stats st;
	struct ht_server s;
	struct uf_object *obj;
	struct uf_mm *mm;
	struct ut_fault f;
	char url[256], rec[300];
	long before, logged;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	make_set();
	ht_put(&s, "mem", want, len, 0);
	ht_url(&s, url, sizeof(url), "mem");
	snprintf(rec, sizeof(rec), "%s/ws", s.dir);

	/* record: one page a fault, so the record holds the set alone */
	mm = ut_mm_create(&one);
	obj = open_obj(mm, url);
	CHECK_RET(uf_object_record(obj, rec), 0);
	CHECK_RET(uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (size_t i = 0; i < NSET; i++)
		CHECK(!ut_copy_from(b, p + (size_t)set[i] * UF_PAGE_SIZE, sizeof(b), &f),
		      "page %u: signal %d", set[i], f.sig);
	CHECK_RET(uf_object_record_stop(obj), NSET);
	CHECK_RET(uf_munmap(mm, p, len), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* prefetch into a fresh object */
	before = ht_wait_requests(&s, "mem", 206, 1 + NSET);	/* the record's */
	mm = ut_mm_create(NULL);
	obj = open_obj(mm, url);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	for (int i = 0; ; i++) {
		struct timespec ms = { 0, 5 * 1000 * 1000 };

		CHECK_RET(uf_mm_stats(mm, &st), 0);
		if (st.cache_pages >= NSET)
			break;
		CHECK(i < 4000, "the prefetch cached %llu pages of %d", (unsigned long long)st.cache_pages, NSET);
		nanosleep(&ms, NULL);
	}
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	logged = ht_wait_requests(&s, "mem", 206, before + (long)hs.requests) - before;
	printf("prefetch of %d pages (%d runs): %llu range GETs (%ld logged), %llu connections, "
	       "%llu retries\n", NSET, NRUNS + (NSET - NRUNS * RUN), (unsigned long long)hs.requests,
	       logged, (unsigned long long)hs.connects, (unsigned long long)hs.retries);
	CHECK(logged == (long)hs.requests, "nginx logged %ld, the store counts %llu", logged,
	      (unsigned long long)hs.requests);
	CHECK(hs.requests <= 1 + NRUNS + (NSET - NRUNS * RUN), "%llu GETs for %d runs: not one a run",
	      (unsigned long long)hs.requests, NRUNS + (NSET - NRUNS * RUN));

	/* the set is there: no fault waits for the server */
	CHECK_RET(uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (size_t i = 0; i < NSET; i++) {
		CHECK(!ut_copy_from(b, p + (size_t)set[i] * UF_PAGE_SIZE + 9, sizeof(b), &f),
		      "page %u: signal %d", set[i], f.sig);
		CHECK(!memcmp(b, want + (size_t)set[i] * UF_PAGE_SIZE + 9, sizeof(b)), "page %u wrong", set[i]);
	}
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.major_faults == 0, "%llu faults waited for the server after the prefetch",
	      (unsigned long long)st.major_faults);
	CHECK_RET(uf_munmap(mm, p, len), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(want);
	printf("ok: a working set prefetched over HTTP, a GET a run\n");
	return UT_PASS;
}
