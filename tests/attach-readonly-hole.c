// SPDX-License-Identifier: MIT
/* Description: a client of another uid (65534) attached O_RDONLY that maps the cache fd it was given by itself (MAP_SHARED, MAP_PRIVATE, reopened through /proc) and reads holes there puts no zero page into the shared cache: an honest client and a Firecracker-style VMM then read SOURCE's bytes at those pages; and a page a trusted client put into the cache of a read-only SOURCE that way is not taken as valid by the server's fill (the VMM, then everyone, reads SOURCE's bytes) */
#define _GNU_SOURCE
#include "attach-test.h"

#include <dirent.h>
#include <linux/fs.h>
#include <sys/stat.h>

#define SIZE	(4 << 20)
#define PG	4096
#define NOBODY	65534
/* the attacker's holes: pages never read before it came */
#define HOLE	600
#define NHOLES	12
/* the page a trusted client reads through a plain mapping (second part) */
#define TRUSTED_HOLE	900

/* Every fd of the cache in this process, into @fds; how many. */
static int cache_fds(int *fds, int cap)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	CHECK(d, "opendir: %s", strerror(errno));
	while (n < cap && (e = readdir(d))) {
		char path[300], link[256];
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		if (strstr(link, "memfd:ufault-cache"))
			fds[n++] = atoi(e->d_name);
	}
	closedir(d);
	return n;
}

/* Map page @pg of @fd with @flags and read it: 1 when the read was let
 * through (whatever it read), 0 when the mapping was refused. */
static int read_through(int fd, int flags, size_t pg)
{
	volatile unsigned char *q = mmap(NULL, PG, PROT_READ, flags, fd, (off_t)(pg * PG));
	unsigned char b;

	if (q == MAP_FAILED)
		return 0;
	b = q[0];
	(void)b;
	munmap((void *)q, PG);
	return 1;
}

/* Each way to read a hole of the cache through a mapping of its own:
 * how many were let through.  @pg: the next hole to use. */
static int read_holes(int fd, size_t *pg)
{
	char path[64];
	int got = 0, ro;

	got += read_through(fd, MAP_SHARED, (*pg)++);
	got += read_through(fd, MAP_PRIVATE, (*pg)++);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro >= 0) {
		got += read_through(ro, MAP_SHARED, (*pg)++);
		got += read_through(ro, MAP_PRIVATE, (*pg)++);
		close(ro);
	}
	return got;
}

static void attacker(int in, int out, void *arg)
{
	const char *sock = arg;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	size_t pg = HOLE, off;
	int fds[4], n, k, got = 0;

	CHECK(setgid(NOBODY) == 0 && setuid(NOBODY) == 0, "setuid: %s", strerror(errno));
	prctl(PR_SET_DUMPABLE, 1);
	ut_watchdog(60);
	obj = ut_attach(&mm, sock, O_RDONLY);
	/* served as it should be, through its own mapping */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (off = 0; off < 16 * PG; off += 509)
		CHECK(p[off] == ut_pattern(off), "byte at %zu", off);
	CHECK(p[(HOLE + NHOLES) * PG] == ut_pattern((HOLE + NHOLES) * PG), "its own hole");
	/* and around it */
	n = cache_fds(fds, 4);
	for (k = 0; k < n && pg + 4 <= HOLE + NHOLES; k++)
		got += read_holes(fds[k], &pg);
	ut_say(out, got);
	ut_hear(in);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

/* Pages [first, first + n) as a Firecracker-style VMM and as an honest
 * client read them: the pages that are not SOURCE's, printed. */
static size_t check_pages(const char *sock, size_t first, size_t n, bool client_first)
{
	size_t len = SIZE;
	uint64_t zero = 0;
	struct ut_fc fc;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	size_t bad = 0, pg, round;

	CHECK(ut_fc_map(&fc, 1, &len, &zero) == 0, "userfaultfd: %s", strerror(errno));
	ut_fc_handshake(&fc, sock);
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_attach(mm, sock, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (round = 0; round < 2; round++) {
		bool client = (round == 0) == client_first;

		for (pg = first; pg < first + n; pg++) {
			size_t off = pg * PG + 17;
			unsigned char b = client ? p[off] : (unsigned char)fc.base[0][off];

			if (b != ut_pattern(off) && bad++ < 8)
				printf("%s reads %#x at page %zu, SOURCE has %#x\n",
				       client ? "an honest client" : "the VMM", b, pg,
				       ut_pattern(off));
		}
	}
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	close(fc.sock);
	close(fc.uffd);
	munmap(fc.base[0], SIZE);
	return bad;
}

/* Second part: a read-only SOURCE (immutable, so root cannot open it for
 * writing either); a trusted client (root) reads a hole through a plain
 * mapping of the cache fd it holds.  0 when this file system cannot make
 * a file immutable. */
static char ro_src[128];

static void ro_src_unlock(void)
{
	int fd = open(ro_src, O_RDONLY | O_CLOEXEC), fl = 0;

	if (fd >= 0) {
		ioctl(fd, FS_IOC_SETFLAGS, &fl);
		close(fd);
	}
	unlink(ro_src);
}

static size_t trusted_part(void)
{
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	int fd, fds[4], n, k, fl;
	size_t bad;

	fd = ut_make_file("/dev/shm", SIZE, ro_src, sizeof(ro_src));
	atexit(ro_src_unlock);
	fl = FS_IMMUTABLE_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &fl) < 0) {
		printf("second part skipped: no immutable files in /dev/shm (%s)\n",
		       strerror(errno));
		close(fd);
		return 0;
	}
	close(fd);
	ut_server_source = ro_src;
	ut_server_start(&srv, SIZE, NULL);
	ut_server_log_wait(&srv, "ufault clients attach O_RDONLY only");
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_attach(mm, srv.sock, O_RDONLY, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	CHECK(p[0] == ut_pattern(0), "first byte");
	n = cache_fds(fds, 4);
	CHECK(n > 0, "a trusted client holds the cache fd");
	for (k = 0; k < n; k++)
		CHECK(read_through(fds[k], MAP_SHARED, TRUSTED_HOLE), "a plain mapping");
	/* the VMM first: the server's fill meets the page */
	bad = check_pages(srv.sock, TRUSTED_HOLE, 1, false);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	ut_server_stop(&srv);
	ut_server_source = NULL;
	return bad;
}

int main(void)
{
	const char *extra[] = { "--allow-uid", "65534", NULL };
	struct ut_server srv;
	struct ut_client c;
	long got;
	size_t bad;

	if (geteuid() != 0) {
		printf("skip: a second uid needs root\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, SIZE, extra);
	CHECK(chmod(srv.dir, 0755) == 0, "chmod: %s", strerror(errno));
	ut_client_start(&c, attacker, srv.sock);
	ut_watchdog(120);
	got = ut_hear(c.from);
	CHECK(got >= 0, "the attacker died: status %d", ut_client_wait(&c));
	printf("%ld plain mappings of the cache let through for uid %d\n", got, NOBODY);
	/* an honest client first: it would map a zero page with no fault */
	bad = check_pages(srv.sock, HOLE, NHOLES, true);
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	CHECK(!bad, "%zu pages read other than SOURCE's after a tenant read holes", bad);
	ut_server_stop(&srv);

	bad = trusted_part();
	CHECK(!bad, "%zu pages read other than SOURCE's after a trusted client read a hole",
	      bad);
	printf("pass: a tenant's reads put nothing into the cache others read\n");
	return 0;
}
