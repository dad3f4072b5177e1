// SPDX-License-Identifier: MIT
/* Description: ufault-serve --budget 16M with five Firecracker-style clients reading 64 MiB at once (four in random order, one in order), for several rounds: no access gets SIGBUS while the store works, every page reads SOURCE's bytes, and the server's stats count 0 sigbus */
#include "serve-test.h"

#include <sys/wait.h>

#define SRC_SIZE	(64UL << 20)
#define NPAGES		(SRC_SIZE / 4096)
#define NCLIENTS	5
#define ROUNDS		3

/* A client: map SOURCE whole, read every page once (in order, or in a
 * shuffled order), exit with the number of SIGBUS its accesses got (and
 * 200 + n for wrong bytes). */
static int reader(const char *sock, int k)
{
	size_t len = SRC_SIZE;
	uint64_t off = 0, stride = 7919, i;
	unsigned int bus = 0, wrong = 0;
	struct ut_fault f;
	struct ut_fc fc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ut_catch_signals();
	if (ut_fc_map(&fc, 1, &len, &off))
		return 100;
	ut_fc_handshake(&fc, sock);
	for (i = 0; i < NPAGES; i++) {
		/* an odd stride visits every page once */
		uint64_t pg = k ? (i * stride + (uint64_t)k * 1237) % NPAGES : i;
		unsigned char v;

		if (ut_read(fc.base[0] + pg * 4096 + 17, &v, &f)) {
			bus++;
			continue;
		}
		if (v != ut_pattern(pg * 4096 + 17))
			wrong++;
	}
	if (wrong)
		return 200 + (wrong > 50 ? 50 : (int)wrong);
	return bus > 99 ? 99 : (int)bus;
}

static unsigned int stats_count(const char *log)
{
	unsigned int n = 0;

	while ((log = strstr(log, "stats: "))) {
		n++;
		log++;
	}
	return n;
}

int main(void)
{
	const char *extra[] = { "--budget", "16M", "--threads", "2", "--stats", "1", NULL };
	struct ut_server srv;
	unsigned int round, bus = 0, failed = 0, k;
	char log[1 << 16], *p;

	ut_watchdog(600);
	ut_server_start(&srv, SRC_SIZE, extra);
	for (round = 0; round < ROUNDS; round++) {
		pid_t pid[NCLIENTS];

		for (k = 0; k < NCLIENTS; k++) {
			pid[k] = fork();
			CHECK(pid[k] >= 0, "fork: %s", strerror(errno));
			if (pid[k] == 0)
				_exit(reader(srv.sock, (int)k));
		}
		for (k = 0; k < NCLIENTS; k++) {
			int st;

			CHECK(waitpid(pid[k], &st, 0) == pid[k], "waitpid");
			CHECK(WIFEXITED(st), "client %u: signal %d", k, WTERMSIG(st));
			CHECK(WEXITSTATUS(st) != 100, "no userfaultfd");
			if (WEXITSTATUS(st) >= 200) {
				printf("round %u client %u: %d wrong bytes\n", round, k,
				       WEXITSTATUS(st) - 200);
				failed++;
			} else if (WEXITSTATUS(st)) {
				printf("round %u client %u: %d SIGBUS\n", round, k, WEXITSTATUS(st));
				bus += (unsigned int)WEXITSTATUS(st);
				failed++;
			}
		}
	}
	/* the server's own count: a stats line logged after the last client */
	ut_server_log_read(&srv, log, sizeof(log));
	k = stats_count(log);
	do {
		usleep(100000);
		ut_server_log_read(&srv, log, sizeof(log));
	} while (stats_count(log) <= k);
	for (p = log; strstr(p + 1, "stats: "); p = strstr(p + 1, "stats: "))
		;
	if (strchr(p, '\n'))
		*strchr(p, '\n') = '\0';
	printf("%s\n", p ? p : "(no stats line)");
	CHECK(!failed, "%u of %u clients failed, %u SIGBUS in all", failed, ROUNDS * NCLIENTS,
	      bus);
	CHECK(p && strstr(p, " 0 sigbus"), "the server counted sigbus");
	printf("pass: %u clients of 64 MiB under a 16 MiB budget, no SIGBUS\n",
	       ROUNDS * NCLIENTS);
	return 0;
}
