/* Description: the cache never exceeds its budget by more than one
 * readahead window: with four handler threads and four reading threads
 * (in order and at random), and when the store refuses every write-back,
 * in which case writes that find no room get SIGBUS instead of growing
 * the cache; once the store takes writes again, a sync writes every page
 * that was written and nothing is lost. */
#define _GNU_SOURCE
#include "cache-sampler.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE		(64ULL << 20)
#define NPAGES		(SIZE / UF_PAGE_SIZE)
#define BUDGET		(2ULL << 20)
#define BUDGET_PAGES	(BUDGET / UF_PAGE_SIZE)
#define WINDOW_PAGES	(BUDGET_PAGES / 8)
#define READERS		4

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A memory store whose writes fail while @refuse is set. */
struct refusing_store {
	unsigned char *data;
	bool refuse;			/* atomic */
	uint64_t refused;		/* atomic */
};

static ssize_t rs_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct refusing_store *s = store;

	if (off >= SIZE)
		return 0;
	if (len > SIZE - off)
		len = SIZE - off;
	memcpy(buf, s->data + off, len);
	return (ssize_t)len;
}

static int rs_write(void *store, const void *buf, size_t len, uint64_t off)
{
	struct refusing_store *s = store;

	if (__atomic_load_n(&s->refuse, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&s->refused, 1, __ATOMIC_RELAXED);
		return -EIO;
	}
	memcpy(s->data + off, buf, len);
	return 0;
}

static const struct uf_store_ops refusing_ops = { .read = rs_read, .write = rs_write };

struct reader {
	const unsigned char *map;
	unsigned int id;
};

static void *read_loop(void *p)
{
	struct reader *r = p;
	uint64_t i, seed = 1000 + r->id, pg;

	for (i = 0; i < NPAGES / READERS; i++) {
		pg = (r->id & 1) ? rnd(&seed) % NPAGES : (r->id * NPAGES / READERS + i) % NPAGES;
		CHECK(r->map[pg * UF_PAGE_SIZE + 3] == (unsigned char)(pg * 5 + 1),
		      "reader %u page %lu", r->id, (unsigned long)pg);
	}
	return NULL;
}

static void fill_pattern(unsigned char *data)
{
	uint64_t pg;

	for (pg = 0; pg < NPAGES; pg++)
		memset(data + pg * UF_PAGE_SIZE, (unsigned char)(pg * 5 + 1), UF_PAGE_SIZE);
}

static void run_readers(struct refusing_store *st)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET, .handler_threads = 4 };
	struct uf_mm *mm = ut_mm_create(&cfg);
	struct reader r[READERS];
	pthread_t t[READERS];
	struct ut_sampler s;
	struct uf_object *obj;
	unsigned char *map;
	uint64_t max;
	unsigned int i;

	CHECK_RET(uf_object_create(mm, &refusing_ops, st, SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	ut_sampler_start(&s, mm);
	for (i = 0; i < READERS; i++) {
		r[i] = (struct reader){ .map = map, .id = i };
		CHECK(pthread_create(&t[i], NULL, read_loop, &r[i]) == 0, "pthread_create");
	}
	for (i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	max = ut_sampler_stop(&s);
	printf("4 handlers, 4 readers: max cache %lu pages (budget %lu + window %lu)\n",
	       (unsigned long)max, (unsigned long)BUDGET_PAGES, (unsigned long)WINDOW_PAGES);
	CHECK(max <= BUDGET_PAGES + WINDOW_PAGES, "cache reached %lu pages", (unsigned long)max);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void run_refused_writeback(struct refusing_store *st)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET, .handler_threads = 2 };
	struct uf_mm *mm = ut_mm_create(&cfg);
	struct uf_object *obj;
	struct ut_fault f;
	struct ut_sampler s;
	unsigned char *map, *written;
	uint64_t pg, max, ok = 0, bus = 0;

	written = calloc(NPAGES, 1);
	CHECK(written, "calloc");
	CHECK_RET(uf_object_create(mm, &refusing_ops, st, SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&map), 0);
	__atomic_store_n(&st->refuse, true, __ATOMIC_RELEASE);
	ut_sampler_start(&s, mm);
	/* dirty four budgets' worth of pages: only a budget's can stay */
	for (pg = 0; pg < 4 * BUDGET_PAGES; pg++) {
		if (ut_write(map + pg * 4 * UF_PAGE_SIZE + 11, 0x5a, &f) == 0) {
			written[pg * 4] = 1;
			ok++;
		} else {
			CHECK(f.sig == SIGBUS, "signal %d", f.sig);
			bus++;
		}
	}
	max = ut_sampler_stop(&s);
	printf("refused write-back: max cache %lu pages, %lu writes done, %lu SIGBUS, "
	       "%lu refused\n", (unsigned long)max, (unsigned long)ok, (unsigned long)bus,
	       (unsigned long)__atomic_load_n(&st->refused, __ATOMIC_RELAXED));
	CHECK(max <= BUDGET_PAGES + WINDOW_PAGES, "cache reached %lu pages", (unsigned long)max);
	CHECK(bus > 0, "no write failed: the cache held them all?");
	CHECK(uf_msync(mm, map, SIZE, UF_MS_SYNC) == -EIO, "msync with the store refusing");

	/* the store takes writes again: everything written reaches it */
	__atomic_store_n(&st->refuse, false, __ATOMIC_RELEASE);
	CHECK_RET(uf_msync(mm, map, SIZE, UF_MS_SYNC), 0);
	for (pg = 0; pg < NPAGES; pg++)
		CHECK(st->data[pg * UF_PAGE_SIZE + 11] ==
		      (written[pg] ? 0x5a : (unsigned char)(pg * 5 + 1)),
		      "page %lu: store holds %#x", (unsigned long)pg,
		      st->data[pg * UF_PAGE_SIZE + 11]);
	/* and writes work again */
	CHECK(ut_write(map + (NPAGES - 1) * UF_PAGE_SIZE, 1, &f) == 0, "write after recovery");
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(written);
}

int main(void)
{
	struct refusing_store st = { 0 };

	ut_catch_signals();
	st.data = malloc(SIZE);
	CHECK(st.data, "malloc");
	fill_pattern(st.data);
	run_readers(&st);
	run_refused_writeback(&st);
	free(st.data);
	return 0;
}
