// SPDX-License-Identifier: MIT
/* Description: a client with hugetlbfs memory served by uf_object_serve_uffd_huge() that reads its first two huge pages in order is run ahead of in whole huge pages: once the server's worker has delivered the window after them (its first huge page the marker, left to the client's fault), the client reads the next three huge pages with no fault, and every byte is the file's */
#define _GNU_SOURCE
#include "pair-client.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUGE		(2UL << 20)
#define NHUGE		8
#define LEN		(NHUGE * HUGE)
#define WAIT_TRIES	2000		/* 10 s at most for the worker */


/* Page faults this thread has taken. */
static long thread_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* Read huge pages [first, first + n) a word per 4 KiB page; return the
 * offset of a wrong byte, or -1.  Not instrumented: a sanitizer's shadow
 * of the pages read would fault in as this thread's faults too. */
__attribute__((no_sanitize("address", "thread")))
static long touch(const unsigned char *p, unsigned int first, unsigned int n)
{
	uint64_t o;

	for (o = first * HUGE; o < (first + n) * HUGE; o += 4096)
		if (p[o] != ut_pattern(o) || p[o + 4095] != ut_pattern(o + 4095))
			return (long)o;
	return -1;
}

/* Wait (10 s at most) until huge pages [first, first + n) of @p are in
 * this process's page tables, without touching them: what the server's
 * worker copies in arrives after its read is counted, later still on a
 * slow (sanitized, loaded) machine. */
static void wait_present(unsigned char *p, unsigned int first, unsigned int n)
{
	unsigned char vec[3 * (HUGE / 4096)];
	size_t len = n * HUGE, i;
	int tries;

	if (len / 4096 > sizeof(vec))
		return;
	for (tries = 0; tries < WAIT_TRIES; tries++) {
		if (mincore(p + first * HUGE, len, vec))
			return;
		for (i = 0; i < len / 4096 && (vec[i] & 1); i++)
			;
		if (i == len / 4096)
			return;
		usleep(5000);
	}
}

/* The client: map, register, hand the userfaultfd over, read huge pages
 * 0 and 1, wait for the go, read 3..5 once the run-ahead has put them in
 * and report their faults. */
static void client(int sock)
{
	int uffd;	/* (kept open, as a VMM keeps its own) */
	unsigned char *p = pc_client_start(sock, LEN, MAP_HUGETLB, &uffd);
	long res[3], f0;
	char go;

	if (read(sock, &go, 1) != 1)
		_exit(2);
	res[0] = touch(p, 0, 2);
	if (write(sock, "a", 1) != 1 || read(sock, &go, 1) != 1)
		_exit(2);
	wait_present(p, 3, 3);
	f0 = thread_faults();
	res[1] = touch(p, 3, 3);
	res[2] = thread_faults() - f0;
	if (res[1] < 0)
		res[1] = touch(p, 0, NHUGE);
	_exit(write(sock, res, sizeof(res)) == sizeof(res) ? 0 : 2);
}

int main(void)
{
	char path[256];
	uint64_t region[2];
	struct uf_serve_region r;
	struct uf_object *obj;
	struct uf_stats st;
	struct uf_mm *mm;
	long res[3];
	int sock, uffd = -1, i, status, fd;
	char c;
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!ut_huge_pool_grow(NHUGE)) {
		printf("skip: no %d huge pages of 2 MiB to be had here (/proc/sys/vm/nr_hugepages)\n",
		       NHUGE);
		return UT_SKIP;
	}
	mm = ut_mm_create(NULL);
	fd = ut_make_file("/dev/shm", LEN, path, sizeof(path));
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	unlink(path);
	close(fd);
	sock = pc_client_fork(client, region, &uffd, &pid);
	CHECK(sock >= 0, "handshake");
	r = (struct uf_serve_region){ .start = region[0], .len = LEN, .offset = 0 };
	CHECK_RET(uf_object_serve_uffd_huge(obj, uffd, &r, 1, NULL, HUGE), 0);
	CHECK(write(sock, "g", 1) == 1 && read(sock, &c, 1) == 1, "client gone");
	/* the worker's window after huge page 1: huge page 2 its marker,
	 * 3..5 copied in (what the server has read ahead is counted) */
	for (i = 0; i < WAIT_TRIES; i++) {
		CHECK_RET(uf_mm_stats(mm, &st), 0);
		if (st.readahead_pages >= 3 * (HUGE / 4096))
			break;
		usleep(5000);
	}
	printf("after huge pages 0 and 1: %lu pages read ahead (want %lu at least)\n",
	       (unsigned long)st.readahead_pages, 3 * (HUGE / 4096));
	CHECK(write(sock, "g", 1) == 1 && read(sock, res, sizeof(res)) == sizeof(res),
	      "client result");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "client status %d", status);
	printf("huge pages 3..5: %ld page faults in the client\n", res[2]);
	CHECK(res[0] < 0, "huge pages 0, 1: wrong byte at %ld", res[0]);
	CHECK(res[1] < 0, "wrong byte at %ld", res[1]);
	CHECK(res[2] == 0, "huge pages 3..5 took %ld faults, want 0 (run ahead of)", res[2]);
	close(sock);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
