/* Description: a stray access into an object's own cache mapping (the
 * library's mapping of its page cache, which /proc/self/maps shows as
 * memfd:ufault-cache next to the program's mappings) gets SIGSEGV at once,
 * a read or a write, at a cached page or a hole -- never a fault served
 * again and again -- and a system call given such an address fails with
 * EFAULT; the object's own mapping is not affected.
 */
#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG	UF_PAGE_SIZE
#define NPAGES	8
#define SIZE	(NPAGES * PG)

/* The one memfd:ufault-cache mapping that is not @mine. */
static unsigned char *find_cache_map(const unsigned char *mine)
{
	unsigned char *found = NULL;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	CHECK(f, "/proc/self/maps: %m");
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (!strstr(line, "ufault-cache") || sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		if (s <= (unsigned long)mine && (unsigned long)mine < e)
			continue;
		CHECK(!found, "two cache mappings");
		found = (unsigned char *)s;
	}
	fclose(f);
	CHECK(found, "no cache mapping in /proc/self/maps");
	return found;
}

int main(void)
{
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *m, *cache, v;
	struct ut_fault f;
	int fds[2];

	ut_watchdog(60);
	ut_catch_signals();
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_create_mem(mm, SIZE, &obj), 0);
	CHECK_RET(uf_object_pwrite(obj, "ab", 2, 0), 2);	/* page 0 cached */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	cache = find_cache_map(m);

	CHECK(ut_read(cache + 5 * PG, &v, &f) == SIGSEGV, "read of a hole: signal %d", f.sig);
	CHECK(ut_read(cache + 1, &v, &f) == SIGSEGV, "read of a cached page: signal %d", f.sig);
	CHECK(ut_write(cache + 6 * PG, 1, &f) == SIGSEGV, "write to a hole: signal %d", f.sig);
	CHECK(pipe(fds) == 0, "pipe");
	CHECK(write(fds[1], cache + 7 * PG, 1) == -1 && errno == EFAULT, "write(2) from it");
	close(fds[0]);
	close(fds[1]);

	/* the object is as it was: the stray write went nowhere */
	CHECK(m[0] == 'a' && m[1] == 'b' && m[6 * PG] == 0 && m[5 * PG] == 0, "object bytes");
	m[5 * PG] = 5;
	CHECK_RET(uf_object_pread(obj, &v, 1, 5 * PG), 1);
	CHECK(v == 5, "write through the mapping: %d", v);
	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return 0;
}
