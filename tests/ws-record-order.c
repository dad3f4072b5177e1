/* Description: uf_object_record() holds each page of an object once, in
 * order of first access, whether touched through a shared or a private
 * mapping or read by uf_object_pread(), and no page untouched, though
 * readahead may read some ahead (see ws-record-watched);
 * uf_object_record_stop() returns the count and leaves only the record
 * file (no temporary); readahead works again afterwards; the object's
 * last put ends a record too.  On the tmpfs and disk file stores.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <glob.h>
#include <sys/mman.h>

#define SIZE	(16UL << 20)
#define PG	UF_PAGE_SIZE

struct ctx {
	struct uf_mm *mm;
	const char *name;
	char path[256], rec[300];
};

static void touch(struct ctx *c, const unsigned char *map, uint64_t map_pgoff, uint64_t pg)
{
	unsigned char v = 0;
	struct ut_fault f;

	CHECK(ut_read(map + (pg - map_pgoff) * PG + 7, &v, &f) == 0, "%s: page %lu: signal %d",
	      c->name, (unsigned long)pg, f.sig);
	CHECK(v == ut_pattern(pg * PG + 7), "%s: page %lu reads %u", c->name, (unsigned long)pg, v);
}

static void no_temporaries(struct ctx *c)
{
	char pat[320];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s.tmp.*", c->rec);
	CHECK(glob(pat, 0, NULL, &g) == GLOB_NOMATCH, "%s: a temporary file is left: %s", c->name,
	      g.gl_pathc ? g.gl_pathv[0] : "?");
	globfree(&g);
}

static void run(struct ctx *c, const char *dir)
{
	static const uint64_t want[] = { 10, 3, 11, 12, 13, 50, 51, 0, 1, 2000 };
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	unsigned char *m1, *m2, buf[PG];
	struct uf_object *obj;
	struct ws_file f;
	uint64_t before;
	size_t i;
	int fd;

	fd = ut_make_file(dir, SIZE, c->path, sizeof(c->path));
	close(fd);
	snprintf(c->rec, sizeof(c->rec), "%s.ws", c->path);
	CHECK_RET(uf_object_open(c->mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m1), 0);
	CHECK_RET(uf_mmap(c->mm, SIZE - 2 * PG, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 2 * PG,
			  (void **)&m2), 0);

	CHECK_RET(uf_object_record(obj, c->rec), 0);
	CHECK_RET(uf_object_record(obj, c->rec), -EBUSY);
	touch(c, m1, 0, 10);
	touch(c, m2, 2, 3);
	touch(c, m1, 0, 11);
	touch(c, m1, 0, 12);
	touch(c, m1, 0, 13);
	CHECK_RET(uf_object_pread(obj, buf, PG, 50 * PG + 100), PG);	/* pages 50 and 51 */
	touch(c, m2, 2, 10);		/* seen already, through the other mapping */
	touch(c, m1, 0, 0);		/* the start of a stream: no window now */
	touch(c, m1, 0, 1);
	CHECK_RET(uf_object_pread(obj, buf, 10, 11 * PG), 10);	/* seen already */
	touch(c, m1, 0, 2000);		/* far from the streams: a fault */
	m2[3 * PG] = 1;			/* a private write to page 5 (5 - 2 = 3) */
	CHECK(ws_cache_pages(c->mm) >= nwant + 1, "%s: %lu pages cached, %zu touched", c->name,
	      (unsigned long)ws_cache_pages(c->mm), nwant + 1);
	CHECK_RET(uf_object_record_stop(obj), nwant + 1);
	CHECK_RET(uf_object_record_stop(obj), -EINVAL);
	no_temporaries(c);

	ws_read_file(c->rec, &f);
	printf("%s: %lu pages in %lu runs, %zu bytes\n", c->name, (unsigned long)f.npages,
	       (unsigned long)f.nruns, f.len);
	CHECK(f.version == 1 && f.kind == 1 && f.size == SIZE, "%s: header %u %u %lu", c->name,
	      f.version, f.kind, (unsigned long)f.size);
	CHECK(f.npages == nwant + 1, "%s: %lu pages recorded", c->name, (unsigned long)f.npages);
	for (i = 0; i < nwant; i++)
		CHECK(f.pages[i] == want[i], "%s: page %zu of the record is %lu, want %lu", c->name, i,
		      (unsigned long)f.pages[i], (unsigned long)want[i]);
	CHECK(f.pages[nwant] == 5, "%s: last page %lu", c->name, (unsigned long)f.pages[nwant]);
	CHECK(f.nruns == 7, "%s: %lu runs", c->name, (unsigned long)f.nruns);
	free(f.pages);

	/* readahead is back: a sequential pair reads a window (far from
	 * what the record's readahead may have read) */
	before = ws_cache_pages(c->mm);
	touch(c, m1, 0, 3000);
	touch(c, m1, 0, 3001);
	CHECK(ws_cache_pages(c->mm) > before + 2, "%s: no readahead after the record", c->name);

	/* the last put ends a record and writes it (pages not cached: the
	 * readahead just now reads from 3002 on) */
	CHECK_RET(uf_object_record(obj, c->rec), 0);
	touch(c, m1, 0, 2500);
	touch(c, m1, 0, 2200);
	CHECK_RET(uf_munmap(c->mm, m1, SIZE), 0);
	CHECK_RET(uf_munmap(c->mm, m2, SIZE - 2 * PG), 0);
	uf_object_put(obj);
	ws_read_file(c->rec, &f);
	CHECK(f.npages == 2 && f.pages[0] == 2500 && f.pages[1] == 2200, "%s: put: %lu pages", c->name,
	      (unsigned long)f.npages);
	free(f.pages);
	no_temporaries(c);
	unlink(c->rec);
	unlink(c->path);
}

int main(void)
{
	struct ctx c = { 0 };

	ut_catch_signals();
	c.mm = ut_mm_create(NULL);
	c.name = "tmpfs";
	run(&c, "/dev/shm");
	c.name = "disk";
	run(&c, "/var/tmp");
	uf_mm_destroy(c.mm);
	return 0;
}
