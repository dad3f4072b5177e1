/* Description: uf_object_truncate() and uf_object_punch_hole() on a Redis
 * object delete the pages they drop from the cluster (whole extents
 * UNLINKed, pages of a partial extent HDELed), the partial pages at their
 * edges keep only the bytes they should, and a new mm reads what the
 * kernel's own file would: the oracle is a tmpfs file given the same
 * writes, truncates and punches. */
#define _GNU_SOURCE
#include "redis-test.h"

#include <linux/falloc.h>
#include <sys/stat.h>

#define NPAGES	1300

struct ctx {
	struct rt_cluster c;
	char url[512];
	int fd;			/* the oracle */
};

static long stored_pages(struct ctx *x, unsigned int ext)
{
	char key[300];

	snprintf(key, sizeof(key), "uf:{%s-obj:%u}:x", x->c.prefix, ext);
	return rt_cli_int(&x->c, "HLEN %s", key);
}

/* A new mm reads the whole object; it must equal the oracle. */
static void compare(struct ctx *x, const char *when)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	struct stat st;
	unsigned char *want, *got;
	int ret;

	CHECK(fstat(x->fd, &st) == 0, "fstat");
	ret = uf_redis_open(mm, x->url, O_RDONLY, &obj);
	CHECK(ret == 0, "%s: open: %s", when, strerror(-ret));
	CHECK(uf_object_size(obj) == (uint64_t)st.st_size, "%s: size %lu, want %lu", when,
	      (unsigned long)uf_object_size(obj), (unsigned long)st.st_size);
	want = malloc((size_t)st.st_size + 1);
	got = malloc((size_t)st.st_size + 1);
	CHECK(want && got, "malloc");
	CHECK(pread(x->fd, want, (size_t)st.st_size, 0) == st.st_size, "pread");
	CHECK_RET(uf_object_pread(obj, got, (size_t)st.st_size, 0), st.st_size);
	for (off_t i = 0; i < st.st_size; i++)
		CHECK(got[i] == want[i], "%s: byte %ld is %u, want %u", when, (long)i, got[i], want[i]);
	free(want);
	free(got);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ctx x;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *buf;
	char path[] = "/dev/shm/ufault-redis-oracle-XXXXXX";
	size_t size = (size_t)NPAGES * UF_PAGE_SIZE;
	int ret;

	rt_cluster(&x.c, "trunc");
	alarm(120);
	rt_url(&x.c, x.url, sizeof(x.url), "obj", "");
	x.fd = mkstemp(path);
	CHECK(x.fd >= 0, "mkstemp");
	unlink(path);

	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, x.url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "open: %s", strerror(-ret));
	buf = malloc(size);
	CHECK(buf, "malloc");
	for (size_t i = 0; i < size; i++)
		buf[i] = (unsigned char)(ut_pattern(i) | 1);
	CHECK_RET(uf_object_truncate(obj, size), 0);
	CHECK(ftruncate(x.fd, (off_t)size) == 0, "ftruncate");
	CHECK_RET(uf_object_pwrite(obj, buf, size, 0), (long)size);
	CHECK(pwrite(x.fd, buf, size, 0) == (ssize_t)size, "pwrite");
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(stored_pages(&x, 0) == 512 && stored_pages(&x, 2) == NPAGES - 1024,
	      "after writing: %ld and %ld pages stored", stored_pages(&x, 0), stored_pages(&x, 2));
	compare(&x, "after writing");

	/* punch pages 10..19 whole plus a partial page on each side */
	CHECK_RET(uf_object_punch_hole(obj, 9 * 4096 + 100, 11 * 4096), 0);
	CHECK(fallocate(x.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 9 * 4096 + 100, 11 * 4096) == 0,
	      "fallocate");
	CHECK(stored_pages(&x, 0) == 512 - 10, "after the punch extent 0 has %ld pages", stored_pages(&x, 0));
	/* punch all of extent 1 */
	CHECK_RET(uf_object_punch_hole(obj, 512 * 4096, 512 * 4096), 0);
	CHECK(fallocate(x.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 512 * 4096, 512 * 4096) == 0,
	      "fallocate");
	CHECK(stored_pages(&x, 1) == 0, "extent 1 still has %ld pages", stored_pages(&x, 1));
	compare(&x, "after the punches");

	/* shrink into the middle of a page of extent 0: extents 1 and 2 go */
	CHECK_RET(uf_object_truncate(obj, 300 * 4096 + 1000), 0);
	CHECK(ftruncate(x.fd, 300 * 4096 + 1000) == 0, "ftruncate");
	CHECK(stored_pages(&x, 2) == 0, "extent 2 still has %ld pages", stored_pages(&x, 2));
	CHECK(stored_pages(&x, 0) == 301 - 10, "extent 0 has %ld pages", stored_pages(&x, 0));
	compare(&x, "after the shrink");

	/* shrink again from an end inside a page: that old last page goes
	 * whole, none of it is stored past the new end */
	CHECK_RET(uf_object_truncate(obj, 299 * 4096 + 10), 0);
	CHECK(ftruncate(x.fd, 299 * 4096 + 10) == 0, "ftruncate");
	CHECK(stored_pages(&x, 0) == 300 - 10, "after the second shrink extent 0 has %ld pages",
	      stored_pages(&x, 0));
	compare(&x, "after the second shrink");

	/* grow again: the old bytes do not come back */
	CHECK_RET(uf_object_truncate(obj, size), 0);
	CHECK(ftruncate(x.fd, (off_t)size) == 0, "ftruncate");
	CHECK(stored_pages(&x, 0) == 300 - 10, "extent 0 has %ld pages", stored_pages(&x, 0));
	compare(&x, "after growing again");

	/* a write past the old shrink point, then a shrink to 0 */
	CHECK_RET(uf_object_pwrite(obj, buf, 3 * 4096, 1000 * 4096), 3 * 4096);
	CHECK(pwrite(x.fd, buf, 3 * 4096, 1000 * 4096) == 3 * 4096, "pwrite");
	CHECK_RET(uf_object_sync(obj), 0);
	compare(&x, "after a late write");
	CHECK_RET(uf_object_truncate(obj, 0), 0);
	CHECK(ftruncate(x.fd, 0) == 0, "ftruncate");
	for (unsigned int e = 0; e < 3; e++)
		CHECK(stored_pages(&x, e) == 0, "after truncate to 0, extent %u has %ld pages", e,
		      stored_pages(&x, e));
	compare(&x, "after truncate to 0");

	/* an object whose size ends inside a page: removing it leaves no page */
	CHECK_RET(uf_object_pwrite(obj, buf, 5000, 0), 5000);
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(stored_pages(&x, 0) == 2, "a 5000-byte object has %ld pages", stored_pages(&x, 0));
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(x.url), 0);
	for (unsigned int e = 0; e < 3; e++)
		CHECK(stored_pages(&x, e) == 0, "after remove, extent %u has %ld pages", e,
		      stored_pages(&x, e));
	free(buf);
	printf("ok: truncate and punch-hole deleted the pages they dropped\n");
	return UT_PASS;
}
