/* Description: uf_mm_create() with a bad configuration (handler_threads
 * over 64, unknown flags, an unknown reclaim policy, a readahead_max below
 * one page) or a NULL mmp returns -EINVAL, leaves *mmp alone and starts no
 * thread and opens no fd; the limits themselves (64 handlers, every flag)
 * are accepted. */
#define _GNU_SOURCE
#include "helpers.h"

#include <dirent.h>
#include <errno.h>

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL, "opendir %s", path);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int main(void)
{
	static const struct {
		const char *what;
		struct uf_mm_config cfg;
	} bad[] = {
		{ "handler_threads 1000", { .handler_threads = 1000 } },
		{ "handler_threads 65", { .handler_threads = 65 } },
		{ "handler_threads UINT_MAX", { .handler_threads = ~0u } },
		{ "flags 0x10", { .flags = 0x10 } },
		{ "flags 0x80000000", { .flags = 0x80000000u } },
		{ "known and unknown flags", { .flags = UF_MM_USER_MODE_ONLY | 0x100 } },
		{ "reclaim_policy 2", { .reclaim_policy = 2 } },
		{ "readahead_max 1", { .readahead_max = 1 } },
	};
	struct uf_mm_config good[] = {
		{ .handler_threads = 64 },
		{ .flags = UF_MM_USER_MODE_ONLY | UF_MM_NO_WP_ASYNC | UF_MM_NO_HUGE | UF_MM_NO_FORK },
		{ .reclaim_policy = UF_RECLAIM_FIFO, .readahead_max = UF_PAGE_SIZE },
	};
	struct uf_mm *mm, *sentinel = (struct uf_mm *)0x1234;
	int tasks, fds, ret;
	size_t i;

	/* skip where userfaultfd is not available at all */
	uf_mm_destroy(ut_mm_create(NULL));

	tasks = count_dir("/proc/self/task");
	fds = count_dir("/proc/self/fd");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mm = sentinel;
		ret = uf_mm_create(&bad[i].cfg, &mm);
		CHECK(ret == -EINVAL, "%s: returned %d, want -EINVAL", bad[i].what, ret);
		CHECK(mm == sentinel, "%s: *mmp changed", bad[i].what);
		CHECK(count_dir("/proc/self/task") == tasks, "%s: threads left", bad[i].what);
		CHECK(count_dir("/proc/self/fd") == fds, "%s: fds left", bad[i].what);
	}
	CHECK_RET(uf_mm_create(NULL, NULL), -EINVAL);
	CHECK_RET(uf_mm_create(&good[0], NULL), -EINVAL);
	CHECK(count_dir("/proc/self/task") == tasks, "NULL mmp: threads left");

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ret = uf_mm_create(&good[i], &mm);
		CHECK(ret == 0, "good config %zu: %d", i, ret);
		if (i == 0)
			/* and the engine's monitor, which starts spare handlers */
			CHECK(count_dir("/proc/self/task") == tasks + 64 + 1, "64 handlers: %d threads",
			      count_dir("/proc/self/task") - tasks);
		uf_mm_destroy(mm);
	}
	return 0;
}
