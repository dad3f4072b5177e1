// SPDX-License-Identifier: MIT
/* Description: a working set pushed into a Firecracker-style client (uf_object_serve_prefetch) from a read-only file goes into the client alone: once the push is done (readahead_pages counts every page of the set), the client has every page of the set before it touches them (mincore) and reads the file's bytes, each page was read from the file once (pages_read), and the server's cache holds none of them (the kernel's page cache of the file does) */
#define _GNU_SOURCE
#include "ws-test.h"
#include "serve-ws-client.h"
#include "watchdog.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE	(16UL << 20)
#define PG	UF_PAGE_SIZE
#define NRUNS	48
#define RUNLEN	6
#define NSINGLE	64
#define NSET	(NRUNS * RUNLEN + NSINGLE)

/* The set in recorded order: runs of RUNLEN pages 50 apart from the top
 * of the object down, then single pages 7 apart from page 3000 up. */
static uint64_t set_page(size_t i)
{
	if (i < NRUNS * RUNLEN)
		return 100 + 50 * (uint64_t)(NRUNS - 1 - i / RUNLEN) + i % RUNLEN;
	return 3000 + 7 * (uint64_t)(i - NRUNS * RUNLEN);
}

/* Record the set from an object of the file, touched in order. */
static void record(const char *path, const char *rec)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;

	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	sws_record(mm, obj, rec, SIZE, NSET);
}

/* The client: on 't', the set's pages not in, then touch the set: the
 * pages whose bytes are wrong. */
static void client(int sock)
{
	unsigned char *base = pc_client_start(sock, SIZE, 0, NULL);
	uint64_t ans[2];
	char cmd;

	if (read(sock, &cmd, 1) != 1)
		_exit(UT_FAIL);
	ans[0] = NSET - sws_present(base, 0, NSET);
	ans[1] = sws_touch(base, NSET);
	if (write(sock, ans, sizeof(ans)) != sizeof(ans))
		_exit(UT_FAIL);
	_exit(0);
}

int main(void)
{
	char path[128], rec[160];
	uint64_t region[2], ans[2];
	struct uf_serve_region r;
	struct uf_object *obj;
	struct uf_stats s;
	struct uf_mm *mm;
	int sock, uffd = -1, status, fd;
	pid_t pid;

	ut_watchdog(120);
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	record(path, rec);

	/* the client first: it is no child of the server's mm */
	sock = pc_client_fork(client, region, &uffd, &pid);
	if (sock < 0) {
		unlink(rec);
		unlink(path);
		fprintf(stderr, "no userfaultfd here\n");
		return UT_SKIP;
	}

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), 0);
	r = (struct uf_serve_region){ .start = region[0], .len = region[1], .offset = 0 };
	CHECK_RET(uf_object_serve_uffd(obj, uffd, &r, 1), 0);
	/* the push is done once it counts every page of the set */
	do {
		usleep(1000);
		CHECK_RET(uf_mm_stats(mm, &s), 0);
	} while (s.readahead_pages < NSET);
	CHECK(write(sock, "t", 1) == 1, "to the client: %s", strerror(errno));
	CHECK(read(sock, ans, sizeof(ans)) == sizeof(ans), "the client's answer");
	CHECK(ans[1] == 0, "%lu pages of the set with wrong bytes", (unsigned long)ans[1]);
	CHECK(ans[0] == 0, "%lu pages of the set not in the client before it touched them (each "
	      "a fault)", (unsigned long)ans[0]);
	CHECK_RET(uf_mm_stats(mm, &s), 0);
	CHECK(s.readahead_pages == NSET && s.pages_read == NSET,
	      "pushed %lu pages, read %lu from the file, want each of the %d once",
	      (unsigned long)s.readahead_pages, (unsigned long)s.pages_read, NSET);
	CHECK(s.cache_pages == 0, "the server's cache holds %lu pages of the set, want none (the "
	      "file's page cache holds them)", (unsigned long)s.cache_pages);

	close(sock);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "client exit %d", status);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(rec);
	unlink(path);
	printf("push from a file: %d pages into the client, read once, none in the cache\n", NSET);
	return UT_PASS;
}
