/* Description: the object replaced on the server mid-restore (with an
 * ETag, and without one: Last-Modified): the pages not read yet give
 * SIGBUS (-ESTALE), the new version's bytes never appear, the pages read
 * before keep the old ones; a batched read of the raw store fails -ESTALE. */
#define _GNU_SOURCE
#include "http-test.h"

#define NPAGES	256

static void replaced(struct ht_server *s, struct uf_mm *mm, const char *name)
{
	struct uf_http_stats hs;
	struct uf_object *obj;
	struct ut_fault f;
	size_t len = (size_t)NPAGES * UF_PAGE_SIZE;
	unsigned char *v1 = ht_pattern(len, 1), *v2 = ht_pattern(len, 2), *p, b[64];
	time_t now = time(NULL);
	char url[256];
	long stale;
	int ret;

	ht_put(s, name, v1, len, now - 100);
	ht_url(s, url, sizeof(url), name);
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open %s: %s", url, strerror(-ret));
	ret = uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));
	for (uint64_t pg = 0; pg < NPAGES / 2; pg++) {
		CHECK(!ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f), "%s page %llu: signal %d",
		      name, (unsigned long long)pg, f.sig);
		CHECK(!memcmp(b, v1 + pg * UF_PAGE_SIZE, sizeof(b)), "%s page %llu wrong", name,
		      (unsigned long long)pg);
	}

	/* a new version, the same size, another modification time */
	ht_put(s, name, v2, len, now - 50);
	for (uint64_t pg = NPAGES / 2; pg < NPAGES; pg += 16) {
		int sig = ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f);

		CHECK(sig || memcmp(b, v2 + pg * UF_PAGE_SIZE, sizeof(b)),
		      "%s page %llu shows the new version's bytes", name, (unsigned long long)pg);
		CHECK(sig == SIGBUS, "%s page %llu of a replaced object: signal %d, want SIGBUS",
		      name, (unsigned long long)pg, sig);
	}
	for (uint64_t pg = 0; pg < NPAGES / 2; pg += 7) {
		CHECK(!ut_copy_from(b, p + pg * UF_PAGE_SIZE, sizeof(b), &f), "cached page: signal %d", f.sig);
		CHECK(!memcmp(b, v1 + pg * UF_PAGE_SIZE, sizeof(b)), "%s cached page %llu changed",
		      name, (unsigned long long)pg);
	}
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	stale = ht_wait_requests(s, name, 412, (long)hs.failures);
	printf("%s: %llu failed reads (last %d, HTTP %d, \"%s\"), %ld answered 412, %llu retries\n",
	       name, (unsigned long long)hs.failures, hs.last_error, hs.last_status, hs.last_cause,
	       stale, (unsigned long long)hs.retries);
	/* one failed read per page touched, and at most as many more by
	 * readahead windows started meanwhile (a loaded machine's) */
	CHECK(hs.failures >= NPAGES / 2 / 16 && hs.failures <= 2 * (NPAGES / 2 / 16) &&
	      hs.last_error == -ESTALE && hs.last_status == 412,
	      "%llu failures, last error %d, last status %d", (unsigned long long)hs.failures,
	      hs.last_error, hs.last_status);
	CHECK(hs.retries == 0 && stale == (long)hs.failures, "%llu retries, %ld 412 answers",
	      (unsigned long long)hs.retries, stale);
	CHECK_RET(uf_munmap(mm, p, len), 0);
	uf_object_put(obj);
	free(v1);
	free(v2);
}

/* The raw store of uf_http_store_open(): its batched read refuses too. */
static void replaced_raw(struct ht_server *s)
{
	const struct uf_store_ops *ops;
	size_t len = 16 * UF_PAGE_SIZE;
	unsigned char *v1 = ht_pattern(len, 3), *v2 = ht_pattern(len, 4), *buf = malloc(len);
	struct uf_store_iov iov[2] = { { buf, UF_PAGE_SIZE, 0 }, { buf + UF_PAGE_SIZE, UF_PAGE_SIZE, 8 * UF_PAGE_SIZE } };
	uint64_t size;
	void *store;
	char url[256];
	int ret;

	CHECK(buf, "malloc");
	ht_put(s, "raw", v1, len, time(NULL) - 100);
	ht_url(s, url, sizeof(url), "raw");
	ret = uf_http_store_open(url, NULL, &ops, &store, &size);
	CHECK(ret == 0, "uf_http_store_open: %s", strerror(-ret));
	CHECK_RET(uf_http_store_readv(store, iov, 2), 0);
	CHECK(!memcmp(buf, v1, UF_PAGE_SIZE), "raw page 0 wrong");
	ht_put(s, "raw", v2, len, time(NULL) - 50);
	memset(buf, 0, 2 * UF_PAGE_SIZE);
	CHECK_RET(uf_http_store_readv(store, iov, 2), -ESTALE);
	CHECK_RET(ops->read(store, buf, UF_PAGE_SIZE, 0), -ESTALE);
	CHECK(memcmp(buf, v2, 64) && memcmp(buf + UF_PAGE_SIZE, v2 + 8 * UF_PAGE_SIZE, 64),
	      "the new version's bytes reached the buffers");
	ops->release(store);
	free(v1);
	free(v2);
	free(buf);
}

int main(void)
{
	struct uf_mm_config cfg = { .readahead_max = UF_PAGE_SIZE };	/* a read per fault */
	struct ht_server s;
	struct uf_mm *mm;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	mm = ut_mm_create(&cfg);
	replaced(&s, mm, "obj");		/* pinned by ETag: If-Match */
	replaced(&s, mm, "noetag/obj");		/* by Last-Modified: If-Unmodified-Since */
	replaced_raw(&s);
	uf_mm_destroy(mm);
	printf("ok: a replaced object gave SIGBUS (-ESTALE), never the new bytes\n");
	return UT_PASS;
}
