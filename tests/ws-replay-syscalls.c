/* Description: a replay of a working set from a file batches what it asks
 * of the kernel, counted with ptrace over every thread: one UFFDIO_COPY per
 * group of recorded runs that touch in the object (not one per run), one
 * read per group at most (runs a few pages apart share a preadv), and one
 * MADV_POPULATE_READ call per batch of runs (process_madvise, Linux 6.15+;
 * one per group before); the set's pages are then mapped and hold the
 * file's bytes. */
#define _GNU_SOURCE
#include "ws-syscalls.h"

struct ctx {
	char path[256], rec[64];
};

/* In the traced child: record the set, then replay it in a fresh mm. */
static void replay(void *arg)
{
	struct ctx *x = arg;
	uint64_t pages[WSC_NSET];
	struct uf_object *obj;
	unsigned char *map;
	struct uf_mm *mm;
	size_t i;

	wsc_pages(pages);
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, x->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, WSC_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	wsc_record(obj, map, x->rec);
	CHECK_RET(uf_munmap(mm, map, WSC_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, x->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, WSC_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	sc_mark(SC_BEGIN);
	CHECK_RET(uf_object_prefetch(obj, x->rec), 0);
	wsc_wait(mm, WSC_NSET);
	sc_mark(SC_END);
	CHECK(ws_pages_mapped(map, pages, WSC_NSET) == WSC_NSET, "set pages not all mapped");
	for (i = 0; i < WSC_NSET; i++) {
		uint64_t off = pages[i] * UF_PAGE_SIZE + 123;

		CHECK(map[off] == ut_pattern(off), "page %lu: wrong byte", (unsigned long)pages[i]);
	}
	CHECK_RET(uf_munmap(mm, map, WSC_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ctx x = { .rec = "/tmp/ws-replay-syscalls-XXXXXX" };
	struct sc_counts c;
	int fd, ret;

	fd = mkstemp(x.rec);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	close(ut_make_file("/dev/shm", WSC_SIZE, x.path, sizeof(x.path)));
	ret = sc_run(replay, &x, &c);
	unlink(x.path);
	unlink(x.rec);
	if (ret == UT_SKIP) {
		printf("skip: userfaultfd is not usable here\n");
		return UT_SKIP;
	}
	CHECK(ret == 0, "the replay failed (status %d)", ret);
	wsc_check(&c, "file");
	/* (and the record file's, the worker's wake-ups) */
	CHECK(c.reads <= WSC_EXTENTS + WSC_NSET / 32, "file: %lu reads for %d groups of runs",
	      c.reads, WSC_EXTENTS);
	return UT_PASS;
}
