/* Description: readers in two processes map a Redis object at the same time
 * (each with two handler threads, so two connections per node) while its
 * writer still holds it open, and both see exactly what the writer synced;
 * a page the writer changed but did not sync is not seen. */
#define _GNU_SOURCE
#include "redis-test.h"

#include <spawn.h>

extern char **environ;

#define NPAGES	2048

static unsigned char want(uint64_t off)
{
	return (unsigned char)(ut_pattern(off) ^ 0x5a);
}

/* One reader process: map the whole object and check every byte, from
 * two threads' worth of faults (two handler threads). */
static int reader(const char *url)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct uf_mm *mm = ut_mm_create(&cfg);
	struct uf_object *obj;
	unsigned char *p;
	uint64_t off;
	int ret;

	ut_catch_signals();
	ret = uf_redis_open(mm, url, O_RDONLY, &obj);
	CHECK(ret == 0, "reader open: %s", strerror(-ret));
	CHECK(uf_object_size(obj) == (uint64_t)NPAGES * UF_PAGE_SIZE, "reader: size %lu",
	      (unsigned long)uf_object_size(obj));
	ret = uf_mmap(mm, (size_t)NPAGES * UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p);
	CHECK(ret == 0, "reader mmap: %s", strerror(-ret));
	/* from the end backwards, in strides: not one long sequential window */
	for (uint64_t s = 0; s < 7; s++)
		for (uint64_t pg = NPAGES - 1 - s; pg < NPAGES; pg -= 7) {
			for (off = pg * UF_PAGE_SIZE; off < (pg + 1) * UF_PAGE_SIZE; off++) {
				unsigned char w = pg == 5 ? 0 : want(off);

				CHECK(p[off] == w, "reader %d: byte %lu is %u, want %u", (int)getpid(),
				      (unsigned long)off, p[off], w);
			}
			if (pg < 7)
				break;
		}
	uf_munmap(mm, p, (size_t)NPAGES * UF_PAGE_SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}

int main(int argc, char **argv)
{
	struct rt_cluster c;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *buf;
	char url[512];
	pid_t pids[2];
	int ret, st;

	if (argc == 3 && !strcmp(argv[1], "reader"))
		return reader(argv[2]);
	rt_cluster(&c, "readers");
	alarm(120);
	rt_url(&c, url, sizeof(url), "obj", "");

	mm = ut_mm_create(NULL);
	ret = uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj);
	CHECK(ret == 0, "open: %s", strerror(-ret));
	CHECK_RET(uf_object_truncate(obj, (uint64_t)NPAGES * UF_PAGE_SIZE), 0);
	buf = malloc((size_t)NPAGES * UF_PAGE_SIZE);
	CHECK(buf, "malloc");
	for (uint64_t off = 0; off < (uint64_t)NPAGES * UF_PAGE_SIZE; off++)
		buf[off] = want(off);
	memset(buf + 5 * UF_PAGE_SIZE, 0, UF_PAGE_SIZE);	/* page 5: never written */
	CHECK_RET(uf_object_pwrite(obj, buf, 5 * UF_PAGE_SIZE, 0), 5 * UF_PAGE_SIZE);
	CHECK_RET(uf_object_pwrite(obj, buf + 6 * UF_PAGE_SIZE, (NPAGES - 6) * UF_PAGE_SIZE,
				   6 * UF_PAGE_SIZE), (NPAGES - 6) * UF_PAGE_SIZE);
	CHECK_RET(uf_object_sync(obj), 0);
	/* a change not synced: readers must not see it */
	memset(buf, 0xee, UF_PAGE_SIZE);
	CHECK_RET(uf_object_pwrite(obj, buf + 1000, 1, 7 * UF_PAGE_SIZE + 3), 1);

	for (int i = 0; i < 2; i++) {
		char *cargv[] = { "redis-readers", "reader", url, NULL };

		CHECK(posix_spawn(&pids[i], "/proc/self/exe", NULL, NULL, cargv, environ) == 0, "posix_spawn");
	}
	for (int i = 0; i < 2; i++) {
		CHECK(waitpid(pids[i], &st, 0) == pids[i], "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader %d failed (status %#x)", i, st);
	}
	uf_object_put(obj);	/* writes the unsynced byte: fine, the readers are done */
	uf_mm_destroy(mm);
	CHECK_RET(uf_redis_remove(url), 0);
	free(buf);
	printf("ok: two reader processes saw what was synced while the writer held the object\n");
	return UT_PASS;
}
