/* Description: a record holds the pages first touched in every address
 * space that maps the object: the parent's faults, a fork child's faults
 * through its shared and private mappings (and a grandchild's), in the
 * order they happened, each page once; a replay of that record in a fresh
 * mm reads the right bytes.  Skipped where this process gets no fork
 * event. */
#define _GNU_SOURCE
#include "fork-target.h"
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(4UL << 20)
#define PG	UF_PAGE_SIZE

static int byte_at(const unsigned char *map, uint64_t pg)
{
	return fk_byte(map + pg * PG + 7);
}

static bool right(const unsigned char *map, uint64_t pg)
{
	return byte_at(map, pg) == ut_pattern(pg * PG + 7);
}

int main(void)
{
	/* parent, child (shared, then private), grandchild, parent again */
	static const uint64_t want[] = { 40, 7, 90, 91, 300, 12, 500, 41 };
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	struct uf_mm_config cfg = { .handler_threads = 2 };
	char path[256], rec[300];
	unsigned char *shared, *priv;
	struct uf_object *obj;
	struct fk_sync *s;
	struct ws_file f;
	struct uf_mm *mm;
	pid_t pid;
	size_t i;
	int fd;

	ut_catch_signals();
	ut_watchdog(120);
	mm = ut_mm_create(&cfg);
	if (!ut_fork_events()) {
		printf("no fork event here\n");
		uf_mm_destroy(mm);
		return UT_SKIP;
	}
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&shared), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0, (void **)&priv),
		  0);
	s = fk_sync_new();

	CHECK_RET(uf_object_record(obj, rec), 0);
	CHECK(right(shared, 40), "parent: page 40");
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		pid_t gpid;

		FK_CHECK(s, right(shared, 7));
		FK_CHECK(s, right(shared, 40));	/* the parent's page: not again */
		FK_CHECK(s, right(priv, 90));
		FK_CHECK(s, right(priv, 91));
		priv[91 * PG] = 1;		/* the child's own copy */
		gpid = fork();
		FK_CHECK(s, gpid >= 0);
		if (gpid == 0) {
			FK_CHECK(s, right(shared, 300));
			FK_CHECK(s, right(priv, 12));
			_exit(0);
		}
		FK_CHECK(s, waitpid(gpid, NULL, 0) == gpid);
		FK_CHECK(s, right(shared, 500));
		_exit(0);
	}
	fk_reap("child", s, pid);
	CHECK(right(shared, 41), "parent: page 41");
	CHECK(right(shared, 7), "parent: page 7, the child's");
	CHECK_RET(uf_object_record_stop(obj), nwant);

	ws_read_file(rec, &f);
	printf("%lu pages in %lu runs, %zu bytes\n", (unsigned long)f.npages,
	       (unsigned long)f.nruns, f.len);
	CHECK(f.npages == nwant, "%lu pages recorded, want %zu", (unsigned long)f.npages, nwant);
	for (i = 0; i < nwant; i++)
		CHECK(f.pages[i] == want[i], "page %zu of the record is %lu, want %lu", i,
		      (unsigned long)f.pages[i], (unsigned long)want[i]);
	free(f.pages);
	CHECK_RET(uf_munmap(mm, shared, SIZE), 0);
	CHECK_RET(uf_munmap(mm, priv, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* the replay, in a fresh mm: the recorded pages, right */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, "/dev/shm/ws-record-fork.scratch");
	CHECK(ws_cache_pages(mm) >= nwant, "%lu pages cached after the replay",
	      (unsigned long)ws_cache_pages(mm));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&shared), 0);
	for (i = 0; i < nwant; i++)
		CHECK(right(shared, want[i]), "replay: page %lu", (unsigned long)want[i]);
	CHECK_RET(uf_munmap(mm, shared, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(rec);
	unlink(path);
	return 0;
}
