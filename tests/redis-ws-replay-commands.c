/* Description: a replay from a Redis object of a set scattered over many
 * extents, as ufault-bench --only ws's is, counted at the cluster: 96
 * recorded runs (48 runs of 4 pages and 48 single pages, two to an extent,
 * the two in a row in the record) cost at most one HMGET per extent a
 * batch touches (48 and a few, never one per run nor per page), no HGET
 * (the per-page read), and the cluster sends the set's bytes once (INFO
 * stats' total_net_output_bytes: nothing read twice, no extent read
 * whole); the cache then holds exactly the set, and it reads its bytes
 * through a mapping with no fault that reads. */
#define _GNU_SOURCE
#include "redis-test.h"
#include "ws-test.h"

#define NEXT	48				/* extents the set lies in */
#define EXT	512				/* pages per extent (redis/store.c) */
#define NPAGES	((uint64_t)(NEXT + 1) * EXT)
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define RUN	4
#define NRUNS	(2 * NEXT)
#define NSET	(NEXT * (RUN + 1))
#define PG	((long)UF_PAGE_SIZE)

static unsigned char want(uint64_t off)
{
	return (unsigned char)(ut_pattern(off) ^ 0x6b);
}

/* The set in recorded order: per extent k, taken in a scattered order, a
 * run of RUN pages, then a single page further on in the same extent. */
static void set_pages(uint64_t *pages)
{
	size_t n = 0, i, j;

	for (i = 0; i < NEXT; i++) {
		uint64_t base = (uint64_t)((i * 29) % NEXT) * EXT;

		for (j = 0; j < RUN; j++)
			pages[n++] = base + 7 + 3 * i + j;
		pages[n++] = base + 300 + i;
	}
}

/* Record the set by touching it in order, in a throwaway mm (readahead
 * off: the record holds the touches alone). */
static void record(const char *url, const uint64_t *pages, const char *rec)
{
	struct uf_mm_config nora = { .readahead_max = PG };
	struct uf_mm *mm = ut_mm_create(&nora);
	struct uf_object *obj;
	unsigned char *map;
	struct ws_file f;
	size_t i;

	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (i = 0; i < NSET; i++)
		CHECK(map[pages[i] * PG + 5] == want(pages[i] * PG + 5), "page %lu",
		      (unsigned long)pages[i]);
	CHECK_RET(uf_object_record_stop(obj), NSET);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	ws_read_file(rec, &f);
	CHECK(f.npages == NSET && f.nruns == NRUNS, "record: %lu pages in %lu runs",
	      (unsigned long)f.npages, (unsigned long)f.nruns);
	free(f.pages);
}

int main(void)
{
	struct rt_cluster c;
	char url[512], rec[] = "/tmp/redis-ws-replay-commands-XXXXXX", scratch[300];
	uint64_t pages[NSET];
	long hmgets, hgets, bytes, batches = NSET / 32 + 1;
	struct uf_object *obj;
	unsigned char *map;
	struct uf_stats st;
	struct uf_mm *mm;
	size_t i;
	int fd;

	rt_cluster(&c, "wscommands");
	rt_url(&c, url, sizeof(url), "obj", "");
	fd = mkstemp(rec);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	snprintf(scratch, sizeof(scratch), "%s.scratch", rec);
	set_pages(pages);
	rt_make_object(url, SIZE, pages, NSET, want);
	record(url, pages, rec);

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	hgets = rt_cmd_calls(&c, "hget");
	hmgets = rt_hmget_calls(&c);
	bytes = rt_info_sum(&c, "stats", "total_net_output_bytes");	/* (its reply counts) */
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	bytes = rt_info_sum(&c, "stats", "total_net_output_bytes") - bytes;
	hmgets = rt_hmget_calls(&c) - hmgets;
	hgets = rt_cmd_calls(&c, "hget") - hgets;
	printf("%d pages in %d runs over %d extents: %ld HMGETs, %ld HGETs, %ld bytes from the "
	       "cluster (the set %ld)\n", NSET, NRUNS, NEXT, hmgets, hgets, bytes, (long)NSET * PG);
	CHECK(hmgets >= NEXT && hmgets <= NEXT + batches, "%ld HMGETs for %d runs in %d extents",
	      hmgets, NRUNS, NEXT);
	CHECK(hgets == 0, "%ld HGETs: a page read alone", hgets);
	/* each page once, with a reply's framing (and an INFO reply per node);
	 * an extent read whole would be 2 MiB */
	CHECK(bytes >= (long)NSET * PG && bytes <= (long)NSET * PG + 64 * 1024,
	      "%ld bytes from the cluster for a set of %ld", bytes, (long)NSET * PG);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.cache_pages == NSET && st.pages_read == NSET, "%lu pages cached, %lu read; set %d",
	      (unsigned long)st.cache_pages, (unsigned long)st.pages_read, NSET);
	for (i = 0; i < NSET; i++)
		CHECK(map[pages[i] * PG + 77] == want(pages[i] * PG + 77), "page %lu: wrong byte",
		      (unsigned long)pages[i]);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	CHECK(st.major_faults == 0 && st.pages_read == NSET, "%lu major faults, %lu pages read",
	      (unsigned long)st.major_faults, (unsigned long)st.pages_read);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	unlink(rec);
	return UT_PASS;
}
