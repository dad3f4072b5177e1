/* Description: under a cache budget, uf_object_pread() of one object into
 * a ufault mapping of another (so the copy takes faults inside the system
 * call, which ufault serves) completes and copies the right bytes; the
 * handler thread must not block in reclaim on the invalidate lock that the
 * reading thread holds while it waits for that very handler. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUDGET	(1ULL << 20)
#define SIZE	(4ULL << 20)

static void *watchdog(void *arg)
{
	(void)arg;
	sleep(15);
	fprintf(stderr, "uf_object_pread() into a mapping hung (handler deadlocked in reclaim)\n");
	_exit(UT_FAIL);
	return NULL;
}

int main(void)
{
	struct uf_mm_config cfg = { .cache_budget = BUDGET };
	struct uf_object *src, *dst;
	unsigned char *map, *pat;
	struct uf_mm *mm;
	pthread_t wd;
	ssize_t n;
	size_t i;

	mm = ut_mm_create(&cfg);
	CHECK_RET(uf_object_create_mem(mm, SIZE, &src), 0);
	CHECK_RET(uf_object_create_mem(mm, SIZE, &dst), 0);
	pat = malloc(SIZE);
	CHECK(pat, "malloc");
	for (i = 0; i < SIZE; i++)
		pat[i] = (unsigned char)(i * 7 + (i >> 12));
	CHECK_RET(uf_object_pwrite(src, pat, SIZE, 0), SIZE);
	CHECK_RET(uf_object_sync(src), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, dst, 0,
			  (void **)&map), 0);

	pthread_create(&wd, NULL, watchdog, NULL);
	n = uf_object_pread(src, map, SIZE, 0);
	if (n == -EFAULT) {
		printf("faults inside system calls are not served here\n");
		free(pat);
		return UT_SKIP;
	}
	CHECK(n == (ssize_t)SIZE, "uf_object_pread returned %zd", n);
	CHECK(memcmp(map, pat, SIZE) == 0, "wrong bytes");
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(src);
	uf_object_put(dst);
	uf_mm_destroy(mm);
	free(pat);
	return UT_PASS;
}
