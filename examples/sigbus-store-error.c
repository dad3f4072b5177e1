// SPDX-License-Identifier: MIT
/*
 * sigbus-store-error - what a program sees when its store fails: the one
 * access that needed the failed page gets SIGBUS, as a read error on a
 * kernel file mapping does.  The program catches it with sigsetjmp() and
 * siglongjmp(), reports the address, and tries again once the store is back.
 *
 * The store here is a toy: pages in memory, and a switch that makes every
 * read of page BAD_PAGE fail with -EIO.  A real store (a network, a disk)
 * fails the same way: its ->read returns a negative errno.
 *
 * What the library guarantees (ufault(7), Signals): SIGBUS with si_code
 * BUS_ADRERR and si_addr in the failed page, delivered to the thread that
 * made the access, and only for that access; a system call that touches the
 * page fails with EFAULT; the rest of the mapping keeps working.  For a
 * short while after the error (until the faulting thread has run again, at
 * most 50 ms) the page answers SIGBUS without asking the store, so a loop
 * that waits for the store to come back pauses between tries.
 */
#define _GNU_SOURCE
#include <ufault.h>

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NPAGES		8
#define BAD_PAGE	5

struct toy_store {
	char pages[NPAGES][UF_PAGE_SIZE];
	atomic_bool broken;		/* reads of BAD_PAGE fail while set */
};

static ssize_t toy_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct toy_store *ts = store;
	uint64_t first = off / UF_PAGE_SIZE, last = (off + len - 1) / UF_PAGE_SIZE;

	if (atomic_load(&ts->broken) && first <= BAD_PAGE && BAD_PAGE <= last)
		return -EIO;
	memcpy(buf, (char *)ts->pages + off, len);
	return (ssize_t)len;
}

static const struct uf_store_ops toy_ops = { .read = toy_read };

/* The jump buffer and the faulting address, for this thread only. */
static __thread sigjmp_buf bus_jmp;
static __thread void *volatile bus_addr;
static __thread volatile int bus_code;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	bus_addr = si->si_addr;
	bus_code = si->si_code;
	siglongjmp(bus_jmp, 1);
}

/* Copy the first bytes of a page out of the mapping; false after SIGBUS. */
static bool read_page(const char *p, char *out, size_t n)
{
	if (sigsetjmp(bus_jmp, 1))
		return false;
	memcpy(out, p, n);
	return true;
}

int main(void)
{
	static struct toy_store ts;
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	/* one page per fault, so that only the failed page is affected */
	struct uf_mm_config cfg = { .readahead_max = UF_PAGE_SIZE };
	struct uf_object *obj;
	struct uf_mm *mm;
	char *map, buf[32];
	int ret, i, tries;

	for (i = 0; i < NPAGES; i++)
		snprintf(ts.pages[i], UF_PAGE_SIZE, "page %d", i);
	atomic_store(&ts.broken, true);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);

	ret = uf_mm_create(&cfg, &mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	ret = uf_object_create(mm, &toy_ops, &ts, sizeof(ts.pages), &obj);
	if (!ret)
		ret = uf_mmap(mm, sizeof(ts.pages), PROT_READ, UF_MAP_SHARED, obj, 0,
			      (void **)&map);
	if (ret) {
		fprintf(stderr, "uf_object_create/uf_mmap: %s\n", strerror(-ret));
		return 1;
	}

	/* The good pages read; the bad one raises SIGBUS in this access only. */
	for (i = 0; i < NPAGES; i++) {
		char *p = map + (size_t)i * UF_PAGE_SIZE;

		if (read_page(p, buf, sizeof(buf))) {
			if (i == BAD_PAGE || strcmp(buf, ts.pages[i]))
				return fprintf(stderr, "page %d: read \"%.31s\"\n", i, buf), 1;
			printf("page %d: \"%s\"\n", i, buf);
			continue;
		}
		if (i != BAD_PAGE || (char *)bus_addr < p || (char *)bus_addr >= p + UF_PAGE_SIZE)
			return fprintf(stderr, "unexpected SIGBUS at %p (page %d)\n", bus_addr, i), 1;
		printf("page %d: SIGBUS at map+%#lx, si_code %s: the store failed\n", i,
		       (unsigned long)((char *)bus_addr - map),
		       bus_code == BUS_ADRERR ? "BUS_ADRERR" : "SI_QUEUE (kernel before 6.6)");
	}

	/* The same error through the API is a return value, not a signal. */
	ret = (int)uf_object_pread(obj, buf, sizeof(buf), BAD_PAGE * UF_PAGE_SIZE);
	printf("uf_object_pread of page %d: %s\n", BAD_PAGE, ret < 0 ? strerror(-ret) : "read");
	if (ret != -EIO)
		return 1;

	/* The store comes back: try again, pausing between tries. */
	atomic_store(&ts.broken, false);
	for (tries = 1; tries <= 50; tries++) {
		if (read_page(map + BAD_PAGE * UF_PAGE_SIZE, buf, sizeof(buf)))
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	}
	if (tries > 50 || strcmp(buf, ts.pages[BAD_PAGE]))
		return fprintf(stderr, "page %d did not come back\n", BAD_PAGE), 1;
	printf("store back: page %d reads \"%s\" (try %d)\n", BAD_PAGE, buf, tries);

	uf_munmap(mm, map, sizeof(ts.pages));
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return 0;
}
