// SPDX-License-Identifier: MIT
/*
 * ufault-stress - the race finder: page faults against truncate, hole
 * punch, nonlinear remaps and writeback.
 *
 *   ufault-stress [--seconds N] [--scenario NAME] [--target NAME] [--seed S]
 *                 [--store URL]
 *
 * Scenarios:
 *   seed-same       Nick Piggin's "pagefault vs invalidate/truncate race
 *   seed-each       finder" (linux-mm, 10 Oct 2006), ported: 7 faulter
 *   seed-nonlinear  threads each set a flag byte to 1 in one page of an
 *                   object (the same page for all, one page each, or one
 *                   page each seen through a nonlinear window) and spin
 *                   until it reads 0; the main thread loops truncate to
 *                   0, extend to 7 pages, write one byte, while a helper
 *                   writes the object back to its store.  A flag that
 *                   still reads 1 after a truncate that started after the
 *                   1 was written is a stale page; one that never clears
 *                   in 10 s is "page stuck".
 *   random          threads map, read, write, pread, pwrite, truncate,
 *                   punch holes, remap nonlinear windows, msync, unmap
 *                   and reopen at random over small objects; every byte
 *                   read is checked against a model, and SIGBUS must come
 *                   exactly where the model puts EOF.
 *   random-syscalls the same, with the program's own munmap() (of all or
 *                   the tail of a mapping) and mremap() (grow, usually
 *                   moving; shrink; move) mixed in: the reopen checks that
 *                   every write made before reached the store.
 *   readonly        with --store http(s)://URL only: threads map the
 *                   object there (shared and private windows), pread it,
 *                   write into private mappings, try every write and
 *                   sync (-EROFS) and a shared writable map (-EACCES),
 *                   and reopen it (a cold cache); every byte is checked
 *                   against the object as the raw store reads it.  It
 *                   alone runs on that read-only store: the scenarios
 *                   above write, and are skipped with a line each.
 *
 * Targets: ufault with the memory store, ufault with the file store on
 * tmpfs (/dev/shm) and on disk (/var/tmp), and the kernel's own MAP_SHARED
 * mmap of a tmpfs file and of a disk file, which checks the tester itself.
 * With --store URL (redis://...host:port[,...][/PREFIX][?options]) the one
 * target is ufault-redis: the same scenarios on objects in that Redis
 * Cluster, named PREFIX-PID-N (PREFIX defaults to ufault-stress) and
 * removed after the run.  With --store http(s)://URL the one target is
 * ufault-http, the object at that URL, read-only (scenario readonly).
 *
 * The random mode's model.  Each byte of an object has one owner thread
 * (64-byte blocks dealt round robin); only the owner writes it, and each
 * thread checks only its own bytes - plus, when nothing structural is in
 * flight, that every byte past EOF in the last page reads zero.  Truncate
 * and punch hold the object's wlock exclusive (writes hold it shared, so
 * no byte is ever written past EOF), but reads and the faults they take
 * run concurrently with them: that is the race.  Structural operations
 * bump a per-object sequence count before and after (odd while in
 * flight); a read that saw the same even count before and after is
 * checked exactly, one that overlapped accepts either the old byte or
 * zero, and SIGBUS anywhere.  A stale page brought back by a racing fill
 * survives until the next truncate, so the exact reads catch it.
 *
 * Exit status: 0 when every run passed, 1 on any failure, 2 on bad usage,
 * 77 when nothing could run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ufault.h"
#include "ufault-redis.h"
#include "ufault-http.h"

#define PG		((size_t)UF_PAGE_SIZE)
#define MAX_MSGS	5	/* failure messages printed per run */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* xorshift64* */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t rnd(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static uint64_t seed_mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;

	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	x ^= x >> 31;
	return x ? x : 1;
}

/* ------------------------------------------------------------------ */
/* SIGBUS around one access                                            */
/* ------------------------------------------------------------------ */

static __thread sigjmp_buf tl_jb;
static __thread volatile sig_atomic_t tl_probe;
static __thread void *volatile tl_addr;
static atomic_ulong stray_sigbus;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (tl_probe) {
		tl_probe = 0;
		tl_addr = si->si_addr;
		siglongjmp(tl_jb, 1);
	}
	/* Not inside an access: a SIGBUS queued for an access that has
	 * already completed.  Returning is safe for a queued signal. */
	atomic_fetch_add(&stray_sigbus, 1);
}

/* SIGUSR1: the watchdog pulls a thread out of a fault nobody answers. */
static void on_kick(int sig)
{
	(void)sig;
	if (tl_probe) {
		tl_probe = 0;
		tl_addr = NULL;
		siglongjmp(tl_jb, 2);
	}
}

/*
 * Copy from/to a mapping, byte by byte with relaxed atomics (other threads
 * write other bytes of the same pages; this is shared memory, not a race
 * for the tool).  Return 0, 1 on SIGBUS with *bad the faulting address,
 * or 2 when the watchdog kicked the thread out.
 */
static int probe_read(unsigned char *dst, const unsigned char *src, size_t n, void **bad)
{
	size_t i;
	int r;

	if ((r = sigsetjmp(tl_jb, 1))) {
		*bad = tl_addr;
		return r;
	}
	tl_probe = 1;
	for (i = 0; i < n; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	tl_probe = 0;
	return 0;
}

static int probe_write(unsigned char *dst, const unsigned char *src, size_t n, void **bad)
{
	size_t i;
	int r;

	if ((r = sigsetjmp(tl_jb, 1))) {
		*bad = tl_addr;
		return r;
	}
	tl_probe = 1;
	for (i = 0; i < n; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
	tl_probe = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

struct target {
	const char *name;
	bool ufault;
	const char *dir;	/* NULL: ufault memory store (or ufault-redis) */
};

static const struct target targets[] = {
	{ "ufault-mem",   true,  NULL },
	{ "ufault-tmpfs", true,  "/dev/shm" },
	{ "ufault-disk",  true,  "/var/tmp" },
	{ "kernel-tmpfs", false, "/dev/shm" },
	{ "kernel-disk",  false, "/var/tmp" },
	{ "ufault-redis", true,  NULL },	/* objects in the --store cluster */
	{ "ufault-http",  true,  NULL },	/* the --store http(s):// object */
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* One scenario run against one target. */
struct cell {
	const char *scenario;
	const struct target *tg;
	struct uf_mm *mm;
	uint64_t seed;
	double seconds;
	atomic_int stop;
	bool syscalls;		/* random-syscalls: plain munmap()/mremap() too */
	atomic_ullong ops;
	atomic_ullong failures;
	atomic_uint nfiles;
};

static void fail(struct cell *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct cell *c, const char *fmt, ...)
{
	unsigned long long n = atomic_fetch_add(&c->failures, 1);
	va_list ap;

	atomic_store(&c->stop, 1);
	if (n >= MAX_MSGS)
		return;
	flockfile(stderr);
	fprintf(stderr, "FAIL %s/%s: ", c->scenario, c->tg->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

static bool stopped(struct cell *c)
{
	return atomic_load_explicit(&c->stop, memory_order_relaxed);
}

/*
 * Join @n threads after a run.  One that has not finished 10 s after the
 * run ended is blocked - in a page fault nobody answers, or behind one -
 * which is a failure; kick it out with SIGUSR1 and try again.
 */
#define HANG_SECONDS	10

static void join_or_kick(struct cell *c, pthread_t *th, const pid_t *tid, int n, const char *what)
{
	bool done[16] = { false };
	int round, i, pending = n;

	for (round = 0; round < 8 && pending; round++) {
		struct timespec dl;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += round ? 2 : HANG_SECONDS;
		for (i = 0; i < n; i++)
			if (!done[i] && !pthread_timedjoin_np(th[i], NULL, &dl)) {
				done[i] = true;
				pending--;
			}
		for (i = 0; i < n; i++) {
			char path[64], wchan[64] = "?";
			FILE *f;

			if (done[i])
				continue;
			if (!round) {
				snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)tid[i]);
				if ((f = fopen(path, "r"))) {
					if (!fgets(wchan, sizeof(wchan), f))
						strcpy(wchan, "?");
					fclose(f);
				}
				fail(c, "%s %d (tid %d) still blocked %d s after the run ended, "
				     "in %s%s", what, i, (int)tid[i], HANG_SECONDS, wchan,
				     strcmp(wchan, "handle_userfault") ? "" :
				     ": a page fault that is never answered");
			}
			pthread_kill(th[i], SIGUSR1);
		}
	}
	if (pending) {
		fprintf(stderr, "ufault-stress: %d threads cannot be stopped; giving up\n", pending);
		fflush(NULL);
		_exit(1);
	}
}

/* The first member of a thread's argument in the random and readonly
 * scenarios: what run_workers() needs to join it. */
struct worker {
	pthread_t th;
	pid_t tid;		/* set by the thread itself */
};

/*
 * Start @n threads of @fn, the i-th given @args + i * @size (which begins
 * with a struct worker), let them run until @end or a stop, then stop and
 * join them (join_or_kick).
 */
static void run_workers(struct cell *c, double end, int n, void *(*fn)(void *), void *args,
			size_t size)
{
	pthread_t th[16];
	pid_t tid[16];
	int i, nth = 0;

	for (i = 0; i < n && i < 16 && !stopped(c); i++) {
		struct worker *w = (struct worker *)((char *)args + (size_t)i * size);

		if (pthread_create(&w->th, NULL, fn, w)) {
			fail(c, "pthread_create failed");
			break;
		}
		nth++;
	}
	while (!stopped(c) && now() < end)
		usleep(10000);
	atomic_store(&c->stop, 1);
	for (i = 0; i < nth; i++) {
		struct worker *w = (struct worker *)((char *)args + (size_t)i * size);

		th[i] = w->th;
		tid[i] = __atomic_load_n(&w->tid, __ATOMIC_RELAXED);
	}
	join_or_kick(c, th, tid, nth, "thread");
}

/* --store: the cluster URL (objects get names under its path), or the
 * URL of a read-only object over HTTP. */
static const char *store_url;

static bool is_redis(const struct target *tg)
{
	return !strcmp(tg->name, "ufault-redis");
}

static bool is_http(const struct target *tg)
{
	return !strcmp(tg->name, "ufault-http");
}

static bool http_url(const char *url)
{
	return url && (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8));
}

/* The URL of object @n of this process in the --store cluster. */
static int redis_url(char *out, size_t size, unsigned n)
{
	const char *auth = store_url + 8;
	size_t hosts = strcspn(auth, "/?") + 8;
	const char *path = store_url + hosts, *q = strchr(path, '?');
	size_t plen = q ? (size_t)(q - path) : strlen(path);
	int len;

	if (plen <= 1)	/* no PREFIX */
		len = snprintf(out, size, "%.*s/ufault-stress-%d-%u%s", (int)hosts, store_url,
			       (int)getpid(), n, q ? q : "");
	else
		len = snprintf(out, size, "%.*s-%d-%u%s", (int)(hosts + plen), store_url,
			       (int)getpid(), n, q ? q : "");
	return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : 0;
}

/* An object of the target: a ufault object, or a file the kernel maps. */
struct tobj {
	struct cell *c;
	struct uf_object *uo;
	int fd;
	char path[1024];	/* a redis:// URL for ufault-redis */
};

static int t_open(struct tobj *t, bool create)
{
	struct cell *c = t->c;
	int fd, ret;

	if (is_redis(c->tg)) {
		if (create) {
			ret = redis_url(t->path, sizeof(t->path), atomic_fetch_add(&c->nfiles, 1));
			if (ret)
				return ret;
		}
		return uf_redis_open(c->mm, t->path, O_RDWR | (create ? O_CREAT : 0), &t->uo);
	}
	if (!c->tg->dir)
		return -EINVAL;
	if (create) {
		snprintf(t->path, sizeof(t->path), "%s/ufault-stress.%d.%u", c->tg->dir,
			 (int)getpid(), atomic_fetch_add(&c->nfiles, 1));
		fd = open(t->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (!c->tg->ufault) {
			t->fd = fd;
			return 0;
		}
		close(fd);
	}
	if (c->tg->ufault)
		return uf_object_open(c->mm, t->path, O_RDWR, &t->uo);
	t->fd = open(t->path, O_RDWR | O_CLOEXEC);
	return t->fd < 0 ? -errno : 0;
}

static int t_truncate(struct tobj *t, uint64_t size)
{
	if (t->uo)
		return uf_object_truncate(t->uo, size);
	return ftruncate(t->fd, (off_t)size) < 0 ? -errno : 0;
}

static int t_create(struct cell *c, struct tobj *t, uint64_t size)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->c = c;
	t->fd = -1;
	if (c->tg->ufault && !c->tg->dir && !is_redis(c->tg))
		return uf_object_create_mem(c->mm, size, &t->uo);
	ret = t_open(t, true);
	if (!ret)
		ret = t_truncate(t, size);
	return ret;
}

/* Drop the object (a ufault object writes itself back); keep the file. */
static void t_close(struct tobj *t)
{
	if (t->uo)
		uf_object_put(t->uo);
	if (t->fd >= 0)
		close(t->fd);
	t->uo = NULL;
	t->fd = -1;
}

static void t_destroy(struct tobj *t)
{
	t_close(t);
	if (t->path[0] && is_redis(t->c->tg)) {
		int ret = uf_redis_remove(t->path);

		if (ret)
			fail(t->c, "remove %s: %s", strrchr(t->path, '/') + 1, strerror(-ret));
	}
	else if (t->path[0])
		unlink(t->path);
	t->path[0] = 0;
}

static int t_punch(struct tobj *t, uint64_t off, uint64_t len)
{
	if (t->uo)
		return uf_object_punch_hole(t->uo, off, len);
	if (fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		return -errno;
	return 0;
}

static ssize_t t_pread(struct tobj *t, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (t->uo)
		return uf_object_pread(t->uo, buf, len, off);
	while (done < len) {
		ssize_t n = pread(t->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* The caller keeps writes inside EOF: a write past it would extend the
 * object (both pwrites do), which the model does not follow. */
static ssize_t t_pwrite(struct tobj *t, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (t->uo)
		return uf_object_pwrite(t->uo, buf, len, off);
	while (done < len) {
		ssize_t n = pwrite(t->fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int t_sync(struct tobj *t)
{
	if (t->uo)
		return uf_object_sync(t->uo);
	return fdatasync(t->fd) < 0 ? -errno : 0;
}

static int t_map(struct tobj *t, size_t len, uint64_t off, char **addrp)
{
	void *p;

	if (t->uo) {
		int ret = uf_mmap(t->c->mm, len, PROT_READ | PROT_WRITE, UF_MAP_SHARED,
				  t->uo, off, &p);

		if (ret)
			return ret;
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, (off_t)off);
		if (p == MAP_FAILED)
			return -errno;
	}
	*addrp = p;
	return 0;
}

static int t_unmap(struct tobj *t, char *addr, size_t len)
{
	if (t->uo)
		return uf_munmap(t->c->mm, addr, len);
	return munmap(addr, len) < 0 ? -errno : 0;
}

/*
 * Make [addr, addr + len) of a mapping a window onto object pages pgoff..
 * The kernel target maps the file there with MAP_FIXED: that is what the
 * kernel's remap_file_pages() emulation does, and it must not be used on
 * a ufault range (it drops the userfaultfd registration).
 */
static int t_remap(struct tobj *t, char *addr, size_t len, uint64_t pgoff)
{
	void *p;

	if (t->uo)
		return uf_remap_file_pages(t->c->mm, addr, len, 0, pgoff, 0);
	p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, t->fd,
		 (off_t)(pgoff * PG));
	return p == MAP_FAILED ? -errno : 0;
}

static int t_msync(struct tobj *t, char *addr, size_t len)
{
	if (t->uo)
		return uf_msync(t->c->mm, addr, len, UF_MS_SYNC);
	return msync(addr, len, MS_SYNC) < 0 ? -errno : 0;
}

/* ------------------------------------------------------------------ */
/* The seed's tester                                                   */
/* ------------------------------------------------------------------ */

#define SEED_THREADS	7
#define SEED_STUCK	10.0	/* seconds: "page stuck" */

enum seed_mode { SEED_SAME, SEED_EACH, SEED_NONLINEAR };

struct seed {
	struct cell *c;
	enum seed_mode mode;
	struct tobj t;
	atomic_uint started;	/* truncates begun */
	atomic_uint completed;	/* truncates (to 0 and back) done */
	atomic_ullong cycles;	/* flags set and seen cleared */
};

struct faulter {
	struct seed *s;
	int nr;
	char *map;
	size_t maplen;
	unsigned char *flag;
	pthread_t th;
	pid_t tid;
};

static int faulter_map(struct faulter *f)
{
	struct seed *s = f->s;
	size_t w = (size_t)(f->nr + 3) % SEED_THREADS;
	int ret;

	switch (s->mode) {
	case SEED_SAME:
		f->maplen = PG;
		ret = t_map(&s->t, PG, 0, &f->map);
		f->flag = (unsigned char *)f->map + 64 * f->nr;
		break;
	case SEED_EACH:
		f->maplen = PG;
		ret = t_map(&s->t, PG, (uint64_t)f->nr * PG, &f->map);
		f->flag = (unsigned char *)f->map + 64 * f->nr;
		break;
	default:
		/* 7 pages, one of them a window onto this faulter's page */
		f->maplen = SEED_THREADS * PG;
		ret = t_map(&s->t, f->maplen, 0, &f->map);
		if (!ret) {
			ret = t_remap(&s->t, f->map + w * PG, PG, (uint64_t)f->nr);
			if (ret)
				t_unmap(&s->t, f->map, f->maplen);
		}
		f->flag = (unsigned char *)f->map + w * PG + 64 * f->nr;
		break;
	}
	if (ret)
		f->map = NULL;
	return ret;
}

/*
 * One cycle: set the flag, spin until it reads 0.  Return 0 (cleared),
 * 1 (SIGBUS: the page went away, which clears it too), -1 (stop or
 * failure).
 */
static int faulter_cycle(struct faulter *f)
{
	struct seed *s = f->s;
	struct cell *c = s->c;
	volatile unsigned s1;
	volatile double t0;
	unsigned long spins;

	int r;

	if ((r = sigsetjmp(tl_jb, 1)))
		return r == 1 ? 1 : -1;
	tl_probe = 1;
	__atomic_store_n(f->flag, 1, __ATOMIC_RELAXED);
	/* every truncate numbered above s1 began after the 1 was stored: a
	 * read-modify-write orders it, as the truncator's does (a full
	 * barrier on both sides; no fence, which tsan cannot see) */
	s1 = atomic_fetch_add(&s->started, 0);
	t0 = now();
	for (spins = 1;; spins++) {
		unsigned done = atomic_load_explicit(&s->completed, memory_order_acquire);
		unsigned char v = __atomic_load_n(f->flag, __ATOMIC_RELAXED);

		if (v == 0)
			break;
		if (v != 1) {
			tl_probe = 0;
			fail(c, "faulter %d: flag reads %#x (only 0 and 1 are ever written)", f->nr, v);
			return -1;
		}
		if (done > s1) {
			tl_probe = 0;
			fail(c, "stale page: faulter %d still reads its flag 1 after truncate #%u, "
			     "which began after the 1 was written (object page %d)",
			     f->nr, done, s->mode == SEED_SAME ? 0 : f->nr);
			return -1;
		}
		if (!(spins & 255)) {
			if (stopped(c))
				break;
			if (now() - t0 > SEED_STUCK) {
				tl_probe = 0;
				fail(c, "page stuck: faulter %d waited %.0f s for its flag to clear",
				     f->nr, SEED_STUCK);
				return -1;
			}
			sched_yield();
		}
		cpu_relax();
	}
	tl_probe = 0;
	return stopped(c) ? -1 : 0;
}

static void *faulter_main(void *arg)
{
	struct faulter *f = arg;
	struct seed *s = f->s;
	unsigned long nbus = 0;
	int ret;

	f->tid = gettid();
	ret = faulter_map(f);
	if (ret) {
		fail(s->c, "faulter %d: map: %s", f->nr, strerror(-ret));
		return NULL;
	}
	while (!stopped(s->c)) {
		ret = faulter_cycle(f);
		if (ret < 0)
			break;
		if (ret == 0) {
			atomic_fetch_add(&s->cycles, 1);
			continue;
		}
		/* SIGBUS: cleared; now and then map again, as a process
		 * that lost its page would */
		if (++nbus % 16 == 0) {
			t_unmap(&s->t, f->map, f->maplen);
			ret = faulter_map(f);
			if (ret) {
				fail(s->c, "faulter %d: map again: %s", f->nr, strerror(-ret));
				break;
			}
		}
	}
	if (f->map)
		t_unmap(&s->t, f->map, f->maplen);
	return NULL;
}

/* Writes the faulters' 1s back to the store, so a racing fill can read
 * them: truncate must still never let one come back. */
static void *seed_syncer(void *arg)
{
	struct seed *s = arg;
	uint64_t rs = seed_mix(s->c->seed, 99);

	while (!stopped(s->c)) {
		int ret = t_sync(&s->t);

		if (ret) {
			fail(s->c, "sync: %s", strerror(-ret));
			break;
		}
		usleep((useconds_t)rnd(&rs, 100));
	}
	return NULL;
}

static void run_seed(struct cell *c, enum seed_mode mode)
{
	struct faulter f[SEED_THREADS];
	pthread_t fth[SEED_THREADS];
	pid_t ftid[SEED_THREADS];
	struct seed s = { .c = c, .mode = mode };
	uint64_t rs = seed_mix(c->seed, 1);
	double end = now() + c->seconds;
	pthread_t syncer;
	int i, ret, nth = 0;
	bool syncing = false;

	ret = t_create(c, &s.t, SEED_THREADS * PG);
	if (ret) {
		fail(c, "create object: %s", strerror(-ret));
		return;
	}
	for (i = 0; i < SEED_THREADS; i++) {
		f[i] = (struct faulter){ .s = &s, .nr = i };
		if (pthread_create(&f[i].th, NULL, faulter_main, &f[i])) {
			fail(c, "pthread_create failed");
			break;
		}
		nth++;
	}
	if (!stopped(c) && !pthread_create(&syncer, NULL, seed_syncer, &s))
		syncing = true;

	while (!stopped(c) && now() < end) {
		unsigned k = atomic_fetch_add(&s.started, 1) + 1;
		ssize_t w;

		ret = t_truncate(&s.t, 0);
		if (!ret)
			ret = t_truncate(&s.t, SEED_THREADS * PG);
		if (ret) {
			fail(c, "truncate: %s", strerror(-ret));
			break;
		}
		atomic_store_explicit(&s.completed, k, memory_order_release);
		w = t_pwrite(&s.t, "", 1, SEED_THREADS * PG - 1);
		if (w != 1) {
			fail(c, "pwrite of one byte returned %zd", w);
			break;
		}
		atomic_fetch_add(&c->ops, 1);
		if (rnd(&rs, 4) == 0)
			usleep((useconds_t)rnd(&rs, 200));
		else
			sched_yield();
	}
	atomic_store(&c->stop, 1);
	for (i = 0; i < nth; i++) {
		fth[i] = f[i].th;
		ftid[i] = __atomic_load_n(&f[i].tid, __ATOMIC_RELAXED);
	}
	join_or_kick(c, fth, ftid, nth, "faulter");
	if (syncing)
		pthread_join(syncer, NULL);
	atomic_fetch_add(&c->ops, atomic_load(&s.cycles));
	t_destroy(&s.t);
}

/* ------------------------------------------------------------------ */
/* The randomized mode                                                 */
/* ------------------------------------------------------------------ */

#define R_NOBJ		3
#define R_MAXPG		64
#define R_MAX		(R_MAXPG * PG)
#define R_NSLOT		3
#define R_NTHR		4
#define R_BLK		64

static unsigned owner(uint64_t off)
{
	return (unsigned)((off / R_BLK) % R_NTHR);
}

/* A mapping of an object, shared by the threads; pg[] says which object
 * page each of its pages shows (nonlinear windows change it). */
struct rslot {
	pthread_rwlock_t lock;	/* shared: access; exclusive: map/unmap/remap */
	char *addr;
	size_t npages;
	uint64_t pg[R_MAXPG];
};

struct robj {
	int idx;
	struct tobj t;
	pthread_rwlock_t epoch;	/* shared: any operation; exclusive: reopen */
	pthread_rwlock_t wlock;	/* shared: writes; exclusive: truncate, punch */
	pthread_mutex_t mlock;	/* the model below */
	uint64_t size;
	unsigned seq;		/* odd while truncate/punch is in flight */
	unsigned char data[R_MAX];	/* zero past size */
	struct rslot slot[R_NSLOT];
};

struct rrun {
	struct cell *c;
	struct robj obj[R_NOBJ];
};

struct rthr {
	struct worker w;	/* first: see run_workers() */
	struct rrun *r;
	unsigned me;
	uint64_t rs;
};

struct snap {
	unsigned seq;
	uint64_t size;
};

static void snap_take(struct robj *o, struct snap *s, uint64_t off, size_t len, unsigned char *exp)
{
	pthread_mutex_lock(&o->mlock);
	s->seq = o->seq;
	s->size = o->size;
	if (exp)
		memcpy(exp, o->data + off, len);
	pthread_mutex_unlock(&o->mlock);
}

static bool stable(const struct snap *a, const struct snap *b)
{
	return a->seq == b->seq && !(a->seq & 1);
}

static uint64_t eof_pages(uint64_t size)
{
	return (size + PG - 1) / PG;
}

/* Read object page P through @addr and check it against the model. */
static void check_page(struct rthr *t, struct robj *o, const char *how, unsigned char *addr,
		       uint64_t P)
{
	struct cell *c = t->r->c;
	unsigned char exp[PG], got[PG];
	struct snap a, b;
	void *bad = NULL;
	size_t j;
	int bus;

	snap_take(o, &a, P * PG, PG, exp);
	bus = probe_read(got, addr, PG, &bad);
	snap_take(o, &b, 0, 0, NULL);
	if (bus == 2)
		return;

	if (bus && ((unsigned char *)bad < addr || (unsigned char *)bad >= addr + PG)) {
		fail(c, "obj %d: %s: SIGBUS at %p while reading the page at %p", o->idx, how,
		     bad, (void *)addr);
		return;
	}
	if (stable(&a, &b)) {
		if (P >= eof_pages(a.size)) {
			if (!bus)
				fail(c, "obj %d: %s: page %" PRIu64 " is wholly past EOF (size %" PRIu64
				     ") but reads without SIGBUS", o->idx, how, P, a.size);
			return;
		}
		if (bus) {
			fail(c, "obj %d: %s: SIGBUS on page %" PRIu64 " inside EOF (size %" PRIu64 ")",
			     o->idx, how, P, a.size);
			return;
		}
		for (j = 0; j < PG; j++) {
			uint64_t off = P * PG + j;

			if (off >= a.size && got[j]) {
				fail(c, "obj %d: %s: byte %" PRIu64 " past EOF (size %" PRIu64
				     ") reads %#x, not 0", o->idx, how, off, a.size, got[j]);
				return;
			}
			if (off < a.size && owner(off) == t->me && got[j] != exp[j]) {
				fail(c, "obj %d: %s: byte %" PRIu64 " (size %" PRIu64 ") reads %#x, "
				     "model says %#x%s", o->idx, how, off, a.size, got[j], exp[j],
				     exp[j] ? "" : " (stale data after truncate/punch?)");
				return;
			}
		}
	} else if (!bus) {
		for (j = 0; j < PG; j++) {
			uint64_t off = P * PG + j;

			if (owner(off) == t->me && got[j] != exp[j] && got[j]) {
				fail(c, "obj %d: %s: byte %" PRIu64 " reads %#x during a truncate/punch, "
				     "model says %#x or 0", o->idx, how, off, got[j], exp[j]);
				return;
			}
		}
	}
}

static void r_read_map(struct rthr *t, struct robj *o)
{
	struct rslot *sl = &o->slot[rnd(&t->rs, R_NSLOT)];

	pthread_rwlock_rdlock(&sl->lock);
	if (sl->addr) {
		size_t i = rnd(&t->rs, sl->npages), k;
		size_t n = 1 + rnd(&t->rs, sl->npages - i < 4 ? sl->npages - i : 4);

		for (k = i; k < i + n && !stopped(t->r->c); k++)
			check_page(t, o, "map read", (unsigned char *)sl->addr + k * PG, sl->pg[k]);
	}
	pthread_rwlock_unlock(&sl->lock);
}

/* A run of this thread's bytes in object page P, inside [0, size): *off,
 * *len.  Return false if there is none. */
static bool own_run(struct rthr *t, uint64_t P, uint64_t size, uint64_t *off, size_t *len)
{
	uint64_t blocks = PG / R_BLK;
	uint64_t first = (t->me + R_NTHR - (P * blocks) % R_NTHR) % R_NTHR;
	uint64_t blk = first + R_NTHR * rnd(&t->rs, blocks / R_NTHR);
	uint64_t o = P * PG + blk * R_BLK + rnd(&t->rs, R_BLK);
	size_t n = 1 + rnd(&t->rs, R_BLK - (o % R_BLK));

	if (o >= size)
		return false;
	if (o + n > size)
		n = (size_t)(size - o);
	*off = o;
	*len = n;
	return true;
}

static void model_write(struct robj *o, uint64_t off, const unsigned char *buf, size_t n);
static uint64_t model_size(struct robj *o);

/* Every byte of this thread's inside [0, size) in object page P. */
static void own_page(struct rthr *t, struct robj *o, unsigned char *addr, uint64_t P)
{
	struct cell *c = t->r->c;
	uint64_t size = model_size(o), blk;
	unsigned char buf[PG];
	void *bad = NULL;
	int pr;

	if (P * PG >= size)
		return;
	if (size > (P + 1) * PG)
		size = (P + 1) * PG;
	pthread_mutex_lock(&o->mlock);
	memcpy(buf, o->data + P * PG, size - P * PG);
	pthread_mutex_unlock(&o->mlock);
	for (blk = P * PG; blk < size; blk += R_BLK) {
		uint64_t i;

		if (owner(blk) != t->me)
			continue;
		for (i = blk; i < blk + R_BLK && i < size; i++)
			buf[i - P * PG] = (unsigned char)(1 + rnd(&t->rs, 255));
	}
	/* others' bytes are written back as they are: each byte is copied
	 * only where it is ours */
	for (blk = P * PG; blk < size; blk += R_BLK) {
		size_t n = size - blk < R_BLK ? (size_t)(size - blk) : R_BLK;

		if (owner(blk) != t->me)
			continue;
		pr = probe_write(addr + (blk - P * PG), buf + (blk - P * PG), n, &bad);
		if (pr == 2)
			return;
		if (pr) {
			fail(c, "obj %d: SIGBUS at %p writing byte %" PRIu64 " inside EOF (size %"
			     PRIu64 ")", o->idx, bad, blk, model_size(o));
			return;
		}
		model_write(o, blk, buf + (blk - P * PG), n);
	}
}

static void fill_values(struct rthr *t, unsigned char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)(1 + rnd(&t->rs, 255));
}

static void model_write(struct robj *o, uint64_t off, const unsigned char *buf, size_t n)
{
	pthread_mutex_lock(&o->mlock);
	memcpy(o->data + off, buf, n);
	pthread_mutex_unlock(&o->mlock);
}

static uint64_t model_size(struct robj *o)
{
	uint64_t size;

	pthread_mutex_lock(&o->mlock);
	size = o->size;
	pthread_mutex_unlock(&o->mlock);
	return size;
}

static void r_write_map(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	struct rslot *sl = &o->slot[rnd(&t->rs, R_NSLOT)];
	int i, nruns = 1 + (int)rnd(&t->rs, 4);

	pthread_rwlock_rdlock(&o->wlock);
	pthread_rwlock_rdlock(&sl->lock);
	if (sl->addr && rnd(&t->rs, 2)) {
		/* dense: all of this thread's bytes in a few pages */
		size_t k = rnd(&t->rs, sl->npages), e = k + 1 + rnd(&t->rs, 4);

		for (; k < e && k < sl->npages && !stopped(c); k++)
			own_page(t, o, (unsigned char *)sl->addr + k * PG, sl->pg[k]);
		nruns = 0;
	}
	for (i = 0; sl->addr && i < nruns; i++) {
		size_t k = rnd(&t->rs, sl->npages), n;
		uint64_t P = sl->pg[k], off;
		unsigned char buf[R_BLK];
		void *bad = NULL;

		if (!own_run(t, P, model_size(o), &off, &n))
			continue;
		fill_values(t, buf, n);
		int pr = probe_write((unsigned char *)sl->addr + k * PG + (off - P * PG), buf, n, &bad);

		if (pr == 2)
			break;
		if (pr) {
			fail(c, "obj %d: SIGBUS at %p writing byte %" PRIu64 " inside EOF (size %"
			     PRIu64 ")", o->idx, bad, off, model_size(o));
			break;
		}
		model_write(o, off, buf, n);
	}
	pthread_rwlock_unlock(&sl->lock);
	pthread_rwlock_unlock(&o->wlock);
}

static void r_pwrite(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	unsigned char buf[R_BLK];
	uint64_t off;
	size_t n;
	ssize_t w;

	pthread_rwlock_rdlock(&o->wlock);
	if (own_run(t, rnd(&t->rs, R_MAXPG), model_size(o), &off, &n)) {
		fill_values(t, buf, n);
		w = t_pwrite(&o->t, buf, n, off);
		if (w != (ssize_t)n)
			fail(c, "obj %d: pwrite(%zu bytes at %" PRIu64 ") returned %zd (%s)", o->idx,
			     n, off, w, w < 0 ? strerror((int)-w) : "short");
		else
			model_write(o, off, buf, n);
	}
	pthread_rwlock_unlock(&o->wlock);
}

static void r_pread(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	static const size_t maxlen = 2 * PG;
	unsigned char exp[2 * PG], got[2 * PG];
	uint64_t off = rnd(&t->rs, R_MAX);
	size_t len = 1 + rnd(&t->rs, maxlen), j;
	struct snap a, b;
	ssize_t r;

	if (rnd(&t->rs, 2))
		off &= ~(uint64_t)(PG - 1);
	if (len > R_MAX - off)
		len = (size_t)(R_MAX - off);
	snap_take(o, &a, off, len, exp);
	r = t_pread(&o->t, got, len, off);
	snap_take(o, &b, 0, 0, NULL);
	if (r < 0) {
		fail(c, "obj %d: pread(%zu bytes at %" PRIu64 "): %s", o->idx, len, off,
		     strerror((int)-r));
		return;
	}
	if (stable(&a, &b)) {
		size_t want = off >= a.size ? 0 : (a.size - off < len ? (size_t)(a.size - off) : len);

		if ((size_t)r != want) {
			fail(c, "obj %d: pread(%zu bytes at %" PRIu64 ") returned %zd, size %" PRIu64
			     " says %zu", o->idx, len, off, r, a.size, want);
			return;
		}
		for (j = 0; j < (size_t)r; j++) {
			if (owner(off + j) == t->me && got[j] != exp[j]) {
				fail(c, "obj %d: pread: byte %" PRIu64 " (size %" PRIu64 ") reads %#x, "
				     "model says %#x", o->idx, off + j, a.size, got[j], exp[j]);
				return;
			}
		}
	} else {
		for (j = 0; j < (size_t)r && j < len; j++) {
			if (owner(off + j) == t->me && got[j] != exp[j] && got[j]) {
				fail(c, "obj %d: pread: byte %" PRIu64 " reads %#x during a "
				     "truncate/punch, model says %#x or 0", o->idx, off + j, got[j], exp[j]);
				return;
			}
		}
	}
}

/* Begin/end a structural change.  Locking: o->wlock held exclusive. */
static uint64_t struct_begin(struct robj *o)
{
	uint64_t size;

	pthread_mutex_lock(&o->mlock);
	o->seq++;
	size = o->size;
	pthread_mutex_unlock(&o->mlock);
	return size;
}

static void struct_end(struct robj *o, uint64_t size, uint64_t zoff, uint64_t zlen)
{
	pthread_mutex_lock(&o->mlock);
	if (zlen)
		memset(o->data + zoff, 0, zlen);
	o->size = size;
	o->seq++;
	pthread_mutex_unlock(&o->mlock);
}

static uint64_t pick_size(struct rthr *t, uint64_t old)
{
	uint64_t s;

	/* mostly large: a stale page only shows if the data was not zero */
	switch (rnd(&t->rs, 8)) {
	case 0:
		return rnd(&t->rs, R_MAX + 1);
	case 1:
		return rnd(&t->rs, R_MAXPG + 1) * PG;
	case 2:
	case 3:
		s = old + rnd(&t->rs, 4 * PG);
		s = s > 2 * PG ? s - 2 * PG : 0;
		return s > R_MAX ? R_MAX : s;
	case 7:
		return rnd(&t->rs, 4) ? rnd(&t->rs, 8 * PG) : 0;
	default:
		return R_MAX - rnd(&t->rs, 8 * PG);
	}
}

static void r_truncate(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	uint64_t old, size;
	int ret;

	pthread_rwlock_wrlock(&o->wlock);
	old = struct_begin(o);
	size = pick_size(t, old);
	ret = t_truncate(&o->t, size);
	if (ret) {
		fail(c, "obj %d: truncate %" PRIu64 " -> %" PRIu64 ": %s", o->idx, old, size,
		     strerror(-ret));
		size = old;
	}
	struct_end(o, size, size, size < old ? old - size : 0);
	pthread_rwlock_unlock(&o->wlock);
}

static void r_punch(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	uint64_t size, off = rnd(&t->rs, R_MAX), len = 1 + rnd(&t->rs, 6 * PG), zlen = 0;
	int ret;

	if (rnd(&t->rs, 2)) {
		off &= ~(uint64_t)(PG - 1);
		len = (len + PG - 1) & ~(uint64_t)(PG - 1);
	}
	pthread_rwlock_wrlock(&o->wlock);
	size = struct_begin(o);
	ret = t_punch(&o->t, off, len);
	if (ret)
		fail(c, "obj %d: punch %" PRIu64 "+%" PRIu64 " (size %" PRIu64 "): %s", o->idx,
		     off, len, size, strerror(-ret));
	else if (off < size)
		zlen = (off + len > size ? size : off + len) - off;
	struct_end(o, size, off, zlen);
	pthread_rwlock_unlock(&o->wlock);
}

/*
 * ufault only: write this thread's bytes past EOF in the last page through
 * a mapping, then grow the object: the grown bytes must read zero.  (tmpfs
 * itself shows such bytes after an extension, so the kernel targets skip
 * this; ufault promises not to.)
 */
static void r_tail_grow(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	uint64_t size, P, newsize;
	struct rslot *sl = NULL;
	size_t i, k = 0;
	int ret;

	pthread_rwlock_wrlock(&o->wlock);
	size = model_size(o);
	P = size / PG;
	if (!(size % PG) || size >= R_MAX - PG)
		goto out_w;
	for (i = 0; i < R_NSLOT && !sl; i++) {
		pthread_rwlock_rdlock(&o->slot[i].lock);
		for (k = 0; o->slot[i].addr && k < o->slot[i].npages; k++)
			if (o->slot[i].pg[k] == P)
				break;
		if (o->slot[i].addr && k < o->slot[i].npages)
			sl = &o->slot[i];
		else
			pthread_rwlock_unlock(&o->slot[i].lock);
	}
	if (!sl)
		goto out_w;

	struct_begin(o);
	for (i = size % PG; i < PG; i++) {
		unsigned char v = (unsigned char)(1 + rnd(&t->rs, 255));
		void *bad = NULL;

		if (owner(P * PG + i) != t->me)
			continue;
		int pr = probe_write((unsigned char *)sl->addr + k * PG + i, &v, 1, &bad);

		if (pr == 2)
			break;
		if (pr) {
			fail(c, "obj %d: SIGBUS at %p writing past EOF inside the last page "
			     "(size %" PRIu64 ")", o->idx, bad, size);
			break;
		}
	}
	newsize = size + 1 + rnd(&t->rs, 3 * PG);
	if (newsize > R_MAX)
		newsize = R_MAX;
	ret = t_truncate(&o->t, newsize);
	if (ret) {
		fail(c, "obj %d: grow %" PRIu64 " -> %" PRIu64 ": %s", o->idx, size, newsize,
		     strerror(-ret));
		newsize = size;
	}
	struct_end(o, newsize, 0, 0);
	if (!ret)
		check_page(t, o, "read after grow", (unsigned char *)sl->addr + k * PG, P);
	pthread_rwlock_unlock(&sl->lock);
out_w:
	pthread_rwlock_unlock(&o->wlock);
}

/* Locking: sl->lock held exclusive. */
static int slot_map(struct rthr *t, struct robj *o, struct rslot *sl, size_t first, size_t n)
{
	size_t i;
	int ret = t_map(&o->t, n * PG, first * PG, &sl->addr);

	if (ret) {
		sl->addr = NULL;
		return ret;
	}
	(void)t;
	sl->npages = n;
	for (i = 0; i < n; i++)
		sl->pg[i] = first + i;
	return 0;
}

static void r_map_unmap(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	struct rslot *sl = &o->slot[rnd(&t->rs, R_NSLOT)];
	int ret;

	pthread_rwlock_wrlock(&sl->lock);
	if (sl->addr) {
		ret = t_unmap(&o->t, sl->addr, sl->npages * PG);
		if (ret) {
			struct uf_vma *v = o->t.uo ? uf_find_vma(c->mm, sl->addr) : NULL;

			fail(c, "obj %d: unmap %p + %zu pages: %s (VMA %p + %zu)", o->idx,
			     (void *)sl->addr, sl->npages, strerror(-ret),
			     v ? uf_vma_start(v) : NULL, v ? uf_vma_len(v) / PG : 0);
		}
		sl->addr = NULL;
	} else {
		size_t first = rnd(&t->rs, R_MAXPG);
		size_t n = 1 + rnd(&t->rs, R_MAXPG - first);

		ret = slot_map(t, o, sl, first, n);
		if (ret)
			fail(c, "obj %d: map %zu pages at page %zu: %s", o->idx, n, first,
			     strerror(-ret));
	}
	pthread_rwlock_unlock(&sl->lock);
}

/*
 * The program's own calls on a mapping (random-syscalls): the system's
 * munmap() of all or the tail of it, mremap() growing it (the kernel
 * usually moves it), shrinking it in place, or moving it elsewhere.  The
 * kernel targets do the same to their mappings, so the model is the
 * same; mremap() of a mapping split into windows is the kernel's EFAULT.
 */
static void r_plain(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	struct rslot *sl = &o->slot[rnd(&t->rs, R_NSLOT)];
	bool linear = true;
	size_t n, k, i;
	void *p, *dst;

	pthread_rwlock_wrlock(&sl->lock);
	if (!sl->addr)
		goto out;
	n = sl->npages;
	for (i = 1; i < n; i++)
		if (sl->pg[i] != sl->pg[0] + i)
			linear = false;
	switch (rnd(&t->rs, 4)) {
	case 0:		/* munmap() all, or the tail */
		k = rnd(&t->rs, n);
		if (munmap(sl->addr + k * PG, (n - k) * PG) < 0) {
			fail(c, "obj %d: munmap: %s", o->idx, strerror(errno));
			break;
		}
		sl->npages = k;
		if (!k)
			sl->addr = NULL;
		break;
	case 1:		/* shrink in place */
		if (n < 2)
			break;
		k = 1 + rnd(&t->rs, n - 1);
		if (mremap(sl->addr, n * PG, k * PG, 0) == MAP_FAILED) {
			fail(c, "obj %d: mremap shrink: %s", o->idx, strerror(errno));
			break;
		}
		sl->npages = k;
		break;
	case 2:		/* grow */
		if (!linear || sl->pg[0] + n >= R_MAXPG)
			break;
		k = n + 1 + rnd(&t->rs, R_MAXPG - sl->pg[0] - n);
		p = mremap(sl->addr, n * PG, k * PG, MREMAP_MAYMOVE);
		if (p == MAP_FAILED) {
			if (errno != EFAULT)
				fail(c, "obj %d: mremap grow: %s", o->idx, strerror(errno));
			break;
		}
		sl->addr = p;
		for (i = n; i < k; i++)
			sl->pg[i] = sl->pg[0] + i;
		sl->npages = k;
		break;
	default:	/* move over a range of the program's own */
		if (!linear)
			break;
		dst = mmap(NULL, n * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (dst == MAP_FAILED)
			break;
		p = mremap(sl->addr, n * PG, n * PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		if (p == MAP_FAILED) {
			if (errno != EFAULT)
				fail(c, "obj %d: mremap move: %s", o->idx, strerror(errno));
			munmap(dst, n * PG);
			break;
		}
		sl->addr = p;
		break;
	}
out:
	pthread_rwlock_unlock(&sl->lock);
}

static void r_remap(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	struct rslot *sl = &o->slot[rnd(&t->rs, R_NSLOT)];

	pthread_rwlock_wrlock(&sl->lock);
	if (sl->addr) {
		size_t i = rnd(&t->rs, sl->npages), k;
		size_t w = 1 + rnd(&t->rs, sl->npages - i < 4 ? sl->npages - i : 4);
		uint64_t pgoff = rnd(&t->rs, R_MAXPG - w + 1);
		int ret = t_remap(&o->t, sl->addr + i * PG, w * PG, pgoff);

		if (ret) {
			struct uf_vma *v = o->t.uo ? uf_find_vma(c->mm, sl->addr + i * PG) : NULL;

			fail(c, "obj %d: remap %zu pages at %p (page %zu of %p + %zu) to page %"
			     PRIu64 ": %s (VMA %p + %zu)", o->idx, w, (void *)(sl->addr + i * PG), i,
			     (void *)sl->addr, sl->npages, pgoff, strerror(-ret),
			     v ? uf_vma_start(v) : NULL, v ? uf_vma_len(v) / PG : 0);
		}
		else
			for (k = 0; k < w; k++)
				sl->pg[i + k] = pgoff + k;
	}
	pthread_rwlock_unlock(&sl->lock);
}

static void r_msync(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	struct rslot *sl = &o->slot[rnd(&t->rs, R_NSLOT)];
	int ret;

	pthread_rwlock_rdlock(&sl->lock);
	if (sl->addr && rnd(&t->rs, 2))
		ret = t_msync(&o->t, sl->addr, sl->npages * PG);
	else
		ret = t_sync(&o->t);
	if (ret)
		fail(c, "obj %d: msync/sync: %s", o->idx, strerror(-ret));
	pthread_rwlock_unlock(&sl->lock);
}

/*
 * Write everything back, drop the object and open the file again: every
 * page is then cold in the cache while the store holds its bytes, so the
 * next faults fill from the store while truncate and punch run.
 */
static void r_reopen(struct rthr *t, struct robj *o)
{
	struct cell *c = t->r->c;
	uint64_t size;
	size_t i;
	int ret;

	pthread_rwlock_wrlock(&o->epoch);
	for (i = 0; i < R_NSLOT; i++) {
		struct rslot *sl = &o->slot[i];

		if (sl->addr) {
			ret = t_unmap(&o->t, sl->addr, sl->npages * PG);
			if (ret)
				fail(c, "obj %d: unmap: %s", o->idx, strerror(-ret));
			sl->addr = NULL;
		}
	}
	ret = t_sync(&o->t);
	if (ret)
		fail(c, "obj %d: sync before reopen: %s", o->idx, strerror(-ret));
	t_close(&o->t);
	ret = t_open(&o->t, false);
	if (ret) {
		fail(c, "obj %d: reopen %s: %s", o->idx, o->t.path, strerror(-ret));
		atomic_store(&c->stop, 1);
		goto out;	/* the object is gone: the run stops */
	}
	size = model_size(o);
	if (o->t.uo && uf_object_size(o->t.uo) != size)
		fail(c, "obj %d: reopened with size %" PRIu64 ", model says %" PRIu64, o->idx,
		     uf_object_size(o->t.uo), size);
	ret = slot_map(t, o, &o->slot[0], 0, R_MAXPG);
	if (ret)
		fail(c, "obj %d: map after reopen: %s", o->idx, strerror(-ret));
out:
	pthread_rwlock_unlock(&o->epoch);
}

static void *rthr_main(void *arg)
{
	struct rthr *t = arg;
	struct rrun *r = t->r;
	struct cell *c = r->c;
	bool uf = c->tg->ufault, reopen = c->tg->dir != NULL;

	__atomic_store_n(&t->w.tid, gettid(), __ATOMIC_RELAXED);
	while (!stopped(c)) {
		struct robj *o = &r->obj[rnd(&t->rs, R_NOBJ)];
		unsigned op = (unsigned)rnd(&t->rs, 1000);

		if (op < 8) {
			if (reopen)
				r_reopen(t, o);
			atomic_fetch_add(&c->ops, 1);
			continue;
		}
		pthread_rwlock_rdlock(&o->epoch);
		if (!o->t.uo && o->t.fd < 0) {
			pthread_rwlock_unlock(&o->epoch);
			break;
		}
		if (op < 350)
			r_read_map(t, o);
		else if (op < 550)
			r_write_map(t, o);
		else if (op < 630)
			r_pread(t, o);
		else if (op < 700)
			r_pwrite(t, o);
		else if (op < 770)
			r_truncate(t, o);
		else if (op < 830)
			r_punch(t, o);
		else if (op < 850) {
			if (uf)
				r_tail_grow(t, o);
			else
				r_truncate(t, o);
		} else if (op < 900) {
			if (c->syscalls && rnd(&t->rs, 2))
				r_plain(t, o);
			else
				r_map_unmap(t, o);
		}
		else if (op < 960)
			r_remap(t, o);
		else
			r_msync(t, o);
		pthread_rwlock_unlock(&o->epoch);
		atomic_fetch_add(&c->ops, 1);
	}
	return NULL;
}

static void rwlock_init_wpref(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(l, &a);
	pthread_rwlockattr_destroy(&a);
}

static void run_random(struct cell *c)
{
	struct rrun *r = calloc(1, sizeof(*r));
	struct rthr th[R_NTHR];
	uint64_t rs = seed_mix(c->seed, 2);
	int i, j, nobj = 0, ret;
	double end = now() + c->seconds;

	if (!r) {
		fail(c, "out of memory");
		return;
	}
	r->c = c;
	for (i = 0; i < R_NOBJ; i++) {
		struct robj *o = &r->obj[i];

		o->idx = i;
		rwlock_init_wpref(&o->epoch);
		rwlock_init_wpref(&o->wlock);
		pthread_mutex_init(&o->mlock, NULL);
		for (j = 0; j < R_NSLOT; j++)
			rwlock_init_wpref(&o->slot[j].lock);
		o->size = rnd(&rs, R_MAX + 1);
		ret = t_create(c, &o->t, o->size);
		if (ret) {
			fail(c, "create object: %s", strerror(-ret));
			break;
		}
		nobj++;
		ret = slot_map(NULL, o, &o->slot[0], 0, R_MAXPG);
		if (ret) {
			fail(c, "map object: %s", strerror(-ret));
			break;
		}
	}
	for (i = 0; i < R_NTHR; i++)
		th[i] = (struct rthr){ .r = r, .me = (unsigned)i, .rs = seed_mix(c->seed, 100 + i) };
	run_workers(c, end, R_NTHR, rthr_main, th, sizeof(th[0]));

	for (i = 0; i < nobj; i++) {
		struct robj *o = &r->obj[i];

		for (j = 0; j < R_NSLOT; j++)
			if (o->slot[j].addr)
				t_unmap(&o->t, o->slot[j].addr, o->slot[j].npages * PG);
		t_destroy(&o->t);
	}
	for (i = 0; i < R_NOBJ; i++) {
		pthread_rwlock_destroy(&r->obj[i].epoch);
		pthread_rwlock_destroy(&r->obj[i].wlock);
		pthread_mutex_destroy(&r->obj[i].mlock);
		for (j = 0; j < R_NSLOT; j++)
			pthread_rwlock_destroy(&r->obj[i].slot[j].lock);
	}
	free(r);
}

/* ------------------------------------------------------------------ */
/* Scenario: readonly (a read-only store: the HTTP store)              */
/* ------------------------------------------------------------------ */

/*
 * The object at the --store http(s):// URL, read by RO_NTHR threads at
 * random: windows mapped shared or private (each page compared with the
 * reference whole), uf_object_pread() of random ranges, writes into
 * private mappings (copy-on-write: seen there, nowhere else), every write
 * and sync through the API (-EROFS) and a shared writable map (-EACCES),
 * and now and then the object dropped and opened again (a cold cache, the
 * next faults read from the server while others map and read).  The
 * reference is read once at the start with the raw store's reads
 * (uf_http_store_open), not through ufault's cache; only the object's
 * first RO_MAX bytes are used.
 */
#define RO_NTHR		4
#define RO_MAX		((uint64_t)8 << 20)
#define RO_WIN		64	/* pages mapped at most */

struct rorun {
	struct cell *c;
	pthread_rwlock_t epoch;	/* shared: use obj; exclusive: reopen it */
	struct uf_object *obj;
	unsigned char *ref;	/* the bytes of [0, maplen), zero past size */
	uint64_t size;		/* min(object size, RO_MAX) */
	size_t npages;		/* pages of the region, the last maybe partial */
};

struct rothr {
	struct worker w;	/* first: see run_workers() */
	struct rorun *r;
	uint64_t rs;
};

/* A page of a mapping at @addr (object page @pg) against the reference. */
static void ro_check_page(struct rorun *r, const unsigned char *addr, size_t pg, const char *how)
{
	unsigned char buf[PG];
	void *bad = NULL;
	size_t i;
	int pr = probe_read(buf, addr, PG, &bad);

	if (pr) {
		fail(r->c, "%s: page %zu: %s at %p", how, pg, pr == 1 ? "SIGBUS" : "blocked", bad);
		return;
	}
	if (memcmp(buf, r->ref + pg * PG, PG)) {
		for (i = 0; buf[i] == r->ref[pg * PG + i]; i++)
			;
		fail(r->c, "%s: page %zu byte %zu reads %#x, the store holds %#x", how, pg, i,
		     buf[i], r->ref[pg * PG + i]);
	}
}

/* A window mapped shared or private, read; a private one written too. */
static void ro_map(struct rothr *t)
{
	struct rorun *r = t->r;
	size_t first = rnd(&t->rs, r->npages), k;
	size_t n = 1 + rnd(&t->rs, r->npages - first < RO_WIN ? r->npages - first : RO_WIN);
	bool priv = rnd(&t->rs, 2);
	unsigned char *p, x;
	void *a, *bad;
	int ret;

	ret = uf_mmap(r->c->mm, n * PG, priv ? PROT_READ | PROT_WRITE : PROT_READ,
		      priv ? UF_MAP_PRIVATE : UF_MAP_SHARED, r->obj, first * PG, &a);
	if (ret) {
		fail(r->c, "uf_mmap %s of %zu pages at page %zu: %s", priv ? "private" : "shared",
		     n, first, strerror(-ret));
		return;
	}
	p = a;
	for (k = 0; k < n && !stopped(r->c); k++)
		ro_check_page(r, p + k * PG, first + k, priv ? "private map" : "shared map");
	if (priv && !stopped(r->c)) {	/* copy-on-write: there, not in the store */
		k = rnd(&t->rs, n * PG);
		x = (unsigned char)~r->ref[first * PG + k];
		bad = NULL;
		if (probe_write(p + k, &x, 1, &bad) || p[k] != x)
			fail(r->c, "private map: a write at page %zu did not stay", first + k / PG);
	}
	ret = uf_munmap(r->c->mm, a, n * PG);
	if (ret)
		fail(r->c, "uf_munmap: %s", strerror(-ret));
}

static void ro_pread(struct rothr *t)
{
	struct rorun *r = t->r;
	uint64_t off = rnd(&t->rs, r->size);
	size_t n = 1 + rnd(&t->rs, r->size - off < 65536 ? r->size - off : 65536);
	unsigned char *buf = malloc(n);
	ssize_t got;

	if (!buf)
		return;
	got = uf_object_pread(r->obj, buf, n, off);
	if (got != (ssize_t)n)
		fail(r->c, "uf_object_pread(%zu at %" PRIu64 "): %zd (%s)", n, off, got,
		     got < 0 ? strerror((int)-got) : "short");
	else if (memcmp(buf, r->ref + off, n))
		fail(r->c, "uf_object_pread(%zu at %" PRIu64 "): bytes differ from the store's",
		     n, off);
	free(buf);
}

/* Every write, and a sync, refused; a shared writable map too. */
static void ro_writes(struct rothr *t)
{
	struct rorun *r = t->r;
	void *a;
	int ret;

	switch (rnd(&t->rs, 5)) {
	case 0:
		ret = (int)uf_object_pwrite(r->obj, "x", 1, rnd(&t->rs, r->size));
		break;
	case 1:
		ret = uf_object_truncate(r->obj, rnd(&t->rs, 2 * r->size));
		break;
	case 2:
		ret = uf_object_punch_hole(r->obj, rnd(&t->rs, r->npages) * PG, PG);
		break;
	case 3:
		ret = uf_object_sync(r->obj);
		break;
	default:
		ret = uf_mmap(r->c->mm, PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, r->obj, 0, &a);
		if (ret != -EACCES)
			fail(r->c, "shared writable uf_mmap: %s, want EACCES", strerror(-ret));
		if (!ret)
			uf_munmap(r->c->mm, a, PG);
		return;
	}
	if (ret != -EROFS)
		fail(r->c, "a write or sync returned %d (%s), want -EROFS", ret, strerror(-ret));
}

/* Drop the object and open it again: an empty cache. */
static void ro_reopen(struct rothr *t)
{
	struct rorun *r = t->r;
	int ret;

	pthread_rwlock_wrlock(&r->epoch);
	uf_object_put(r->obj);
	r->obj = NULL;
	ret = uf_http_open(r->c->mm, store_url, NULL, &r->obj);
	if (ret) {
		fail(r->c, "reopen %s: %s", store_url, strerror(-ret));
		atomic_store(&r->c->stop, 1);
	}
	pthread_rwlock_unlock(&r->epoch);
}

static void *rothr_main(void *arg)
{
	struct rothr *t = arg;
	struct rorun *r = t->r;

	__atomic_store_n(&t->w.tid, gettid(), __ATOMIC_RELAXED);
	while (!stopped(r->c)) {
		unsigned op = (unsigned)rnd(&t->rs, 1000);

		if (op < 5) {
			ro_reopen(t);
		} else {
			pthread_rwlock_rdlock(&r->epoch);
			if (!r->obj) {
				pthread_rwlock_unlock(&r->epoch);
				break;
			}
			if (op < 600)
				ro_map(t);
			else if (op < 900)
				ro_pread(t);
			else
				ro_writes(t);
			pthread_rwlock_unlock(&r->epoch);
		}
		atomic_fetch_add(&r->c->ops, 1);
	}
	return NULL;
}

/* The reference: the region's bytes, read with the raw store. */
static int ro_reference(struct rorun *r)
{
	const struct uf_store_ops *ops;
	void *store;
	uint64_t size;
	ssize_t got;
	int ret = uf_http_store_open(store_url, NULL, &ops, &store, &size);

	if (ret)
		return ret;
	r->size = size < RO_MAX ? size : RO_MAX;
	r->npages = (size_t)((r->size + PG - 1) / PG);
	r->ref = calloc(r->npages ? r->npages : 1, PG);
	if (!r->ref || !r->size)
		ret = !r->ref ? -ENOMEM : -ENODATA;
	else if ((got = ops->read(store, r->ref, r->size, 0)) != (ssize_t)r->size)
		ret = got < 0 ? (int)got : -EIO;
	ops->release(store);
	return ret;
}

static void run_readonly(struct cell *c)
{
	struct rorun r = { .c = c };
	struct rothr th[RO_NTHR];
	double end = now() + c->seconds;
	int i, ret;

	rwlock_init_wpref(&r.epoch);
	ret = ro_reference(&r);
	if (!ret)
		ret = uf_http_open(c->mm, store_url, NULL, &r.obj);
	if (ret) {
		fail(c, "%s: %s", store_url, ret == -ENODATA ? "an empty object" : strerror(-ret));
		goto out;
	}
	for (i = 0; i < RO_NTHR; i++)
		th[i] = (struct rothr){ .r = &r, .rs = seed_mix(c->seed, 200 + i) };
	run_workers(c, end, RO_NTHR, rothr_main, th, sizeof(th[0]));
out:
	if (r.obj)
		uf_object_put(r.obj);
	pthread_rwlock_destroy(&r.epoch);
	free(r.ref);
}

/* ------------------------------------------------------------------ */
/* Driver                                                              */
/* ------------------------------------------------------------------ */

struct scenario {
	const char *name;
	int mode;		/* enum seed_mode, or -1: random, -2: random-syscalls,
				 * -3: readonly */
};
#define MODE_READONLY	(-3)

static const struct scenario scenarios[] = {
	{ "seed-same",      SEED_SAME },
	{ "seed-each",      SEED_EACH },
	{ "seed-nonlinear", SEED_NONLINEAR },
	{ "random",         -1 },
	{ "random-syscalls", -2 },
	{ "readonly",       MODE_READONLY },
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: ufault-stress [--seconds N] [--scenario NAME] [--target NAME] [--seed S]\n"
		   "                     [--store redis://[[user]:password@]host:port[,...][/PREFIX]"
		   "[?options]]\n"
		   "                     [--store http[s]://host[:port]/path]\n"
		   "Runs each scenario against each target and checks every read against a\n"
		   "model of what the bytes must be.\n"
		   "  --seconds N   total run time, shared out over the runs (default 20)\n"
		   "  --scenario    run only the matching scenarios (default: all):\n               ");
	for (i = 0; i < NSCENARIOS; i++)
		fprintf(f, " %s", scenarios[i].name);
	fprintf(f, "\n                (readonly: with --store http(s):// only; it alone runs there)\n"
		   "  --target      run only the matching targets (default: all but ufault-redis\n"
		   "                and ufault-http):\n"
		   "               ");
	for (i = 0; i < NTARGETS; i++)
		fprintf(f, " %s", targets[i].name);
	fprintf(f, "\n  NAME may be a prefix (\"seed\", \"ufault\", \"kernel\"); a whole\n"
		   "  scenario name means that one only.\n"
		   "  --seed S      the random seed (default: from the time and pid; printed)\n"
		   "  --store URL   run on objects in that Redis Cluster (target ufault-redis\n"
		   "                only); the password may come from UFAULT_REDIS_PASSWORD.\n"
		   "                With an http:// or https:// URL: the object there, read-only\n"
		   "                (target ufault-http, scenario readonly; the scenarios that\n"
		   "                write are skipped, each with a line saying so).\n"
		   "  -h, --help    this text\n"
		   "  --version     the version of ufault\n"
		   "A failure is a bug in what was run: a read that disagreed with the model\n"
		   "(a stale page after truncate or punch, a lost write, nonzero bytes past\n"
		   "EOF), a SIGBUS inside EOF or a missing one past it, a flag that never\n"
		   "cleared (\"page stuck\"), a call that failed where it must not, a thread\n"
		   "still blocked after its run, or a SIGBUS outside any access.  Each is\n"
		   "described on stderr.  The kernel-* targets check the tester itself.\n"
		   "Exit: 0 all passed, 1 any failure, 2 bad usage, 77 nothing could run.\n");
}

/* A filter names one exactly ("random"), or all it begins ("seed"). */
static bool match(const char *filter, const char *name)
{
	size_t i;

	if (!filter)
		return true;
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(filter, scenarios[i].name))
			return !strcmp(filter, name);
	return !strncmp(filter, name, strlen(filter));
}

/* The Redis target runs with --store redis://, the HTTP one with --store
 * http(s)://, each alone; the others without --store. */
static bool target_on(const struct target *tg)
{
	if (is_http(tg))
		return http_url(store_url);
	if (is_redis(tg))
		return store_url && !http_url(store_url);
	return !store_url;
}

/* readonly runs on the read-only store alone, and it alone runs there:
 * every other scenario writes.  NULL, or why @sc does not run on @tg. */
static const char *cell_off(const struct scenario *sc, const struct target *tg)
{
	if (is_http(tg) && sc->mode != MODE_READONLY)
		return "it writes, and the HTTP store is read-only";
	if (!is_http(tg) && sc->mode == MODE_READONLY)
		return "for a read-only store (--store http(s)://) only";
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "scenario", required_argument, NULL, 'c' },
		{ "target", required_argument, NULL, 't' },
		{ "store", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *fscn = NULL, *ftg = NULL;
	double seconds = 20;
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	unsigned long long total_fail = 0;
	size_t i, j, ncells = 0, nrun = 0, nskip = 0;
	struct sigaction sa;
	double per;
	char *e;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			seconds = strtod(optarg, &e);
			if (*e || !(seconds > 0)) {
				fprintf(stderr, "ufault-stress: bad --seconds %s\n", optarg);
				return 2;
			}
			break;
		case 'c':
			fscn = optarg;
			break;
		case 't':
			ftg = optarg;
			break;
		case 'S':
			if (strncmp(optarg, "redis://", 8) && !http_url(optarg)) {
				fprintf(stderr, "ufault-stress: --store wants a redis://, http:// or "
					"https:// URL\n");
				return 2;
			}
			store_url = optarg;
			break;
		case 'r':
			seed = strtoull(optarg, &e, 0);
			if (*e) {
				fprintf(stderr, "ufault-stress: bad --seed %s\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ufault-stress (ufault) %s\n", UF_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < NSCENARIOS; i++)
		for (j = 0; j < NTARGETS; j++)
			if (match(fscn, scenarios[i].name) && match(ftg, targets[j].name) &&
			    target_on(&targets[j]) && !cell_off(&scenarios[i], &targets[j]))
				ncells++;
	if (!ncells) {
		fprintf(stderr, "ufault-stress: no scenario/target matches\n");
		usage(stderr);
		return 2;
	}
	per = seconds / (double)ncells;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_kick;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	printf("ufault-stress: seed %" PRIu64 ", %.1f s per run%s\n", seed, per,
	       getenv("UFAULT_BREAK_PROTOCOL") ? ", UFAULT_BREAK_PROTOCOL set" : "");
	printf("%-16s %-14s %12s %12s %9s\n", "scenario", "target", "operations", "faults",
	       "failures");
	fflush(stdout);

	for (i = 0; i < NSCENARIOS; i++) {
		for (j = 0; j < NTARGETS; j++) {
			const struct target *tg = &targets[j];
			struct uf_mm_config cfg = { .handler_threads = 2 };
			struct cell c = {
				.scenario = scenarios[i].name, .tg = tg, .seconds = per,
				.seed = seed_mix(seed, i * NTARGETS + j),
			};
			unsigned long stray0;
			char faults[32] = "-";

			if (!match(fscn, scenarios[i].name) || !match(ftg, tg->name) ||
			    !target_on(tg))
				continue;
			if (cell_off(&scenarios[i], tg)) {	/* said once, for the HTTP store */
				if (is_http(tg))
					printf("%-16s %-14s skipped: %s\n", c.scenario, tg->name,
					       cell_off(&scenarios[i], tg));
				continue;
			}
			if (tg->ufault) {
				int ret = uf_mm_create(&cfg, &c.mm);

				if (ret) {
					printf("%-16s %-14s skipped: uf_mm_create: %s\n", c.scenario,
					       tg->name, strerror(-ret));
					nskip++;
					continue;
				}
			}
			stray0 = atomic_load(&stray_sigbus);
			c.syscalls = scenarios[i].mode == -2;
			if (scenarios[i].mode == MODE_READONLY)
				run_readonly(&c);
			else if (scenarios[i].mode < 0)
				run_random(&c);
			else
				run_seed(&c, (enum seed_mode)scenarios[i].mode);
			if (atomic_load(&stray_sigbus) != stray0)
				fail(&c, "%lu SIGBUS delivered outside any access (for an access "
				     "that had already completed)", atomic_load(&stray_sigbus) - stray0);
			if (c.mm) {
				struct uf_stats st;

				if (!uf_mm_stats(c.mm, &st))
					snprintf(faults, sizeof(faults), "%" PRIu64,
						 st.minor_faults + st.major_faults);
				uf_mm_destroy(c.mm);
			}
			printf("%-16s %-14s %12llu %12s %9llu\n", c.scenario, tg->name,
			       (unsigned long long)atomic_load(&c.ops), faults,
			       (unsigned long long)atomic_load(&c.failures));
			fflush(stdout);
			total_fail += atomic_load(&c.failures);
			nrun++;
		}
	}
	if (!nrun) {
		printf("nothing ran\n");
		return 77;
	}
	if (total_fail) {
		printf("FAIL: %llu failure%s\n", total_fail, total_fail == 1 ? "" : "s");
		return 1;
	}
	printf("PASS%s\n", nskip ? " (some runs skipped)" : "");
	return 0;
}
