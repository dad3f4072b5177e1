// SPDX-License-Identifier: MIT
/* Description: ufault-serve --prefetch with a working set four times its --budget copies the whole set into a Firecracker-style client, right bytes, while the server's cache stays inside the budget */
#include "serve-test.h"
#include "ws-test.h"

#define SRC_SIZE	(32UL << 20)
#define NSET		4096		/* pages: 16 MiB */
#define BUDGET_PAGES	1024		/* --budget 4M */
#define RA_PAGES	(BUDGET_PAGES / 8)	/* a fault's slack above it */

static uint32_t set[NSET];

/* A record of the set: every other page of the first 32 MiB, shuffled
 * in runs of 8. */
static void make_record(const char *src, const char *rec)
{
	static uint64_t pages[NSET];
	uint64_t x = 777;
	size_t i, j, k;

	for (i = 0; i < NSET; i++)
		set[i] = (uint32_t)(2 * i);
	for (i = NSET / 8 - 1; i > 0; i--) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (size_t)(x >> 33) % (i + 1);
		for (j = 0; j < 8; j++) {
			uint32_t t = set[i * 8 + j];

			set[i * 8 + j] = set[k * 8 + j];
			set[k * 8 + j] = t;
		}
	}
	for (i = 0; i < NSET; i++)
		pages[i] = set[i];
	CHECK_RET(ws_record_pages(src, SRC_SIZE, rec, pages, NSET), NSET);
}

/* The stats lines of the server's log so far, and the largest "cached"
 * any of them showed. */
static int stats_lines(struct ut_server *s, unsigned long *max_cached)
{
	static char buf[1 << 20];
	int fd = open(s->log, O_RDONLY), n = 0;
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *p;

	if (fd >= 0)
		close(fd);
	*max_cached = 0;
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	for (p = buf; (p = strstr(p, "stats: ")); p++) {
		char *c = strstr(p, "cached ");
		unsigned long v;

		n++;
		if (c && sscanf(c, "cached %lu", &v) == 1 && v > *max_cached)
			*max_cached = v;
	}
	return n;
}

int main(void)
{
	const size_t len[1] = { SRC_SIZE };
	const uint64_t off[1] = { 0 };
	char dir[64], src[128], rec[160];
	const char *opts[7] = { "--budget", "4M", "--stats", "1", "--prefetch", rec, NULL };
	unsigned long max_cached;
	struct ut_server srv;
	struct ut_fc fc;
	int fd, n;
	size_t i;

	ut_watchdog(150);
	snprintf(dir, sizeof(dir), "/tmp/ufault-wsserve-XXXXXX");
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	fd = ut_make_file("/dev/shm", SRC_SIZE, src, sizeof(src));
	close(fd);
	snprintf(rec, sizeof(rec), "%s/ws", dir);
	make_record(src, rec);
	ut_server_source = src;
	ut_server_start(&srv, 4096, opts);

	ut_fc_map(&fc, 1, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	/* the whole set arrives, though the cache holds a quarter of it */
	for (i = 0; i < NSET;) {
		unsigned char vec = 0;

		CHECK(mincore(fc.base[0] + (size_t)set[i] * 4096, 4096, &vec) == 0, "mincore");
		if (vec & 1)
			i++;
		else
			usleep(1000);
	}
	for (i = 0; i < NSET; i++)
		CHECK((unsigned char)fc.base[0][(size_t)set[i] * 4096 + 5] ==
		      ut_pattern((uint64_t)set[i] * 4096 + 5), "page %u", set[i]);
	/* two statistics lines after it: the cache never passed the budget
	 * (plus one fault's slack) */
	n = stats_lines(&srv, &max_cached);
	while (stats_lines(&srv, &max_cached) < n + 2)
		usleep(50000);
	printf("cache: at most %lu pages seen, budget %d\n", max_cached, BUDGET_PAGES);
	CHECK(max_cached > 0 && max_cached <= BUDGET_PAGES + RA_PAGES,
	      "cached %lu pages, budget %d", max_cached, BUDGET_PAGES);
	/* the pages outside the set, lazily */
	ut_fc_check(&fc, 0, 97);
	close(fc.sock);
	close(fc.uffd);
	unlink(rec);
	unlink(src);
	rmdir(dir);
	return UT_PASS;
}
