/* Description: bytes written through a shared mapping of a Redis object and
 * synced are read back, through a mapping, by a new mm (a cold cache):
 * across extents, with a short last page; pages never written read zero and
 * are not stored; uf_redis_remove() deletes it all. */
#define _GNU_SOURCE
#include "redis-test.h"

#define NPAGES	1100		/* three extents of 512 pages */
#define SIZE	((uint64_t)NPAGES * UF_PAGE_SIZE - 100)

static unsigned char want(uint64_t off)
{
	uint64_t pg = off / UF_PAGE_SIZE;

	/* every third page is never written */
	return pg % 3 == 1 ? 0 : (unsigned char)(ut_pattern(off) | 1);
}

int main(void)
{
	struct rt_cluster c;
	struct uf_mm *mm;
	struct uf_object *obj;
	char url[512], key[600];
	unsigned char *p;
	uint64_t off;
	int ret;

	rt_cluster(&c, "readback");
	alarm(120);
	rt_url(&c, url, sizeof(url), "obj", "");

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url, O_RDWR, &obj), -ENOENT);
	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "uf_redis_open O_CREAT: %s", strerror(-ret));
	CHECK(uf_object_size(obj) == 0, "a new object has size %lu", (unsigned long)uf_object_size(obj));
	CHECK_RET(uf_object_truncate(obj, SIZE), 0);
	ret = uf_mmap(mm, (size_t)NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
		      (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));
	for (off = 0; off < SIZE; off++)
		if (want(off))
			p[off] = want(off);
	CHECK_RET(uf_msync(mm, p, (size_t)NPAGES * UF_PAGE_SIZE, UF_MS_SYNC), 0);
	CHECK_RET(uf_munmap(mm, p, (size_t)NPAGES * UF_PAGE_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* what reached the cluster: extent 0 holds pages 0, 2, 3, 5, ... */
	snprintf(key, sizeof(key), "uf:{%s-obj:0}:x", c.prefix);
	CHECK(rt_cli_int(&c, "HLEN %s", key) == 512 - 171,
	      "extent 0 has %ld pages stored, want %d (never-written pages are not stored)",
	      rt_cli_int(&c, "HLEN %s", key), 512 - 171);

	/* a new mm reads them back cold */
	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, url, O_RDONLY, &obj);
	CHECK(ret == 0, "uf_redis_open O_RDONLY: %s", strerror(-ret));
	CHECK(uf_object_size(obj) == SIZE, "size %lu, want %lu", (unsigned long)uf_object_size(obj),
	      (unsigned long)SIZE);
	ret = uf_mmap(mm, (size_t)NPAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "uf_mmap: %s", strerror(-ret));
	for (off = 0; off < SIZE; off++)
		CHECK(p[off] == want(off), "byte %lu is %u, want %u", (unsigned long)off, p[off], want(off));
	CHECK_RET(uf_munmap(mm, p, (size_t)NPAGES * UF_PAGE_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	CHECK_RET(uf_redis_remove(url), 0);
	CHECK(rt_cli_int(&c, "EXISTS %s", key) == 0, "extent 0 still exists after remove");
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -ENOENT);
	CHECK_RET(uf_redis_remove(url), -ENOENT);
	uf_mm_destroy(mm);
	printf("ok: %d pages written, synced, read back cold, removed\n", NPAGES);
	return UT_PASS;
}
