/* Description: a record keeps readahead on where ufault can watch the
 * page tables (Linux 6.7+): the cache reads ahead of the touches, yet the
 * record holds exactly the pages touched, in the order touched, through
 * a shared writable and a private mapping and pread, including pages read
 * ahead and touched after the last fault; the bytes read are right.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>
#include <sys/utsname.h>

#define SIZE	(16UL << 20)
#define PG	UF_PAGE_SIZE
#define MAXWANT	128

static uint64_t want[MAXWANT];
static size_t nwant;

static void touch(const unsigned char *map, uint64_t pg)
{
	unsigned char v = 0;
	struct ut_fault f;

	CHECK(ut_read(map + pg * PG + 9, &v, &f) == 0, "page %lu: signal %d", (unsigned long)pg,
	      f.sig);
	CHECK(v == ut_pattern(pg * PG + 9), "page %lu reads %u", (unsigned long)pg, v);
	want[nwant++] = pg;
}

static void touch_run(const unsigned char *map, uint64_t first, uint64_t n)
{
	uint64_t pg;

	for (pg = first; pg < first + n; pg++)
		touch(map, pg);
}

/* Linux 6.7 or later: PAGEMAP_SCAN, so the record can watch readahead */
static bool can_watch(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	return uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	       (major > 6 || (major == 6 && minor >= 7));
}

int main(void)
{
	char path[256], rec[300];
	unsigned char *m1, *m2, buf[PG];
	struct uf_object *obj;
	struct ws_file f;
	struct uf_mm *mm;
	uint64_t cached;
	size_t i;
	int fd;

	ut_catch_signals();
	mm = ut_mm_create(NULL);
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	CHECK_RET(uf_object_open(mm, path, O_RDWR, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&m1), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	/* mapped after the record started: watched too */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_PRIVATE, obj, 0, (void **)&m2), 0);

	touch_run(m1, 0, 64);		/* a stream: readahead windows */
	touch(m1, 500);
	touch_run(m2, 2000, 16);
	CHECK_RET(uf_object_pread(obj, buf, 100, 3000 * PG), 100);
	CHECK(buf[9] == ut_pattern(3000 * PG + 9), "pread reads %u", buf[9]);
	want[nwant++] = 3000;
	touch_run(m1, 64, 16);		/* read ahead already, most of them */

	cached = ws_cache_pages(mm);
	printf("%zu pages touched, %lu cached\n", nwant, (unsigned long)cached);
	if (can_watch())
		CHECK(cached > nwant, "no readahead while recording: %lu cached",
		      (unsigned long)cached);
	CHECK_RET(uf_object_record_stop(obj), (int)nwant);

	ws_read_file(rec, &f);
	CHECK(f.npages == nwant, "%lu pages recorded, %zu touched", (unsigned long)f.npages, nwant);
	for (i = 0; i < nwant && i < f.npages; i++)
		CHECK(f.pages[i] == want[i], "page %zu of the record is %lu, want %lu", i,
		      (unsigned long)f.pages[i], (unsigned long)want[i]);
	free(f.pages);

	/* after the record: the mappings still read right */
	touch_run(m1, 4000, 8);
	touch_run(m2, 4000, 8);
	CHECK_RET(uf_munmap(mm, m1, SIZE), 0);
	CHECK_RET(uf_munmap(mm, m2, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(rec);
	unlink(path);
	return 0;
}
