// SPDX-License-Identifier: MIT
/* Description: Firecracker-style clients of one ufault-serve restore 64 MiB read in order, the first from a cold cache, the next ones from a warm one: every byte is right, and a warm restore takes at most about one fault per readahead window, as a cold one does (the server copies the next windows ahead of the client from its cache) */
#define _GNU_SOURCE
#include "serve-test.h"

#include <sys/resource.h>

#define SIZE	(64UL << 20)
#define WINDOW	512		/* pages: ufault-serve's readahead window (2 MiB) */
#define ROUNDS	3

/* Page faults this thread has taken (for information: a sanitizer's
 * shadow memory adds its own). */
static long thread_faults(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_THREAD, &ru) == 0, "getrusage: %s", strerror(errno));
	return ru.ru_minflt + ru.ru_majflt;
}

/*
 * The faults the server has served so far, from its --stats lines: the
 * second line logged after this call (the first may be half-way).
 */
static unsigned long served_faults(struct ut_server *s)
{
	static char buf[1 << 20];
	unsigned long major = 0, minor = 0;
	int lines = -1, n;

	for (;;) {
		int fd = open(s->log, O_RDONLY);
		ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		char *p, *last = NULL;

		if (fd >= 0)
			close(fd);
		n = 0;
		if (len > 0) {
			buf[len] = '\0';
			for (p = buf; (p = strstr(p, "stats: ")); p++, n++)
				last = p;
		}
		if (lines < 0) {
			lines = n;
		} else if (n >= lines + 2) {
			CHECK(sscanf(strstr(last, "faults "), "faults %lu major %lu minor", &major,
				     &minor) == 2, "stats line: %.80s", last);
			return major + minor;
		}
		usleep(20000);
	}
}

/* One client: map, hand over, read every page in order (its first and
 * last byte), close.  Return the faults the server served for it. */
static unsigned long restore(struct ut_server *srv, int round)
{
	const size_t len[1] = { SIZE };
	const uint64_t off[1] = { 0 };
	unsigned long before, served;
	struct ut_fc fc;
	long f0, f;
	size_t o;

	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv->sock);
	before = served_faults(srv);
	f0 = thread_faults();
	for (o = 0; o < SIZE; o += 4096) {
		unsigned char a = (unsigned char)fc.base[0][o], b = (unsigned char)fc.base[0][o + 4095];

		CHECK(a == ut_pattern(o) && b == ut_pattern(o + 4095),
		      "round %d, page %zu: %u %u, want %u %u", round, o / 4096, a, b, ut_pattern(o),
		      ut_pattern(o + 4095));
	}
	f = thread_faults() - f0;
	served = served_faults(srv) - before;
	printf("restore %d (%s cache): %lu faults served for %lu pages (%lu windows); the "
	       "client's thread took %ld page faults\n", round, round ? "warm" : "cold", served,
	       SIZE / 4096, SIZE / 4096 / WINDOW, f);
	fflush(stdout);
	close(fc.sock);
	close(fc.uffd);
	munmap(fc.base[0], SIZE);
	return served;
}

int main(void)
{
	const char *const opts[] = { "--stats", "1", NULL };
	/* a window each, and a few to find the stream at the start; a cold
	 * one's readahead ramps its first windows up (4 pages, 8, ... 512) */
	const unsigned long most = SIZE / 4096 / WINDOW + 4, most_cold = most + 9;
	struct ut_server srv;
	unsigned long n[ROUNDS];
	int i;

	ut_watchdog(120);
	ut_server_start(&srv, SIZE, opts);
	for (i = 0; i < ROUNDS; i++)
		n[i] = restore(&srv, i);
	for (i = 0; i < ROUNDS; i++)
		CHECK(n[i] <= (i ? most : most_cold),
		      "restore %d (%s cache): %lu faults served, want at most %lu", i,
		      i ? "warm" : "cold", n[i], i ? most : most_cold);
	return UT_PASS;
}
