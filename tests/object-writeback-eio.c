/* Description: a store whose write fails with -EIO makes uf_object_sync()
 * and uf_msync() return -EIO (never 0), the pages stay dirty, and once the
 * store is repaired the next sync writes them (the bytes reach the store)
 * and a sync after that writes nothing.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	16
#define SIZE	(NPAGES * UF_PAGE_SIZE)

static void set_fail(struct os_store *s, int err)
{
	pthread_mutex_lock(&s->lock);
	s->fail_write = err;
	pthread_mutex_unlock(&s->lock);
}

static unsigned char store_byte(struct os_store *s, uint64_t off)
{
	unsigned char v;

	pthread_mutex_lock(&s->lock);
	v = s->data[off];
	pthread_mutex_unlock(&s->lock);
	return v;
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	bool exact = os_have_wp_async();
	unsigned int count[NPAGES];
	struct os_store st;
	struct uf_object *obj;
	unsigned char *map;
	size_t mark;
	int i;

	ut_catch_signals();
	os_watchdog(30);
	os_init(&st, SIZE);
	obj = os_object(mm, &st);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&map), 0);

	map[2 * UF_PAGE_SIZE + 5] = 0x55;
	map[9 * UF_PAGE_SIZE] = 0x99;
	CHECK_RET(uf_object_pwrite(obj, "\x77", 1, 7 * UF_PAGE_SIZE + 7), 1);

	set_fail(&st, -EIO);
	for (i = 0; i < 2; i++) {
		/* repeated: an error is reported every time, not once */
		CHECK_RET(uf_object_sync(obj), -EIO);
		CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), -EIO);
		CHECK_RET(uf_msync(mm, map + 2 * UF_PAGE_SIZE, UF_PAGE_SIZE, UF_MS_SYNC), -EIO);
		CHECK_RET(uf_msync(mm, map + 7 * UF_PAGE_SIZE, UF_PAGE_SIZE, UF_MS_SYNC), -EIO);
	}
	CHECK(store_byte(&st, 2 * UF_PAGE_SIZE + 5) == ut_pattern(2 * UF_PAGE_SIZE + 5),
	      "failed write changed the store");
	/* a page not dirty is not tried, and so cannot fail */
	if (exact)
		CHECK_RET(uf_msync(mm, map + 3 * UF_PAGE_SIZE, UF_PAGE_SIZE, UF_MS_SYNC), 0);

	/* the mapping still holds the bytes */
	CHECK(map[2 * UF_PAGE_SIZE + 5] == 0x55 && map[9 * UF_PAGE_SIZE] == 0x99,
	      "mapping lost its bytes after a failed sync");

	set_fail(&st, 0);
	mark = os_nwrites(&st);
	CHECK_RET(uf_msync(mm, map + 2 * UF_PAGE_SIZE, UF_PAGE_SIZE, UF_MS_SYNC), 0);
	os_written_pages(&st, mark, count, NPAGES, SIZE);
	CHECK(count[2] == 1, "repaired msync wrote page 2 %u times", count[2]);
	CHECK(store_byte(&st, 2 * UF_PAGE_SIZE + 5) == 0x55, "page 2 not in the store");

	mark = os_nwrites(&st);
	CHECK_RET(uf_object_sync(obj), 0);
	os_written_pages(&st, mark, count, NPAGES, SIZE);
	CHECK(count[7] == 1 && count[9] == 1, "repaired sync wrote page 7 %u, page 9 %u times",
	      count[7], count[9]);
	if (exact)
		CHECK(count[2] == 0, "page 2 written again after a successful msync");
	CHECK(store_byte(&st, 7 * UF_PAGE_SIZE + 7) == 0x77, "page 7 not in the store");
	CHECK(store_byte(&st, 9 * UF_PAGE_SIZE) == 0x99, "page 9 not in the store");

	if (exact) {
		mark = os_nwrites(&st);
		CHECK_RET(uf_object_sync(obj), 0);
		CHECK(os_nwrites(&st) == mark, "a sync after a good sync wrote %zu times",
		      os_nwrites(&st) - mark);
	}

	/* an error through pwrite-dirtied pages only, with no mapping */
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	CHECK_RET(uf_object_pwrite(obj, "\x33", 1, 3 * UF_PAGE_SIZE), 1);
	set_fail(&st, -EIO);
	CHECK_RET(uf_object_sync(obj), -EIO);
	set_fail(&st, 0);
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(store_byte(&st, 3 * UF_PAGE_SIZE) == 0x33, "page 3 not in the store");

	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	return 0;
}
