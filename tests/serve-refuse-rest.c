// SPDX-License-Identifier: MIT
/* Description: a tenant (uid 65534) holding 256 connections against --max-per-uid 4 and reconnecting each one the server closes at once costs ufault-serve at most 8000 refusals between two --stats lines (the listener rests in a refusal storm; it made tens of thousands a second before), while root's VMM connects and is served meanwhile */
#include "serve-test.h"

#include <grp.h>
#include <poll.h>
#include <sys/stat.h>

#define FLOOD	256
#define LINES	4	/* stats lines looked at, after the first of the storm */
#define MAX_PER_LINE	8000

/* The tenant: FLOOD connections, each remade as soon as the server
 * closes it; never returns (killed by the parent). */
static void __attribute__((noreturn)) flooder(const char *sock)
{
	struct pollfd pfd[FLOOD];
	int i;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		_exit(2);
	prctl(PR_SET_DUMPABLE, 1);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < FLOOD; i++)
		pfd[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	for (;;) {
		for (i = 0; i < FLOOD; i++)
			if (pfd[i].fd < 0)
				pfd[i].fd = ut_connect(sock);
		if (poll(pfd, FLOOD, 100) < 0)
			continue;
		for (i = 0; i < FLOOD; i++)
			if (pfd[i].fd >= 0 && pfd[i].revents) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
	}
}

/* The "refused N" of every stats line in @log, into @v (at most @cap):
 * how many. */
static int refused_counts(const char *log, unsigned long *v, int cap)
{
	const char *p, *q;
	int n = 0;

	for (p = strstr(log, "stats: "); p && n < cap; p = strstr(p + 1, "stats: "))
		if ((q = strstr(p, "refused ")) && (!strchr(p, '\n') || q < strchr(p, '\n')))
			v[n++] = strtoul(q + 8, NULL, 10);
	return n;
}

int main(void)
{
	static const char *const opts[] = { "--max-per-uid", "4", "--allow-uid", "65534",
					    "--handshake-timeout", "3600", "--stats", "1", NULL };
	static char log[1 << 16];
	const size_t len = 1 << 20;
	const uint64_t off = 0;
	unsigned long v[64], worst = 0;
	struct ut_server srv;
	struct ut_fc fc;
	int n, i, first;
	pid_t pid;

	ut_watchdog(60);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: the tenant is another uid\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, 2 << 20, opts);
	CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
	ut_fc_map(&fc, 1, &len, &off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		flooder(srv.sock);
	ut_server_log_wait(&srv, "more connections refused");
	fprintf(stderr, "the tenant is refused as fast as it reconnects\n");
	/* root's VMM connects, is served, reads SOURCE's bytes */
	ut_fc_handshake(&fc, srv.sock);
	ut_fc_check(&fc, 0, 1);
	fprintf(stderr, "root's VMM served meanwhile\n");
	/* the storm goes on: the refusals between the last LINES + 1 stats
	 * lines that counted any */
	for (;;) {
		ut_server_log_read(&srv, log, sizeof(log));
		n = refused_counts(log, v, 64);
		for (first = 0; first < n && !v[first]; first++)
			;
		if (n - first > LINES)
			break;
		usleep(100000);
	}
	for (i = n - LINES; i < n; i++) {
		fprintf(stderr, "refusals between stats lines: %lu\n", v[i] - v[i - 1]);
		if (v[i] - v[i - 1] > worst)
			worst = v[i] - v[i - 1];
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK(worst <= MAX_PER_LINE, "%lu refusals between two stats lines (at most %d)", worst,
	      MAX_PER_LINE);
	printf("pass: a tenant reconnecting as it is refused: at most %lu refusals a stats line\n",
	       worst);
	return UT_PASS;
}
