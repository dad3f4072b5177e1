// SPDX-License-Identifier: MIT
/* Description: beside uid 65534's VMMs faulting without pause (a flood, begun first), a root VMM restoring SOURCE's 64 MiB in order has ufault-serve nearly to itself: the flood's pages served while the root VMM restores are fewer than a quarter of the root VMM's (the flood, over its share, waits while the root VMM's faults are served: serve_fair.c), both read SOURCE's bytes, and once the root VMM is done the flood is served again */
#include "serve-test.h"

#include <grp.h>
#include <inttypes.h>
#include <sys/stat.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define LEN	(64u << 20)
#define PAGES	(LEN / 4096)

/* Pages the flood's VMMs have read so far, and the flood's count when
 * the root VMM began and ended its restore (shared with the children). */
struct counts {
	uint64_t flood;
	uint64_t before, after;
};

/* A VMM of LEN in this process: registered, handed to the server; NULL
 * when that fails. */
static char *vmm(const char *sock)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char json[256];

	if (uffd < 0 || p == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api))
		return NULL;
	reg.range = (struct uffdio_range){ (unsigned long)p, LEN };
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		return NULL;
	snprintf(json, sizeof(json),
		 "[{\"base_host_virt_addr\":%lu,\"size\":%u,\"offset\":0,\"page_size\":4096}]",
		 (unsigned long)p, LEN);
	if (ut_send_handshake(sock, json, strlen(json), uffd) < 0)
		return NULL;
	return p;
}

/* The flood: as uid 65534, VMMs one after another, each reading every
 * page in order, counted in @c->flood.  Never returns. */
static void __attribute__((noreturn)) flood(const char *sock, struct counts *c)
{
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(2);
	prctl(PR_SET_DUMPABLE, 1);
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* (a new uid cleared it) */
	for (;;) {
		pid_t pid = fork();

		if (pid == 0) {
			char *p = vmm(sock);
			size_t i;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (!p)
				_exit(3);
			for (i = 0; i < LEN; i += 4096) {
				if ((unsigned char)p[i] != ut_pattern(i))
					_exit(4);
				__atomic_add_fetch(&c->flood, 1, __ATOMIC_RELAXED);
			}
			_exit(0);
		}
		if (pid > 0) {
			int st;

			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				_exit(WIFEXITED(st) ? 10 + WEXITSTATUS(st) : 5);
		}
	}
}

/* The flood's process group, stopped at exit (a child that changed its
 * uid does not always get its parent-death signal). */
static pid_t flood_pgrp;

static void flood_stop(void)
{
	if (flood_pgrp > 0)
		kill(-flood_pgrp, SIGKILL);
}

static uint64_t flooded(struct counts *c)
{
	return __atomic_load_n(&c->flood, __ATOMIC_RELAXED);
}

int main(void)
{
	static const char *const opts[] = { "--allow-uid", "65534", "--threads", "2", NULL };
	struct ut_server srv;
	struct counts *c;
	pid_t hostile, honest;
	uint64_t during, was;
	int st;

	ut_watchdog(120);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: the flood is another uid\n");
		return UT_SKIP;
	}
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(c != MAP_FAILED, "mmap: %s", strerror(errno));
	ut_server_start(&srv, LEN, opts);
	CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));

	hostile = fork();
	CHECK(hostile >= 0, "fork");
	if (hostile == 0) {
		setpgid(0, 0);
		flood(srv.sock, c);
	}
	setpgid(hostile, hostile);	/* (it does too: whichever is first) */
	flood_pgrp = hostile;
	atexit(flood_stop);
	/* the flood has the server to itself for four passes over SOURCE (a
	 * flood has run a while: shares are judged over seconds) */
	while (flooded(c) < 4 * PAGES) {
		CHECK(waitpid(hostile, &st, WNOHANG) == 0, "the flood's VMMs: status %#x", st);
		usleep(1000);
	}

	honest = fork();
	CHECK(honest >= 0, "fork");
	if (honest == 0) {
		char *p;
		size_t i;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		p = vmm(srv.sock);
		if (!p)
			_exit(3);
		c->before = flooded(c);
		for (i = 0; i < LEN; i += 4096)
			if ((unsigned char)p[i] != ut_pattern(i))
				_exit(4);
		c->after = flooded(c);
		_exit(0);
	}
	CHECK(waitpid(honest, &st, 0) == honest, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the root VMM: status %#x (%s)", st,
	      WIFSIGNALED(st) ? "a signal" : WEXITSTATUS(st) == 4 ? "wrong bytes" : "no VMM");
	during = c->after - c->before;
	fprintf(stderr, "while the root VMM read %u pages, the flood read %" PRIu64 "\n", PAGES,
		during);
	CHECK(during < PAGES / 4, "the flood read %" PRIu64 " pages while the root VMM read %u: "
	      "not held back", during, PAGES);

	/* alone again: served */
	was = flooded(c);
	while (flooded(c) < was + PAGES) {
		CHECK(waitpid(hostile, &st, WNOHANG) == 0, "the flood's VMMs: status %#x", st);
		usleep(1000);
	}
	flood_stop();
	waitpid(hostile, NULL, 0);
	printf("pass: the flood held back while the root VMM restored, served after\n");
	return UT_PASS;
}
