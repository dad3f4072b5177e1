/* Description: truncate and sync cost what is cached, not the object's
 * size: a 16 TiB sparse object with a few pages written far apart is
 * created, written, synced, shrunk to 1 TiB, grown again (the cut pages
 * read zero) and truncated to 0 well within the watchdog, and the page
 * state memory goes back when the pages go (heap use returns to where it
 * was); a size past what the address space can cache is -ENOMEM and
 * changes nothing; the errors are the documented ones.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <malloc.h>

#define TIB	(1ULL << 40)

struct sparse {
	pthread_mutex_t lock;
	unsigned int writes;
};

static ssize_t zero_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store;
	(void)off;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static int count_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct sparse *s = store;

	(void)buf;
	(void)len;
	(void)off;
	pthread_mutex_lock(&s->lock);
	s->writes++;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int any_truncate(void *store, uint64_t size)
{
	(void)store;
	(void)size;
	return 0;
}

static const struct uf_store_ops sparse_ops = {
	.read = zero_read,
	.write = count_write,
	.truncate = any_truncate,
};

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	uint64_t size = 16 * TIB, offs[4], i;
	struct sparse st = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct uf_object *obj;
	unsigned char page[UF_PAGE_SIZE], back[UF_PAGE_SIZE];
	size_t heap0;
	int ret;

	os_watchdog(60);
	heap0 = heap_in_use();
	ret = uf_object_create(mm, &sparse_ops, &st, size, &obj);
	/* sanitizer runtimes keep much of the address space (the cache
	 * reserves it for the whole size): try smaller, down to 16 GiB */
	while (ret == -ENOMEM && size > 16 * (TIB >> 10)) {
		size /= 4;
		ret = uf_object_create(mm, &sparse_ops, &st, size, &obj);
	}
	CHECK(ret == 0, "uf_object_create(%lu): %s", (unsigned long)size, strerror(-ret));
	offs[0] = 0;
	offs[1] = size / 5 & ~(uint64_t)(UF_PAGE_SIZE - 1);
	offs[2] = size / 5 * 3 & ~(uint64_t)(UF_PAGE_SIZE - 1);
	offs[3] = size - UF_PAGE_SIZE;
	for (i = 0; i < 4; i++) {
		memset(page, (int)(i + 1), sizeof(page));
		CHECK_RET(uf_object_pwrite(obj, page, sizeof(page), offs[i]), sizeof(page));
	}
	for (i = 0; i < 4; i++) {
		CHECK_RET(uf_object_pread(obj, back, sizeof(back), offs[i]), sizeof(back));
		CHECK(back[0] == i + 1 && back[4095] == i + 1, "page at %lu reads %u",
		      (unsigned long)offs[i], back[0]);
	}
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(st.writes == 4, "sync wrote %u times, want 4 (one per dirty page)", st.writes);
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(st.writes == 4, "a clean object was written again");

	/* shrink below the last three pages, then grow: they read zero */
	CHECK_RET(uf_object_truncate(obj, offs[1] - 5), 0);
	CHECK_RET(uf_object_pread(obj, back, sizeof(back), offs[1]), 0);
	CHECK_RET(uf_object_truncate(obj, size), 0);
	for (i = 1; i < 4; i++) {
		CHECK_RET(uf_object_pread(obj, back, sizeof(back), offs[i]), sizeof(back));
		CHECK(back[0] == 0 && back[4095] == 0, "page at %lu came back after the truncate",
		      (unsigned long)offs[i]);
	}

	/* more than the address space can hold: -ENOMEM, nothing changes */
	CHECK_RET(uf_object_truncate(obj, 1ULL << 62), -ENOMEM);
	CHECK(uf_object_size(obj) == size, "a failed truncate changed the size");
	CHECK_RET(uf_object_truncate(obj, 1ULL << 63), -EFBIG);
	CHECK_RET(uf_object_truncate(NULL, 0), -EINVAL);

	CHECK_RET(uf_object_truncate(obj, 0), 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* the page state went with the pages (the object itself and its
	 * small structures stay) */
	CHECK(heap_in_use() < heap0 + (1 << 20), "heap use %zu KiB after truncate to 0, %zu KiB "
	      "before the object", heap_in_use() >> 10, heap0 >> 10);
#else
	(void)heap0;
#endif
	uf_object_put(obj);
	uf_mm_destroy(mm);
	printf("%lu TiB sparse object: written, synced, shrunk, grown, emptied\n",
	       (unsigned long)(size / TIB));
	return 0;
}
