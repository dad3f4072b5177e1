// SPDX-License-Identifier: MIT
/* Description: ufault-serve out of file descriptors (RLIMIT_NOFILE 64, 90 idle connections) stops polling its listener instead of spinning on EMFILE: it logs it once, its CPU time over 2 s stays under 30% of the wall time, and once the idle connections close it accepts again and serves a VMM */
#include "serve-test.h"

#include <sys/resource.h>

#define IDLE 90

/* utime + stime of @pid, in clock ticks. */
static unsigned long long cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	int fd, i;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0, "read %s", path);
	buf[n] = '\0';
	p = strrchr(buf, ')');		/* (the name may hold spaces) */
	for (i = 2; p && i < 14; i++)
		p = strchr(p + 1, ' ');
	CHECK(p && sscanf(p, " %llu %llu", &ut, &st) == 2, "%s: %s", path, buf);
	return ut + st;
}

int main(void)
{
	static const char *const opts[] = { "--handshake-timeout", "3600", NULL };
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	struct rlimit old, low;
	struct ut_server srv;
	struct ut_fc fc;
	struct timespec a, b;
	unsigned long long t0, t1;
	double wall, cpu;
	int idle[IDLE], i;

	ut_watchdog(60);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0, "getrlimit");
	low = old;
	low.rlim_cur = 64;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit: %s", strerror(errno));
	ut_server_start(&srv, 2 << 20, opts);	/* (it inherits the limit) */
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0, "setrlimit: %s", strerror(errno));

	for (i = 0; i < IDLE; i++) {
		idle[i] = ut_connect(srv.sock);
		CHECK(idle[i] >= 0, "connect %d: %s", i, strerror(errno));
	}
	ut_server_log_wait(&srv, "accept: Too many open files");

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = cpu_ticks(srv.pid);
	sleep(2);
	t1 = cpu_ticks(srv.pid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	wall = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	cpu = (double)(t1 - t0) / (double)sysconf(_SC_CLK_TCK);
	fprintf(stderr, "server CPU %.2f s over %.2f s with %d idle connections\n", cpu, wall,
		IDLE);
	CHECK(cpu < 0.3 * wall, "the server spun: %.2f s of CPU in %.2f s", cpu, wall);

	for (i = 0; i < IDLE; i++)
		close(idle[i]);
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	ut_server_log_wait(&srv, "accepting again");
	return UT_PASS;
}
