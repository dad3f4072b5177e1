// SPDX-License-Identifier: MIT
/* Description: a cold restore of a client with hugetlbfs memory (uf_object_serve_uffd_huge(), 2 MiB copies) leaves every page of it in the server's cache with the file's bytes: uf_object_pread() of the object then reads them with no store read, and a second client served from the same object reads the file's bytes with no store read either */
#define _GNU_SOURCE
#include "pair-client.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUGE		(2UL << 20)
#define NHUGE		8
#define LEN		(NHUGE * HUGE)

/* The offset of a wrong byte of @p's LEN bytes (two a 4 KiB page), or -1. */
__attribute__((no_sanitize("address", "thread")))
static long check(const unsigned char *p)
{
	uint64_t o;

	for (o = 0; o < LEN; o += 4096)
		if (p[o] != ut_pattern(o) || p[o + 4095] != ut_pattern(o + 4095))
			return (long)o;
	return -1;
}

/* The client: map hugetlbfs memory, register it, hand the userfaultfd
 * over, read it all in order and report the first wrong byte. */
static void client(int sock)
{
	int uffd;	/* (kept open, as a VMM keeps its own) */
	unsigned char *p = pc_client_start(sock, LEN, MAP_HUGETLB, &uffd);
	char go;
	long res;

	if (read(sock, &go, 1) != 1)
		_exit(2);
	res = check(p);
	_exit(write(sock, &res, sizeof(res)) == sizeof(res) ? 0 : 2);
}

/* Fork a client, serve it from @obj, let it read: its result. */
static long serve_one(struct uf_object *obj)
{
	struct uf_serve_region r;
	uint64_t region[2];
	int sock, uffd = -1, status;
	long res = -2;
	pid_t pid;

	sock = pc_client_fork(client, region, &uffd, &pid);
	CHECK(sock >= 0, "handshake");
	r = (struct uf_serve_region){ .start = region[0], .len = LEN, .offset = 0 };
	CHECK_RET(uf_object_serve_uffd_huge(obj, uffd, &r, 1, NULL, HUGE), 0);
	CHECK(write(sock, "g", 1) == 1 && read(sock, &res, sizeof(res)) == sizeof(res),
	      "client result");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "client status %d", status);
	close(sock);
	return res;
}

int main(void)
{
	struct uf_object *obj;
	struct uf_stats st;
	uint64_t read0;
	unsigned char *buf;
	struct uf_mm *mm;
	char path[256];
	long res;
	int fd;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!ut_huge_pool_grow(2 * NHUGE)) {
		printf("skip: no %d huge pages of 2 MiB to be had here (/proc/sys/vm/nr_hugepages)\n",
		       2 * NHUGE);
		return UT_SKIP;
	}
	mm = ut_mm_create(NULL);
	fd = ut_make_file("/dev/shm", LEN, path, sizeof(path));
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	unlink(path);
	close(fd);

	res = serve_one(obj);
	CHECK(res < 0, "cold client: wrong byte at %ld", res);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	read0 = st.pages_read;
	printf("cold restore: %lu pages read from the store, %lu cached\n", (unsigned long)read0,
	       (unsigned long)st.cache_pages);
	CHECK(read0 >= LEN / 4096, "cold restore read %lu pages, want %lu at least",
	      (unsigned long)read0, LEN / 4096);

	buf = malloc(LEN);
	CHECK(buf != NULL, "malloc");
	CHECK(uf_object_pread(obj, buf, LEN, 0) == (ssize_t)LEN, "uf_object_pread");
	res = check(buf);
	CHECK(res < 0, "uf_object_pread after the cold restore: wrong byte at %ld", res);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	printf("uf_object_pread: %lu pages read from the store, %lu cached\n",
	       (unsigned long)(st.pages_read - read0), (unsigned long)st.cache_pages);
	CHECK(st.pages_read == read0, "uf_object_pread read %lu pages from the store, want 0",
	      (unsigned long)(st.pages_read - read0));
	CHECK(st.cache_pages >= LEN / 4096, "%lu pages cached, want %lu",
	      (unsigned long)st.cache_pages, LEN / 4096);

	res = serve_one(obj);
	CHECK(res < 0, "warm client: wrong byte at %ld", res);
	CHECK_RET(uf_mm_stats(mm, &st), 0);
	printf("warm restore: %lu pages read from the store\n",
	       (unsigned long)(st.pages_read - read0));
	CHECK(st.pages_read == read0, "the warm restore read %lu pages from the store, want 0",
	      (unsigned long)(st.pages_read - read0));
	free(buf);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
