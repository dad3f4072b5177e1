/* Description: an object served by nginx reads right through a mapping,
 * past its unaligned end as zeros, one range GET per read over kept-alive
 * connections; a batched read sends one GET per contiguous run; the object
 * is read-only (-EROFS); an empty object opens with size 0. */
#define _GNU_SOURCE
#include "http-test.h"

#define SIZE	(3 * 1024 * 1024 + 1234)

/* @prior: the GETs of "obj" before this store's open */
static void check_readv(const struct ht_server *s, const char *url, const unsigned char *want,
			long prior)
{
	const struct uf_store_ops *ops;
	struct uf_http_stats hs;
	struct uf_store_iov iov[5];
	unsigned char *b[5];
	uint64_t size;
	void *store;
	long before;
	int ret;

	ret = uf_http_store_open(url, NULL, &ops, &store, &size);
	CHECK(ret == 0, "uf_http_store_open: %s", strerror(-ret));
	CHECK(size == SIZE && ops->read && !ops->write, "size %llu", (unsigned long long)size);
	for (int i = 0; i < 5; i++) {
		b[i] = malloc(2 * UF_PAGE_SIZE);
		CHECK(b[i], "malloc");
		memset(b[i], 0xee, 2 * UF_PAGE_SIZE);
	}
	/* out of order; 11 and 10 touch (one run), 100 alone, the last page
	 * ends past the object, and one lies wholly past it */
	iov[0] = (struct uf_store_iov){ b[0], UF_PAGE_SIZE, 11 * UF_PAGE_SIZE };
	iov[1] = (struct uf_store_iov){ b[1], UF_PAGE_SIZE, 100 * UF_PAGE_SIZE };
	iov[2] = (struct uf_store_iov){ b[2], UF_PAGE_SIZE, 10 * UF_PAGE_SIZE };
	iov[3] = (struct uf_store_iov){ b[3], UF_PAGE_SIZE, (SIZE / UF_PAGE_SIZE) * UF_PAGE_SIZE };
	iov[4] = (struct uf_store_iov){ b[4], 2 * UF_PAGE_SIZE, (SIZE / UF_PAGE_SIZE + 1) * UF_PAGE_SIZE };
	before = ht_wait_requests(s, "obj", 0, prior + 1);	/* and the open's */
	CHECK(before == prior + 1, "nginx logged %ld GETs, want %ld", before, prior + 1);
	CHECK_RET(uf_http_store_readv(store, iov, 5), 0);
	CHECK_RET(ht_wait_requests(s, "obj", 0, before + 3), before + 3);
	for (int i = 0; i < 5; i++) {
		for (size_t j = 0; j < iov[i].len; j++) {
			uint64_t off = iov[i].off + j;
			unsigned char w = off < SIZE ? want[off] : 0;

			CHECK(b[i][j] == w, "readv extent %d byte %zu: %#x, want %#x", i, j, b[i][j], w);
		}
		free(b[i]);
	}
	CHECK_RET(uf_http_store_stats(store, &hs), 0);
	CHECK(hs.requests == 4 && hs.retries == 0 && hs.failures == 0,
	      "store: %llu requests, %llu retries, %llu failures (want 4, 0, 0)",
	      (unsigned long long)hs.requests, (unsigned long long)hs.retries,
	      (unsigned long long)hs.failures);
	ops->release(store);
}

int main(void)
{
	struct ht_server s;
	struct uf_mm *mm;
	struct uf_object *obj;
	struct uf_http_stats hs;
	struct ut_fault f;
	unsigned char *want, *got, *p;
	void *q;
	size_t maplen = (SIZE + UF_PAGE_SIZE - 1) / UF_PAGE_SIZE * UF_PAGE_SIZE;
	char url[256];
	long logged;
	int ret;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	want = ht_pattern(SIZE, 1);
	ht_put(&s, "obj", want, SIZE, 0);
	ht_put(&s, "empty", "", 0, 0);
	ht_url(&s, url, sizeof(url), "obj");

	mm = ut_mm_create(NULL);
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open %s: %s", url, strerror(-ret));
	CHECK(uf_object_size(obj) == SIZE, "size %llu, want %d",
	      (unsigned long long)uf_object_size(obj), SIZE);
	ret = uf_mmap(mm, maplen, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));
	got = malloc(maplen);
	CHECK(got, "malloc");
	CHECK(ut_copy_from(got, p, maplen, &f) == 0, "signal %d reading the mapping at %p", f.sig, f.addr);
	CHECK(!memcmp(got, want, SIZE), "the mapping's bytes differ from the object's");
	for (size_t i = SIZE; i < maplen; i++)
		CHECK(got[i] == 0, "byte %zu past the end: %#x", i, got[i]);

	/* read-only */
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), -EROFS);
	CHECK_RET(uf_object_truncate(obj, 0), -EROFS);
	CHECK_RET(uf_object_punch_hole(obj, 0, UF_PAGE_SIZE), -EROFS);
	CHECK_RET(uf_object_sync(obj), -EROFS);
	CHECK_RET(uf_mmap(mm, maplen, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, &q), -EACCES);

	/* every request reached nginx, each a 206, over few connections */
	CHECK_RET(uf_http_stats(obj, &hs), 0);
	logged = ht_wait_requests(&s, "obj", 206, (long)hs.requests);
	printf("%llu requests (%ld logged 206), %llu connections, %llu bytes, %llu retries\n",
	       (unsigned long long)hs.requests, logged, (unsigned long long)hs.connects,
	       (unsigned long long)hs.bytes, (unsigned long long)hs.retries);
	CHECK(logged == (long)hs.requests, "nginx logged %ld 206 answers, the store counts %llu requests",
	      logged, (unsigned long long)hs.requests);
	CHECK(hs.requests >= 2 && hs.connects < hs.requests, "%llu connections for %llu requests",
	      (unsigned long long)hs.connects, (unsigned long long)hs.requests);
	CHECK(hs.bytes >= SIZE && hs.retries == 0 && hs.failures == 0 && hs.last_error == 0,
	      "bytes %llu, retries %llu, failures %llu", (unsigned long long)hs.bytes,
	      (unsigned long long)hs.retries, (unsigned long long)hs.failures);
	CHECK_RET(uf_munmap(mm, p, maplen), 0);
	uf_object_put(obj);

	check_readv(&s, url, want, (long)hs.requests);

	ht_url(&s, url, sizeof(url), "empty");
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open %s: %s", url, strerror(-ret));
	CHECK(uf_object_size(obj) == 0, "empty object: size %llu", (unsigned long long)uf_object_size(obj));
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(got);
	free(want);
	printf("ok: right bytes through a mapping and a batched read; read-only\n");
	return UT_PASS;
}
