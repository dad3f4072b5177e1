/* Description: a prefetch into an object whose store has a ->readv
 * (uf_object_set_readv) reads the recorded set through it, many runs a
 * call (at most 512 pages, page-aligned extents that do not overlap) and
 * no page through ->read; the pages hold the store's bytes and touching
 * them takes no major fault.  When ->readv fails the set still comes in,
 * through ->read.  Under a cache budget of 256 pages it stops short of the
 * budget, evicting nothing.  uf_object_set_readv refuses a file object
 * and NULL.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(64UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NSINGLE	512
#define NRUNS	32
#define RUNLEN	16
#define NSET	(NSINGLE + NRUNS * RUNLEN)

struct store {
	bool fail_readv;
	uint64_t readv_calls, readv_pages, read_pages;	/* atomic */
	uint64_t bad;					/* atomic */
};

static ssize_t st_read(void *s, void *buf, size_t len, uint64_t off)
{
	struct store *st = s;

	ut_fill_pattern(buf, len, off);
	__atomic_add_fetch(&st->read_pages, (len + PG - 1) / PG, __ATOMIC_RELAXED);
	return (ssize_t)len;
}

static int st_readv(void *s, const struct uf_store_iov *iov, size_t n)
{
	struct store *st = s;
	uint64_t pages = 0;
	size_t i, k;

	__atomic_add_fetch(&st->readv_calls, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		if (iov[i].off % PG || !iov[i].len || iov[i].off + iov[i].len > SIZE)
			__atomic_add_fetch(&st->bad, 1, __ATOMIC_RELAXED);
		for (k = 0; k < i; k++)
			if (iov[k].off < iov[i].off + iov[i].len && iov[i].off < iov[k].off + iov[k].len)
				__atomic_add_fetch(&st->bad, 1, __ATOMIC_RELAXED);
		pages += (iov[i].len + PG - 1) / PG;
	}
	if (pages > 512)
		__atomic_add_fetch(&st->bad, 1, __ATOMIC_RELAXED);
	if (st->fail_readv)
		return -EIO;
	for (i = 0; i < n; i++)
		ut_fill_pattern(iov[i].buf, iov[i].len, iov[i].off);
	__atomic_add_fetch(&st->readv_pages, pages, __ATOMIC_RELAXED);
	return 0;
}

static const struct uf_store_ops ops = { .read = st_read };

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* NRUNS runs of RUNLEN and NSINGLE singles, a page apart at least, in a
 * shuffled order */
static void make_set(uint64_t *set)
{
	unsigned char *used = calloc(NPAGES, 1);
	uint64_t seed = 0x2545f4914f6cdd1dULL, start[NRUNS + NSINGLE], t;
	size_t n = 0, i, k, len;

	CHECK(used != NULL, "calloc");
	for (i = 0; i < NRUNS + NSINGLE; i++) {
		len = i < NRUNS ? RUNLEN : 1;
		do {
			start[i] = 1 + rnd(&seed) % (NPAGES - RUNLEN - 2);
			for (k = 0; k < len + 2 && !used[start[i] - 1 + k]; k++)
				;
		} while (k < len + 2);
		memset(used + start[i], 1, len);
	}
	for (i = NRUNS + NSINGLE - 1; i > 0; i--) {
		k = rnd(&seed) % (i + 1);
		t = start[i], start[i] = start[k], start[k] = t;
	}
	/* items lie a free page apart: a run is an item whose next page is used */
	for (i = 0; i < NRUNS + NSINGLE; i++) {
		len = used[start[i] + 1] ? RUNLEN : 1;
		for (k = 0; k < len; k++)
			set[n++] = start[i] + k;
	}
	CHECK(n == NSET, "set of %zu pages", n);
	free(used);
}

static struct uf_object *open_obj(struct uf_mm *mm, struct store *st)
{
	struct uf_object *obj;

	CHECK_RET(uf_object_create(mm, &ops, st, SIZE, &obj), 0);
	CHECK_RET(uf_object_set_readv(obj, st_readv), 0);
	return obj;
}

static void record(const char *rec, const uint64_t *set)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct store st = { 0 };
	struct uf_object *obj = open_obj(mm, &st);
	volatile unsigned char sink;
	unsigned char *map;
	size_t i;

	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (i = 0; i < NSET; i++)
		sink = map[set[i] * PG];
	(void)sink;
	CHECK_RET(uf_object_record_stop(obj), NSET);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

#define BUDGET_PAGES	256

/* the head of the set, under a budget */
static void replay_budget(const char *rec, const char *scratch)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET_PAGES * PG };
	struct uf_mm *mm = ut_mm_create(&cfg);
	struct store st = { 0 };
	struct uf_object *obj = open_obj(mm, &st);
	unsigned char *map;
	struct uf_stats s;

	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	CHECK_RET(uf_mm_stats(mm, &s), 0);
	printf("budget %d pages: %lu cached, %lu by readv, %lu evicted\n", BUDGET_PAGES,
	       (unsigned long)s.cache_pages, (unsigned long)st.readv_pages,
	       (unsigned long)s.evicted_pages);
	CHECK(s.cache_pages <= BUDGET_PAGES - BUDGET_PAGES / 16 && s.cache_pages >= BUDGET_PAGES / 2,
	      "%lu pages cached, budget %d", (unsigned long)s.cache_pages, BUDGET_PAGES);
	CHECK(s.evicted_pages == 0, "%lu pages evicted", (unsigned long)s.evicted_pages);
	CHECK(st.bad == 0, "%lu extents out of the contract", (unsigned long)st.bad);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void replay(const char *rec, const char *scratch, const uint64_t *set, bool fail)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct store st = { .fail_readv = fail };
	struct uf_object *obj = open_obj(mm, &st);
	unsigned char *map, v;
	struct ut_fault f;
	struct uf_stats s;
	size_t i;

	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	printf("%s: %lu readv calls, %lu pages by readv, %lu by read\n",
	       fail ? "failing readv" : "readv", (unsigned long)st.readv_calls,
	       (unsigned long)st.readv_pages, (unsigned long)st.read_pages);
	CHECK(st.bad == 0, "%lu extents out of the contract", (unsigned long)st.bad);
	CHECK(st.readv_calls > 0, "readv never called");
	if (!fail) {
		CHECK(st.readv_pages == NSET && st.read_pages == 0,
		      "%lu pages by readv, %lu by read; the set is %d",
		      (unsigned long)st.readv_pages, (unsigned long)st.read_pages, NSET);
		CHECK(st.readv_calls <= NSET / 16, "%lu readv calls for %d pages",
		      (unsigned long)st.readv_calls, NSET);
	} else {
		CHECK(st.read_pages >= NSET, "%lu pages by read", (unsigned long)st.read_pages);
	}
	for (i = 0; i < NSET; i++) {
		uint64_t off = set[i] * PG + (i * 37) % PG;

		CHECK(ut_read(map + off, &v, &f) == 0 && v == ut_pattern(off),
		      "page %lu: wrong byte", (unsigned long)set[i]);
	}
	CHECK_RET(uf_mm_stats(mm, &s), 0);
	CHECK(s.major_faults == 0, "%lu major faults over the prefetched set",
	      (unsigned long)s.major_faults);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	uint64_t *set = malloc(NSET * sizeof(*set));
	char path[256], rec[300], scratch[300];
	struct uf_object *fobj;
	struct uf_mm *mm;
	int fd;

	ut_catch_signals();
	CHECK(set != NULL, "malloc");
	make_set(set);
	fd = ut_make_file("/dev/shm", 1 << 20, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	snprintf(scratch, sizeof(scratch), "%s.scratch", path);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &fobj), 0);
	CHECK_RET(uf_object_set_readv(fobj, st_readv), -EINVAL);
	CHECK_RET(uf_object_set_readv(NULL, st_readv), -EINVAL);
	uf_object_put(fobj);
	uf_mm_destroy(mm);

	record(rec, set);
	replay(rec, scratch, set, false);
	replay(rec, scratch, set, true);
	replay_budget(rec, scratch);
	unlink(rec);
	unlink(path);
	free(set);
	return 0;
}
