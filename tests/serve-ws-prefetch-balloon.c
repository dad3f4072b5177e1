// SPDX-License-Identifier: MIT
/* Description: ufault-serve --prefetch does not copy pages a Firecracker client's balloon removed (MADV_DONTNEED: they read zeros), and copies the rest of the working set; again with the balloon's thread starved of CPU after the server read its event (SCHED_IDLE, on a CPU a spinning thread holds for up to 3 s; skipped on one CPU): the kernel refuses every copy into the process till that thread runs again, and the push waits for it rather than leave pages of the set out */
#define _GNU_SOURCE
#include "serve-test.h"
#include "ws-test.h"

#include <pthread.h>
#include <sched.h>

#define SRC_SIZE	(8UL << 20)
#define REG_LEN		(4UL << 20)
#define REG_OFF		(1UL << 20)

/* The set, in object pages: two runs and singles. */
static const uint64_t set_runs[][2] = {
	{ 300, 32 }, { 700, 16 }, { 400, 1 }, { 520, 1 }, { 540, 1 }, { 260, 1 },
};
#define NRUNS	(sizeof(set_runs) / sizeof(set_runs[0]))
/* removed by the balloon: the middle of the first run, and a single */
static const uint64_t removed[][2] = { { 310, 10 }, { 520, 1 } };

struct balloon {
	char *base;
	pid_t tid;
	int done;
	bool starved;	/* SCHED_IDLE on CPU 0, which spin_thread() holds */
};

static int spin_stop;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "sched_setaffinity: %s",
	      strerror(errno));
}

/* CPU 0's holder: spins till told, 3 s at most. */
static void *spin_thread(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	pin(0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE) && t.tv_sec - t0.tv_sec < 3);
	return NULL;
}

static bool is_removed(uint64_t pg)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (pg >= removed[i][0] && pg < removed[i][0] + removed[i][1])
			return true;
	return false;
}

static char *addr_of(char *base, uint64_t pg)
{
	return base + (pg << 12) - REG_OFF;
}

/* The balloon: MADV_DONTNEED of the removed ranges, which waits until the
 * server has read the event. */
static void *balloon_thread(void *arg)
{
	struct balloon *b = arg;
	size_t i;

	struct sched_param sp = { 0 };

	if (b->starved) {
		pin(0);
		CHECK(sched_setscheduler(0, SCHED_IDLE, &sp) == 0, "SCHED_IDLE: %s",
		      strerror(errno));
	}
	__atomic_store_n(&b->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	for (i = 0; i < 2; i++)
		CHECK(madvise(addr_of(b->base, removed[i][0]), removed[i][1] << 12,
			      MADV_DONTNEED) == 0, "madvise: %s", strerror(errno));
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Is thread @tid inside madvise() (blocked on its remove event)? */
static bool in_madvise(pid_t tid)
{
	char path[64], buf[64] = "";
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = '\0';
	close(fd);
	return atoi(buf) == SYS_madvise;
}

static void make_record(const char *src, const char *rec)
{
	uint64_t pages[SRC_SIZE / 4096];
	size_t i, k, n = 0;

	for (i = 0; i < NRUNS; i++)
		for (k = 0; k < set_runs[i][1]; k++)
			pages[n++] = set_runs[i][0] + k;
	CHECK(ws_record_pages(src, SRC_SIZE, rec, pages, n) > 0, "record_stop");
}

/* One server, one client, its balloon @starved or not. */
static void run(bool starved)
{
	const size_t len[1] = { REG_LEN };
	const uint64_t off[1] = { REG_OFF };
	char dir[64], src[128], rec[160];
	const char *opts[3] = { "--prefetch", rec, NULL };
	struct balloon b = { .starved = starved };
	struct ut_server srv;
	struct ut_fc fc;
	pthread_t t, spin;
	size_t i, k;
	int fd, waited;

	if (starved)
		pin(1);
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
	/* the balloon's remove events wait in the userfaultfd before the
	 * server has it: the push meets them first */
	b.base = fc.base[0];
	CHECK(pthread_create(&t, NULL, balloon_thread, &b) == 0, "pthread_create");
	while (!__atomic_load_n(&b.tid, __ATOMIC_ACQUIRE) || !in_madvise(b.tid))
		usleep(1000);
	if (starved)
		CHECK(pthread_create(&spin, NULL, spin_thread, NULL) == 0, "pthread_create");
	ut_fc_handshake(&fc, srv.sock);
	ut_server_log_wait(&srv, "working set pushed");
	pthread_join(t, NULL);

	/* every page of the set but the removed ones arrives unasked */
	for (i = 0; i < NRUNS; i++)
		for (k = 0; k < set_runs[i][1]; k++) {
			uint64_t pg = set_runs[i][0] + k;
			unsigned char vec = 0;

			if (is_removed(pg))
				continue;
			for (waited = 0;; waited++) {
				CHECK(mincore(addr_of(fc.base[0], pg), 4096, &vec) == 0, "mincore: %s",
				      strerror(errno));
				if (vec & 1)
					break;
				CHECK(waited < 10000, "page %lu of the set never pushed",
				      (unsigned long)pg);
				usleep(1000);
			}
		}
	if (starved) {
		__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
		pthread_join(spin, NULL);
	}
	/* removed pages read zeros, the others SOURCE's bytes */
	for (i = 0; i < NRUNS; i++)
		for (k = 0; k < set_runs[i][1]; k++) {
			uint64_t pg = set_runs[i][0] + k;
			unsigned char *a = (unsigned char *)addr_of(fc.base[0], pg);
			unsigned char want = is_removed(pg) ? 0 : ut_pattern(pg << 12);

			CHECK(a[0] == want && a[4095] == (is_removed(pg) ? 0 : ut_pattern((pg << 12) + 4095)),
			      "page %lu: %u, want %u", (unsigned long)pg, a[0], want);
		}
	/* and the rest of the region is served lazily */
	for (i = 0; i < REG_LEN >> 12; i += 7) {
		uint64_t pg = (REG_OFF >> 12) + i;
		unsigned char want = is_removed(pg) ? 0 : ut_pattern(pg << 12);

		CHECK(*(unsigned char *)addr_of(fc.base[0], pg) == want, "page %lu",
		      (unsigned long)pg);
	}
	close(fc.sock);
	close(fc.uffd);
	munmap(fc.base[0], REG_LEN);
	unlink(rec);
	unlink(src);
	rmdir(dir);
}

int main(void)
{
	ut_watchdog(120);
	run(false);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		printf("one CPU: the starved balloon is not tried\n");
	else
		run(true);
	return UT_PASS;
}
