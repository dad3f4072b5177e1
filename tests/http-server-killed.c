/* Description: nginx killed mid-restore: pages not read yet give SIGBUS
 * once the deadline has passed (never zeros, never a hang), the read
 * failed -EIO after retries that were counted; pages read before stay
 * right; with nginx back, the same pages read right. */
#define _GNU_SOURCE
#include "http-test.h"

#define NPAGES	1024

/* Read page @pg until it stops failing (a failed page stays poisoned until
 * its thread has retried: see ufault(7) Signals). */
static void read_again(const unsigned char *p, uint64_t pg, const unsigned char *want)
{
	unsigned char b[64];
	struct ut_fault f;

	for (int i = 0; ; i++) {
		struct timespec ms = { 0, 1000 * 1000 };

		if (!ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f))
			break;
		CHECK(i < 5000, "page %llu still gives signal %d", (unsigned long long)pg, f.sig);
		nanosleep(&ms, NULL);
	}
	CHECK(!memcmp(b, want + pg * UF_PAGE_SIZE, sizeof(b)), "page %llu read wrong",
	      (unsigned long long)pg);
}

int main(void)
{
	struct uf_mm_config cfg = { .readahead_max = UF_PAGE_SIZE };	/* a read per fault */
	struct uf_http_opts opts = { .deadline_ms = 1000 };
	struct ht_server s;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct uf_http_stats hs;
	struct uf_stats ms;
	struct ut_fault f;
	unsigned char *want, *p, b[64];
	size_t len = (size_t)NPAGES * UF_PAGE_SIZE;
	char url[256];
	int ret;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	want = ht_pattern(len, 2);
	ht_put(&s, "obj", want, len, 0);
	ht_url(&s, url, sizeof(url), "obj");
	mm = ut_mm_create(&cfg);
	ret = uf_http_open(mm, url, &opts, &obj);
	CHECK(ret == 0, "uf_http_open: %s", strerror(-ret));
	ret = uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));

	/* the first half restores */
	for (uint64_t pg = 0; pg < NPAGES / 2; pg++) {
		CHECK(!ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f), "page %llu: signal %d",
		      (unsigned long long)pg, f.sig);
		CHECK(!memcmp(b, want + pg * UF_PAGE_SIZE, sizeof(b)), "page %llu wrong",
		      (unsigned long long)pg);
	}

	/* the server dies: each page of the rest touched gets SIGBUS */
	ht_kill(&s);
	for (uint64_t pg = NPAGES / 2; pg < NPAGES; pg += NPAGES / 8) {
		CHECK(ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f) == SIGBUS,
		      "page %llu with the server gone: signal %d, want SIGBUS",
		      (unsigned long long)pg, f.sig);
	}
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	CHECK_RET(uf_mm_stats(mm, &ms), 0);
	printf("server gone: %llu failed reads, %llu retries, %llu requests; last: %d (%s), \"%s\"; "
	       "%llu faults got SIGBUS\n", (unsigned long long)hs.failures,
	       (unsigned long long)hs.retries, (unsigned long long)hs.requests, hs.last_error,
	       strerror(-hs.last_error), hs.last_cause, (unsigned long long)ms.sigbus);
	CHECK(hs.failures >= 4 && hs.last_error == -EIO, "%llu failures, last error %d",
	      (unsigned long long)hs.failures, hs.last_error);
	CHECK(hs.retries >= hs.failures, "%llu retries for %llu failed reads (each retried)",
	      (unsigned long long)hs.retries, (unsigned long long)hs.failures);
	CHECK(ms.sigbus >= 4, "%llu faults answered SIGBUS", (unsigned long long)ms.sigbus);

	/* pages restored before are still there, from the cache */
	for (uint64_t pg = 0; pg < NPAGES / 2; pg += 37) {
		CHECK(!ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f), "cached page %llu: signal %d",
		      (unsigned long long)pg, f.sig);
		CHECK(!memcmp(b, want + pg * UF_PAGE_SIZE, sizeof(b)), "cached page %llu wrong",
		      (unsigned long long)pg);
	}

	/* the server is back: the rest restores */
	ht_run(&s);
	for (uint64_t pg = NPAGES / 2; pg < NPAGES; pg++)
		read_again(p, pg, want);
	CHECK_RET(uf_munmap(mm, p, len), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(want);
	printf("ok: a dead server gave SIGBUS after the deadline, counted; then the pages read right\n");
	return UT_PASS;
}
