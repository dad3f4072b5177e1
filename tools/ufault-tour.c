// SPDX-License-Identifier: MIT
/*
 * ufault-tour - a short, readable tour of ufault (what `make run` shows):
 * a file served through fault(), the statistics, a write reaching the file,
 * truncate and SIGBUS, and a nonlinear window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ufault.h>

#define PG UF_PAGE_SIZE

static sigjmp_buf jb;
static void *bus_addr;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	bus_addr = si->si_addr;
	siglongjmp(jb, 1);
}

/* Read one byte; return -1 and note the address if it raises SIGBUS. */
static int peek(const volatile char *p)
{
	if (sigsetjmp(jb, 1))
		return -1;
	return (unsigned char)*p;
}

static void stats(struct uf_mm *mm, const char *when)
{
	struct uf_stats st;

	uf_mm_stats(mm, &st);
	printf("   stats %-22s major %-4llu minor %-3llu readahead %-4llu read %-4llu written %-3llu sigbus %llu cache %llu pages\n",
	       when, (unsigned long long)st.major_faults, (unsigned long long)st.minor_faults,
	       (unsigned long long)st.readahead_pages, (unsigned long long)st.pages_read,
	       (unsigned long long)st.pages_written, (unsigned long long)st.sigbus,
	       (unsigned long long)st.cache_pages);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "ufault-tour: %s: %s\n", what, strerror(-err));
	if (err == -EPERM || err == -ENOSYS)
		fprintf(stderr, "ufault-tour: userfaultfd is not available here; see ufault-info\n");
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ufault-tour\n"
		   "A short tour of ufault, what `make run` shows first: a 64-page file in\n"
		   "/var/tmp mapped through uf_filemap_fault(), the fault statistics, a write\n"
		   "reaching the file with uf_msync(), truncate while mapped (SIGBUS past EOF,\n"
		   "zeros when grown back), and a nonlinear window.  The file is removed at\n"
		   "the end.  Exit: 0 when every step behaved, 1 otherwise, 2 bad usage.\n"
		   "  -h, --help    this text\n"
		   "  --version     the version of ufault\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	char path[] = "/var/tmp/ufault-tour-XXXXXX", line[80], buf[16];
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	size_t len = 64 * PG, i;
	struct uf_object *obj;
	struct uf_mm *mm;
	char *map, *text;
	int fd, ret, opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt == 'V') {
			printf("ufault-tour (ufault) %s\n", UF_VERSION);
			return 0;
		}
		usage(opt == 'h' ? stdout : stderr);
		return opt == 'h' ? 0 : 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	sigaction(SIGBUS, &sa, NULL);

	/* a 64-page file: each page starts with a line naming it */
	fd = mkstemp(path);
	if (fd < 0)
		return perror("mkstemp"), 1;
	text = calloc(1, len);
	for (i = 0; i < 64; i++)
		snprintf(text + i * PG, PG, "page %zu of %s\n", i, path);
	if (write(fd, text, len) != (ssize_t)len)
		return perror("write"), 1;

	printf("1. Map a file; its pages come through fault() = uf_filemap_fault()\n");
	ret = uf_mm_create(NULL, &mm);
	if (ret)
		return fail("uf_mm_create", ret);
	ret = uf_object_open(mm, path, O_RDWR, &obj);
	if (ret)
		return fail("uf_object_open", ret);
	ret = uf_mmap(mm, len, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&map);
	if (ret)
		return fail("uf_mmap", ret);
	sscanf(map, "%79[^\n]", line);
	printf("   map[0]     reads \"%s\"\n", line);
	stats(mm, "after one read:");
	for (i = 0; i < 64; i++)
		if (memcmp(map + i * PG, text + i * PG, PG))
			return fprintf(stderr, "page %zu differs\n", i), 1;
	printf("   all 64 pages equal the file\n");
	stats(mm, "after reading all:");

	printf("2. Write through the mapping; uf_msync() writes the dirty page\n");
	memcpy(map + 5 * PG, "PAGE FIVE", 9);
	ret = uf_msync(mm, map, len, UF_MS_SYNC);
	if (ret)
		return fail("uf_msync", ret);
	pread(fd, buf, 9, 5 * PG);
	printf("   the file at page 5 now says \"%.9s\"\n", buf);
	stats(mm, "after msync:");

	printf("3. Truncate to 2.5 pages while mapped: past EOF is SIGBUS, the tail reads 0\n");
	ret = uf_object_truncate(obj, 2 * PG + PG / 2);
	if (ret)
		return fail("uf_object_truncate", ret);
	sscanf(map + 2 * PG, "%79[^\n]", line);
	printf("   page 2 still reads \"%.6s...\"; the byte at 2.5 pages reads %d; ", line,
	       peek(map + 2 * PG + PG / 2));
	if (peek(map + 3 * PG) < 0)
		printf("page 3: SIGBUS at map+%#lx\n", (unsigned long)((char *)bus_addr - map));
	else
		return fprintf(stderr, "no SIGBUS past EOF\n"), 1;
	ret = uf_object_truncate(obj, len);
	if (ret)
		return fail("uf_object_truncate", ret);
	printf("   grown back to 64 pages: page 3 reads %d (zeros, never the old bytes)\n", peek(map + 3 * PG));
	stats(mm, "after truncate:");

	printf("4. A nonlinear window: page 10 of the mapping shows object page 1\n");
	ret = uf_remap_file_pages(mm, map + 10 * PG, PG, 0, 1, 0);
	if (ret)
		return fail("uf_remap_file_pages", ret);
	sscanf(map + 10 * PG, "%79[^\n]", line);
	printf("   map[10 pages] reads \"%s\"\n", line);
	memcpy(map + 10 * PG, "WINDOW", 6);
	printf("   written through the window, page 1 of the linear part reads \"%.6s\"\n", map + PG);

	uf_munmap(mm, map, len);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	free(text);
	close(fd);
	unlink(path);
	printf("tour done\n");
	return 0;
}
