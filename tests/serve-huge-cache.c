// SPDX-License-Identifier: MIT
/* Description: a cold restore of a client with hugetlbfs memory (uf_object_serve_uffd_huge(), 2 MiB copies) leaves every page of it in the server's cache with the file's bytes: uf_object_pread() of the object then reads them with no store read, and a second client served from the same object reads the file's bytes with no store read either */
#define _GNU_SOURCE
#include "helpers.h"

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
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, go;
	uint64_t base;
	struct iovec iov = { &base, sizeof(base) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	unsigned char *p;
	long res;
	int uffd;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		 -1, 0);
	if (uffd < 0 || p == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api))
		_exit(2);
	reg.range.start = (uintptr_t)p;
	reg.range.len = LEN;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		_exit(2);
	base = (uintptr_t)p;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != sizeof(base) || read(sock, &go, 1) != 1)
		_exit(2);
	res = check(p);
	_exit(write(sock, &res, sizeof(res)) == sizeof(res) ? 0 : 2);
}

/* Fork a client, serve it from @obj, let it read: its result. */
static long serve_one(struct uf_object *obj)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint64_t base;
	struct iovec iov = { &base, sizeof(base) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct uf_serve_region r;
	int sv[2], uffd = -1, status;
	long res = -2;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: %s",
	      strerror(errno));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		close(sv[0]);
		client(sv[1]);
	}
	close(sv[1]);
	CHECK(recvmsg(sv[0], &mh, 0) == sizeof(base), "handshake");
	memcpy(&uffd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	r = (struct uf_serve_region){ .start = base, .len = LEN, .offset = 0 };
	CHECK_RET(uf_object_serve_uffd_huge(obj, uffd, &r, 1, NULL, HUGE), 0);
	CHECK(write(sv[0], "g", 1) == 1 && read(sv[0], &res, sizeof(res)) == sizeof(res),
	      "client result");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "client status %d", status);
	close(sv[0]);
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
