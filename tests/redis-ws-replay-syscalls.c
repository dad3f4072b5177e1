/* Description: a replay of a working set from a Redis object batches what
 * it asks of the kernel and of the cluster, counted with ptrace over every
 * thread: one UFFDIO_COPY per group of recorded runs that touch in the
 * object (not one per run), one MADV_POPULATE_READ call per batch of runs
 * (process_madvise, Linux 6.15+; one per group before), and a few socket
 * writes per batch (one HMGET per extent a batch touches, pipelined), not
 * one per run; the set's pages are then mapped and hold the bytes written. */
#define _GNU_SOURCE
#include "redis-test.h"
#include "ws-syscalls.h"

struct ctx {
	char url[512], rec[64];
};

static unsigned char want(uint64_t off)
{
	return (unsigned char)(ut_pattern(off) ^ 0x5a);
}

/* In the traced child (which has no thread of the test's before): the
 * object, the set recorded, then replayed in a fresh mm. */
static void replay(void *arg)
{
	struct ctx *x = arg;
	uint64_t pages[WSC_NSET];
	struct uf_object *obj;
	unsigned char *map;
	struct uf_mm *mm;
	size_t i;

	wsc_pages(pages);
	rt_make_object(x->url, WSC_SIZE, pages, WSC_NSET, want);
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, x->url, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, WSC_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	wsc_record(obj, map, x->rec);
	CHECK_RET(uf_munmap(mm, map, WSC_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, x->url, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, WSC_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	sc_mark(SC_BEGIN);
	CHECK_RET(uf_object_prefetch(obj, x->rec), 0);
	wsc_wait(mm, WSC_NSET);
	sc_mark(SC_END);
	CHECK(ws_pages_mapped(map, pages, WSC_NSET) == WSC_NSET, "set pages not all mapped");
	for (i = 0; i < WSC_NSET; i++) {
		uint64_t off = pages[i] * UF_PAGE_SIZE + 321;

		CHECK(map[off] == want(off), "page %lu: wrong byte", (unsigned long)pages[i]);
	}
	CHECK_RET(uf_munmap(mm, map, WSC_SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ctx x = { .rec = "/tmp/redis-ws-replay-syscalls-XXXXXX" };
	struct rt_cluster cl;
	struct sc_counts c;
	int fd, ret;

	rt_cluster(&cl, "wssyscalls");
	rt_url(&cl, x.url, sizeof(x.url), "obj", "");
	fd = mkstemp(x.rec);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	ret = sc_run(replay, &x, &c);
	unlink(x.rec);
	if (ret == UT_SKIP) {
		printf("skip: userfaultfd is not usable here\n");
		return UT_SKIP;
	}
	CHECK_RET(uf_redis_remove(x.url), 0);
	CHECK(ret == 0, "the replay failed (status %d)", ret);
	wsc_check(&c, "redis");
	/* a batch's HMGETs go out in a write or two per node */
	CHECK(c.sends <= WSC_NSET / 8, "redis: %lu socket writes for %d runs", c.sends, WSC_RUNS);
	return UT_PASS;
}
