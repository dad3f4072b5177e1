/* Description: the object's last put, or uf_mm_destroy() first, while a
 * prefetch of a 16384-page set still runs: the put returns with the object
 * gone (an O_RDWR reopen finds its file lock released), the prefetch stops,
 * and nothing leaks or crashes (ASan, TSan).  20 rounds each way on the
 * disk file store, with the object opened O_RDWR.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(64UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE

struct ctx {
	char path[256], rec[300];
};

static void record(struct ctx *c)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	uint64_t p;
	char b;

	CHECK_RET(uf_object_open(mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_record(obj, c->rec), 0);
	for (p = 0; p < NPAGES; p += 4)		/* every 4th page: 16384 runs */
		CHECK_RET(uf_object_pread(obj, &b, 1, p * PG), 1);
	CHECK_RET(uf_object_record_stop(obj), NPAGES / 4);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void round_(struct ctx *c, bool destroy_first)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	void *map;

	CHECK_RET(uf_object_open(mm, c->path, O_RDWR, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &map), 0);
	CHECK_RET(uf_object_prefetch(obj, c->rec), 0);
	(void)*(volatile char *)map;
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	if (destroy_first) {
		uf_mm_destroy(mm);
		uf_object_put(obj);
	} else {
		uf_object_put(obj);
		uf_mm_destroy(mm);
	}
	/* the file lock went with the last put */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, c->path, O_RDWR, &obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ctx c = { 0 };
	int fd, r;

	fd = ut_make_file("/var/tmp", SIZE, c.path, sizeof(c.path));
	close(fd);
	snprintf(c.rec, sizeof(c.rec), "%s.ws", c.path);
	record(&c);
	for (r = 0; r < 20; r++) {
		round_(&c, false);
		round_(&c, true);
	}
	unlink(c.rec);
	unlink(c.path);
	return 0;
}
