// SPDX-License-Identifier: MIT
/* Description: a Firecracker-style client with hugetlbfs guest memory ("page_size": 2097152, MAP_HUGETLB) reads SOURCE's bytes from ufault-serve, a balloon's removal of a huge page reads zeros, a restarted server takes such a client over, with no server back in time its supervisor gives it SIGBUS, a client whose huge page pool runs out gets SIGBUS (never zeros, never a hang), and another page size is refused with a log line */
#define _GNU_SOURCE
#include "serve-test.h"

#include <inttypes.h>

#define HUGE	(2UL << 20)
#define SRC	(16UL << 20)
#define A_LEN	(8UL << 20)	/* client a: 4 huge pages, reserved at mmap */
#define B_LEN	(16UL << 20)	/* client b: 8, not reserved (MAP_NORESERVE) */
#define EXTRA	6		/* huge pages this test adds to the pool */

struct hp_ctx {
	long old;		/* nr_hugepages before */
};

static struct hp_ctx hp_atexit;

static long nr_hugepages(void)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static bool set_nr_hugepages(long n)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
	bool ok;

	if (!f)
		return false;
	ok = fprintf(f, "%ld\n", n) > 0;
	return fclose(f) == 0 && ok;
}

/* The pool as it was (registered before the server's atexit: runs after
 * the server, and the clients, are gone). */
static void hp_restore(void)
{
	if (hp_atexit.old >= 0)
		set_nr_hugepages(hp_atexit.old);
}

static long meminfo(const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	CHECK(f, "/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	fclose(f);
	return v;
}

/* A client: @len bytes of hugetlbfs memory (@flags: MAP_NORESERVE or 0)
 * registered on its own userfaultfd, handed over as one region at SOURCE
 * offset 0 with @page_size.  Return the mapping. */
static char *hp_client(struct ut_server *srv, size_t len, int flags, uint64_t page_size,
		       struct ut_fc *fc)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char json[256];

	memset(fc, 0, sizeof(*fc));
	fc->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	UT_SERVE_SKIP_NO_UFFD(fc);
	CHECK(ioctl(fc->uffd, UFFDIO_API, &api) == 0, "UFFDIO_API: %s", strerror(errno));
	fc->n = 1;
	fc->len[0] = len;
	fc->base[0] = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | flags, -1, 0);
	CHECK(fc->base[0] != MAP_FAILED, "mmap MAP_HUGETLB: %s", strerror(errno));
	reg.range.start = (unsigned long)fc->base[0];
	reg.range.len = len;
	CHECK(ioctl(fc->uffd, UFFDIO_REGISTER, &reg) == 0, "UFFDIO_REGISTER: %s", strerror(errno));
	snprintf(json, sizeof(json), "[{\"base_host_virt_addr\":%lu,\"size\":%zu,\"offset\":0,"
		 "\"page_size\":%" PRIu64 "}]", (unsigned long)fc->base[0], len, page_size);
	fc->sock = ut_send_handshake(srv->sock, json, strlen(json), fc->uffd);
	return fc->base[0];
}

static void hp_close(struct ut_fc *fc)
{
	close(fc->sock);
	close(fc->uffd);
	munmap(fc->base[0], fc->len[0]);
}

/* Every page of [off, off + len) of @p reads SOURCE's bytes (first and last). */
static void check_bytes(const char *p, size_t off, size_t len)
{
	size_t o;

	for (o = off; o < off + len; o += 4096)
		CHECK((unsigned char)p[o] == ut_pattern(o) &&
		      (unsigned char)p[o + 4095] == ut_pattern(o + 4095),
		      "+%zu: %u %u, want %u %u", o, (unsigned char)p[o], (unsigned char)p[o + 4095],
		      ut_pattern(o), ut_pattern(o + 4095));
}

int main(void)
{
	const char *const orphan[] = { "--orphan-timeout", "1", NULL };
	struct ut_server srv;
	struct ut_fc a, b, c, d, e;
	struct ut_fault f;
	unsigned char v;
	long want, freed, got = 0;
	size_t o, h;
	char *p;

	ut_watchdog(120);
	hp_atexit.old = nr_hugepages();
	if (hp_atexit.old < 0 || access("/proc/sys/vm/nr_hugepages", W_OK)) {
		printf("no huge page pool to reserve in here (/proc/sys/vm/nr_hugepages)\n");
		return UT_SKIP;
	}
	atexit(hp_restore);
	/* the pages in use, and EXTRA free ones: no more (a pool left
	 * larger by somebody else would give client b all it asks) */
	want = hp_atexit.old - meminfo("HugePages_Free:") + EXTRA;
	if (!set_nr_hugepages(want) || nr_hugepages() < want || meminfo("HugePages_Free:") < EXTRA) {
		printf("cannot reserve %d huge pages of 2 MiB (nr_hugepages %ld, free %ld)\n", EXTRA,
		       nr_hugepages(), meminfo("HugePages_Free:"));
		return UT_SKIP;
	}
	ut_catch_signals();
	ut_server_start(&srv, SRC, orphan);

	/* a: every byte, in order (a stream: runs ahead in huge pages) */
	p = hp_client(&srv, A_LEN, 0, HUGE, &a);
	check_bytes(p, 0, A_LEN);
	ut_server_log_wait(&srv, "1 region of 2 MiB pages (hugetlbfs)");
	/* the balloon takes its second huge page: zeros from then on */
	CHECK(madvise(p + HUGE, HUGE, MADV_DONTNEED) == 0, "madvise: %s", strerror(errno));
	for (o = HUGE; o < 2 * HUGE; o += 4096)
		CHECK(p[o] == 0 && p[o + 4095] == 0, "removed +%zu: %u, want 0", o,
		      (unsigned char)p[o]);
	check_bytes(p, 0, HUGE);
	check_bytes(p, 2 * HUGE, A_LEN - 2 * HUGE);

	/* b: more huge pages than the pool has left: the ones it gets read
	 * SOURCE, the first it cannot get is SIGBUS */
	printf("client a: bytes and balloon zeros right\n");
	fflush(stdout);

	/* d: a server killed between its two huge pages; the next one takes
	 * it over (from the supervisor) and serves the second */
	p = hp_client(&srv, 2 * HUGE, 0, HUGE, &d);
	check_bytes(p, 0, HUGE);
	ut_server_stop(&srv);
	ut_server_restart(&srv, orphan);
	check_bytes(p, HUGE, HUGE);
	ut_server_log_wait(&srv, "taken over");
	hp_close(&d);
	freed = meminfo("HugePages_Free:");
	p = hp_client(&srv, B_LEN, MAP_NORESERVE, HUGE, &b);
	for (h = 0; h < B_LEN / HUGE; h++) {
		if (ut_read(p + h * HUGE + 100, &v, &f)) {
			CHECK(f.sig == SIGBUS, "huge page %zu: signal %d, want SIGBUS", h, f.sig);
			break;
		}
		CHECK(v == ut_pattern(h * HUGE + 100), "huge page %zu: %u, want %u", h, v,
		      ut_pattern(h * HUGE + 100));
		check_bytes(p, h * HUGE, HUGE);
		got++;
	}
	printf("client b got %ld huge pages of %lu (the pool had %ld free), then SIGBUS\n", got,
	       B_LEN / HUGE, freed);
	CHECK(h < B_LEN / HUGE, "client b read all %lu huge pages: the pool had %ld", B_LEN / HUGE,
	      freed);
	CHECK(got <= freed, "client b got %ld huge pages, the pool had %ld", got, freed);
	ut_server_log_wait(&srv, "found no memory for the page");
	hp_close(&b);
	hp_close(&a);

	/* another page size: refused, with the reason in the log */
	p = hp_client(&srv, HUGE, 0, 1UL << 30, &c);
	ut_server_log_wait(&srv, "page size 1073741824 not served");
	hp_close(&c);

	/* e: its server killed and none started for --orphan-timeout: the
	 * supervisor gives its second huge page SIGBUS (a 2 MiB marker) */
	p = hp_client(&srv, 2 * HUGE, 0, HUGE, &e);
	check_bytes(p, 0, HUGE);
	ut_server_stop(&srv);
	CHECK(ut_read(p + HUGE + 100, &v, &f) == SIGBUS, "after the orphan timeout: signal %d, "
	      "byte %u, want SIGBUS", f.sig, v);
	check_bytes(p, 0, HUGE);
	hp_close(&e);
	return UT_PASS;
}
