// SPDX-License-Identifier: MIT
/* Description: ufault-serve --record FILE records, in order, the pages its first Firecracker client faults (not a second client's); a server with --prefetch FILE copies them into a new client ahead of its faults: it takes almost none, a page it already has stays its own, and every byte is right */
#define _GNU_SOURCE
#include "serve-test.h"
#include "ws-test.h"

#include <sys/resource.h>

#define SRC_SIZE	(16UL << 20)
#define NRUNS		24		/* runs of RUN pages ... */
#define RUN		8
#define NSINGLE		160		/* ... and single pages */
#define NSET		(NRUNS * RUN + NSINGLE)

/* The client's regions: 8 MiB showing SOURCE from 4 MiB, 4 MiB from 0. */
static const size_t reg_len[2] = { 8 << 20, 4 << 20 };
static const uint64_t reg_off[2] = { 4 << 20, 0 };
#define REG0_PAGES	((8 << 20) / 4096)
#define CLIENT_PAGES	((12 << 20) / 4096)

struct test {
	uint32_t set[NSET];	/* client pages, in the order touched */
	uint32_t other[64];	/* pages of the second client, none in the set */
	char dir[64], src[128], rec[128];
};

/* Client page @p: region and offset in it, and the SOURCE offset. */
static char *page_addr(const struct ut_fc *fc, uint32_t p)
{
	return p < REG0_PAGES ? fc->base[0] + (size_t)p * 4096
			      : fc->base[1] + (size_t)(p - REG0_PAGES) * 4096;
}

static uint64_t page_src(uint32_t p)
{
	return p < REG0_PAGES ? reg_off[0] + (uint64_t)p * 4096
			      : reg_off[1] + (uint64_t)(p - REG0_PAGES) * 4096;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Runs and singles scattered over the client's pages (a page apart at
 * least, so that no two merge), touched in a shuffled order. */
static void make_set(struct test *t)
{
	static uint8_t used[CLIENT_PAGES];
	struct { uint32_t start, len; } item[NRUNS + NSINGLE], tmp;
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	size_t i, k, n = 0;

	for (i = 0; i < NRUNS + NSINGLE; i++) {
		uint32_t len = i < NRUNS ? RUN : 1, p;

		do {
			p = (uint32_t)(1 + next_rand(&s) % (CLIENT_PAGES - RUN - 2));
			for (k = 0; k < len + 2 && !used[p - 1 + k]; k++)
				;
		} while (k < len + 2);
		memset(used + p - 1, 2, len + 2);	/* the gap too */
		memset(used + p, 1, len);
		item[i].start = p;
		item[i].len = len;
	}
	for (i = NRUNS + NSINGLE - 1; i > 0; i--) {
		k = next_rand(&s) % (i + 1);
		tmp = item[i];
		item[i] = item[k];
		item[k] = tmp;
	}
	for (i = 0; i < NRUNS + NSINGLE; i++)
		for (k = 0; k < item[i].len; k++)
			t->set[n++] = item[i].start + (uint32_t)k;
	for (i = 0, k = 0; k < 64; i += 37)
		if (!used[i % CLIENT_PAGES] && i % CLIENT_PAGES)
			t->other[k++] = (uint32_t)(i % CLIENT_PAGES);
		else if (i > 64 * CLIENT_PAGES)
			break;
}

/* Page faults this thread has taken: a page another process put into
 * its memory is none, a fault served through the userfaultfd is one. */
static long faults(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_THREAD, &ru) == 0, "getrusage: %s", strerror(errno));
	return ru.ru_minflt + ru.ru_majflt;
}

/* Touch the client's pages @pages: each reads its SOURCE bytes (or, for
 * @marked, the marker).  Return the page faults taken. */
static long touch(const struct ut_fc *fc, const uint32_t *pages, size_t n, const uint32_t *marked,
		  size_t nmarked)
{
	long before = faults();
	size_t i, k;

	for (i = 0; i < n; i++) {
		const unsigned char *a = (const unsigned char *)page_addr(fc, pages[i]);
		bool mark = false;

		for (k = 0; k < nmarked; k++)
			mark = mark || marked[k] == pages[i];
		if (mark) {
			CHECK(a[0] == 0xa5 && a[4095] == 0xa5, "client page %u: %u, not its own 0xa5",
			      pages[i], a[0]);
			continue;
		}
		CHECK(a[0] == ut_pattern(page_src(pages[i])) &&
		      a[4095] == ut_pattern(page_src(pages[i]) + 4095),
		      "client page %u: %u, want %u", pages[i], a[0], ut_pattern(page_src(pages[i])));
	}
	return faults() - before;
}

/*
 * The faults the server has served so far, from its --stats lines: the
 * first line logged after this call (the count is the library's, of the
 * faults that reached it through a userfaultfd, whatever else the client
 * process faults on -- a sanitizer's shadow memory, say).
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
			lines = n;	/* a line may be half-way: the next one */
		} else if (n >= lines + 2) {
			CHECK(sscanf(strstr(last, "faults "), "faults %lu major %lu minor", &major,
				     &minor) == 2, "stats line: %.80s", last);
			return major + minor;
		}
		usleep(20000);
	}
}

static void fc_close(struct ut_fc *fc)
{
	unsigned int i;

	close(fc->sock);
	close(fc->uffd);
	for (i = 0; i < fc->n; i++)
		munmap(fc->base[i], fc->len[i]);
}

/* Put 0xa5 bytes into client page @p with the client's own userfaultfd,
 * before the server has it: a page the client already has. */
static void own_page(struct ut_fc *fc, uint32_t p)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct uffdio_copy c = { .dst = (unsigned long)page_addr(fc, p),
				 .src = (unsigned long)buf, .len = 4096 };

	memset(buf, 0xa5, sizeof(buf));
	CHECK(ioctl(fc->uffd, UFFDIO_COPY, &c) == 0, "UFFDIO_COPY: %s", strerror(errno));
}

/* Wait until every page of the set is in the client's memory. */
static void wait_resident(const struct ut_fc *fc, const struct test *t)
{
	size_t i = 0;

	while (i < NSET) {
		unsigned char vec = 0;

		CHECK(mincore(page_addr(fc, t->set[i]), 4096, &vec) == 0, "mincore: %s",
		      strerror(errno));
		if (vec & 1)
			i++;
		else
			usleep(1000);
	}
}

int main(void)
{
	static struct test t;
	const char *rec_opts[5], *pf_opts[5];
	struct ut_server srv;
	struct ut_fc a, b, c;
	struct ws_file f;
	uint32_t marked[2];
	unsigned long sa, sc;
	long fa, fc_;
	size_t i;
	int fd;

	ut_watchdog(120);
	make_set(&t);
	snprintf(t.dir, sizeof(t.dir), "/tmp/ufault-wsserve-XXXXXX");
	CHECK(mkdtemp(t.dir), "mkdtemp: %s", strerror(errno));
	fd = ut_make_file("/dev/shm", SRC_SIZE, t.src, sizeof(t.src));
	close(fd);
	snprintf(t.rec, sizeof(t.rec), "%s/ws", t.dir);
	ut_server_source = t.src;	/* both servers: one version of SOURCE */

	/* 1. --record: client a, the first served, touches the set; client
	 * b, served meanwhile, touches other pages */
	rec_opts[0] = "--record";
	rec_opts[1] = t.rec;
	rec_opts[2] = "--stats";
	rec_opts[3] = "1";
	rec_opts[4] = NULL;
	ut_server_start(&srv, 4096, rec_opts);
	ut_fc_map(&a, 2, reg_len, reg_off);
	UT_SERVE_SKIP_NO_UFFD(&a);
	ut_fc_handshake(&a, srv.sock);
	fa = touch(&a, t.set, NSET, NULL, 0);
	ut_fc_map(&b, 2, reg_len, reg_off);
	ut_fc_handshake(&b, srv.sock);
	touch(&b, t.other, 64, NULL, 0);
	touch(&a, t.other, 8, NULL, 0);	/* a: after b, still the record's */
	sa = served_faults(&srv);	/* a's and b's */
	fc_close(&a);
	ut_server_log_wait(&srv, "written to");
	fc_close(&b);

	/* the record: a's pages, in the order touched (b's are not there) */
	ws_read_file(t.rec, &f);
	CHECK(f.npages == NSET + 8, "record holds %lu pages, client a touched %d",
	      (unsigned long)f.npages, NSET + 8);
	for (i = 0; i < NSET + 8; i++) {
		uint32_t p = i < NSET ? t.set[i] : t.other[i - NSET];

		CHECK(f.pages[i] == page_src(p) / 4096, "record page %zu: %lu, want %lu", i,
		      (unsigned long)f.pages[i], (unsigned long)(page_src(p) / 4096));
	}
	/* each page was a fault of its own: the count measures faults */
	CHECK(sa >= NSET, "the server served %lu faults for client a's %d pages", sa, NSET);
	ut_server_stop(&srv);

	/* 2. --prefetch: client c has two pages of its own (one starts a run),
	 * waits until the set is in its memory, then touches it */
	pf_opts[0] = "--prefetch";
	pf_opts[1] = t.rec;
	pf_opts[2] = "--stats";
	pf_opts[3] = "1";
	pf_opts[4] = NULL;
	ut_server_start(&srv, 4096, pf_opts);
	ut_fc_map(&c, 2, reg_len, reg_off);
	for (i = 0; i < NSET && t.set[i + 1] != t.set[i] + 1; i++)
		;
	marked[0] = t.set[i];		/* the first page of a run */
	marked[1] = t.set[NSET - 1];
	own_page(&c, marked[0]);
	own_page(&c, marked[1]);
	ut_fc_handshake(&c, srv.sock);
	ut_server_log_wait(&srv, "working set pushed");
	wait_resident(&c, &t);
	fc_ = touch(&c, t.set, NSET, marked, 2);
	sc = served_faults(&srv);	/* c's alone */
	printf("over the %d pages of the set: client a took %ld page faults (getrusage), client c "
	       "%ld; the servers served %lu faults (a and b) and %lu (c)\n", NSET, fa, fc_, sa, sc);
	CHECK(sc * 10 <= NSET, "the prefetched client's set took %lu faults", sc);
	/* and pages outside the set are served lazily, right */
	touch(&c, t.other, 64, NULL, 0);
	fc_close(&c);

	free(f.pages);
	unlink(t.rec);
	unlink(t.src);
	rmdir(t.dir);
	return UT_PASS;
}
