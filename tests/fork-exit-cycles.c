/* Description: 1000 fork children that exit (touching ufault memory or
 * not) or exec leave the parent's open fds and heap flat: each child's
 * userfaultfd and VMA table are released once it is gone.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#include <dirent.h>
#include <malloc.h>

#define NPAGES	32
#define SIZE	(NPAGES * PG)
#define CYCLES	1000

/* Open fds other than epoll sets, and of them userfaultfds.  A spare
 * handler thread the engine starts while its handlers are busy (more of
 * them on a loaded machine) adds an epoll set that stays for the life of
 * the mm, up to UF_MAX_HANDLERS (64): those are counted in *epolls. */
static int count_fds(int *uffds, int *epolls)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[64];
	int n = 0;

	CHECK(d, "opendir");
	*uffds = *epolls = 0;
	while ((e = readdir(d))) {
		ssize_t k;

		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			*uffds += strstr(link, "userfaultfd") != NULL;
			if (strstr(link, "eventpoll")) {
				++*epolls;
				n--;
			}
		}
	}
	closedir(d);
	return n - 1;	/* the directory's own */
}

static void cycle(unsigned char *m, int i)
{
	pid_t pid = fork();
	int st;

	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (i % 3 == 1 && m[(size_t)(i % NPAGES) * PG] != ut_pattern((uint64_t)(i % NPAGES) * PG))
			_exit(1);
		if (i % 3 == 2)
			execl("/bin/true", "true", (char *)NULL);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "cycle %d: child status %#x", i, st);
}

int main(void)
{
	struct uf_stats stats;
	struct uf_mm *mm;
	unsigned char *m;
	size_t heap0, heap1;
	struct tt t;
	int fds0, fds1 = 0, u0, u1 = 0, ep0, ep1 = 0, i;

	ut_watchdog(240);
	if (!ut_fork_events())
		return UT_SKIP;
	mm = ut_mm_create(NULL);
	tt_open(&t, mm, TT_UF_MEM, SIZE);
	m = tt_map(&t, SIZE, PROT_READ | PROT_WRITE, true, 0);
	CHECK(m[0] == ut_pattern(0), "page 0");
	/* warm up: the queues and tables settle at their sizes */
	for (i = 0; i < 30; i++)
		cycle(m, i);
	CHECK_RET(uf_mm_stats(mm, &stats), 0);	/* reaps what is gone */
	fds0 = count_fds(&u0, &ep0);
	heap0 = mallinfo2().uordblks;
	for (i = 0; i < CYCLES; i++) {
		cycle(m, i);
		if (getenv("FK_VERBOSE") && i % 50 == 0)
			fprintf(stderr, "%d fds %d\n", i, count_fds(&u1, &ep1));
	}
	/* the children are gone; uf_mm_stats() frees what they held */
	for (i = 0; i < 100; i++) {
		CHECK_RET(uf_mm_stats(mm, &stats), 0);
		fds1 = count_fds(&u1, &ep1);
		if (u1 <= u0 && fds1 <= fds0 + 4)
			break;
		usleep(20000);
	}
	heap1 = mallinfo2().uordblks;
	CHECK(u1 <= u0, "userfaultfds: %d before, %d after %d children", u0, u1, CYCLES);
	CHECK(fds1 <= fds0 + 4, "open fds: %d before, %d after %d children", fds0, fds1, CYCLES);
	CHECK(ep1 <= ep0 + 64, "epoll sets: %d before, %d after %d children", ep0, ep1, CYCLES);
	CHECK(heap1 < heap0 + 256 * 1024, "heap: %zu bytes before, %zu after %d children",
	      heap0, heap1, CYCLES);
	tt_unmap(&t, m, SIZE);
	tt_close(&t);
	uf_mm_destroy(mm);
	return 0;
}
