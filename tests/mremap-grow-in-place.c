/* Description: mremap() growing a shared writable object mapping in place
 * (64 -> 128 pages, no MREMAP_MAYMOVE): the grown part is served with the
 * file's bytes (a page past EOF gets SIGBUS), writes there reach the file
 * on uf_object_sync() - also to a page that was already cached, which the
 * kernel maps without a fault - and the mapping is 128 pages long for
 * uf_find_vma(), uf_msync() and uf_munmap().  With asynchronous and with
 * synchronous write-protect.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PG	UF_PAGE_SIZE
#define OLDLEN	(64 * PG)
#define NEWLEN	(128 * PG)
#define SIZE	(100 * PG)

/*
 * Map so that the 64 pages after the mapping are ours: reserve 128 pages,
 * free the first 64 (the kernel places a new mapping at the top of the
 * highest gap that fits: there), and keep the rest reserved in *@room
 * until just before the grow: freed any earlier, another thread's mmap()
 * (a handler's buffer, a sanitizer's allocation) could take the gap.
 */
static unsigned char *map_with_room(struct uf_mm *mm, struct uf_object *obj,
				    unsigned char **room)
{
	unsigned char *held[16], *m = NULL;
	int i, nheld = 0;

	for (i = 0; i < 16 && !m; i++) {
		unsigned char *r = mmap(NULL, NEWLEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(r != MAP_FAILED, "mmap");
		munmap(r, OLDLEN);
		CHECK_RET(uf_mmap(mm, OLDLEN, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
				  (void **)&m), 0);
		if (m != r) {
			munmap(r + OLDLEN, NEWLEN - OLDLEN);
			held[nheld++] = m;
			m = NULL;
		} else {
			*room = r + OLDLEN;
		}
	}
	while (nheld)
		CHECK_RET(uf_munmap(mm, held[--nheld], OLDLEN), 0);
	if (!m) {
		fprintf(stderr, "skip: no room after a mapping\n");
		exit(UT_SKIP);
	}
	return m;
}

static void run(unsigned int flags)
{
	struct uf_mm_config cfg = { .flags = flags };
	unsigned char *m, *n, *room = NULL, buf[8];
	struct uf_object *obj;
	struct ut_fault f;
	struct uf_vma *vma;
	struct uf_mm *mm;
	char path[256];
	unsigned char v;
	size_t i;

	mm = ut_mm_create(&cfg);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	m = map_with_room(mm, obj, &room);
	/* page 70 is cached before the grow: the kernel maps it without a fault */
	CHECK(uf_object_pread(obj, buf, 1, 70 * PG) == 1, "pread");
	m[2 * PG] = 0x22;

	munmap(room, NEWLEN - OLDLEN);
	n = mremap(m, OLDLEN, NEWLEN, 0);
	CHECK(n == m, "mremap in place: %s", strerror(errno));

	for (i = 64; i < 100; i += 5)
		CHECK(n[i * PG + 3] == ut_pattern(i * PG + 3), "grown part, page %zu: %#x", i,
		      n[i * PG + 3]);
	CHECK(ut_read(n + 100 * PG, &v, &f) == SIGBUS, "page 100 (past EOF): signal %d", f.sig);
	CHECK(ut_read(n + 127 * PG, &v, &f) == SIGBUS, "page 127 (past EOF): signal %d", f.sig);
	n[70 * PG + 1] = 0x70;			/* cached: no fault */
	n[81 * PG + 1] = 0x81;			/* uncached: write fault */
	vma = uf_find_vma(mm, n + 90 * PG);
	CHECK(vma && uf_vma_start(vma) == n && uf_vma_len(vma) == NEWLEN, "uf_find_vma");
	CHECK_RET(uf_object_sync(obj), 0);
	CHECK(ut_file_byte(path, 2 * PG) == 0x22, "write to the old part lost");
	CHECK(ut_file_byte(path, 70 * PG + 1) == 0x70, "write to a cached page of the grown part lost");
	CHECK(ut_file_byte(path, 81 * PG + 1) == 0x81, "write to the grown part lost");
	n[95 * PG] = 0x95;
	CHECK_RET(uf_msync(mm, n + 64 * PG, 36 * PG, UF_MS_SYNC), 0);
	CHECK(ut_file_byte(path, 95 * PG) == 0x95, "write found by uf_msync lost");
	CHECK_RET(uf_munmap(mm, n, NEWLEN), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
}

int main(void)
{
	os_watchdog(60);
	ut_catch_signals();
	run(0);
	run(UF_MM_NO_WP_ASYNC);
	return 0;
}
