// SPDX-License-Identifier: MIT
/*
 * ufault-bench --only serve: what serving another process costs.
 *
 * The client is a Firecracker-style process forked for each run: guest
 * memory mapped anonymous and private, its own userfaultfd (O_NONBLOCK,
 * UFFD_FEATURE_EVENT_REMOVE) with the region registered MISSING, handed
 * to this process over a socket with SCM_RIGHTS; this process serves it
 * with uf_object_serve_uffd() from a fresh mm and object (an empty
 * cache) over a tmpfs file.  The client touches one word per page and
 * checks it against the page's tag; only its touches are timed, in the
 * client, from after the server has taken its userfaultfd.
 *
 *   serve-cold-rand    the client's cold faults in a fixed random order,
 *                      against the same faults in this process through a
 *                      ufault mapping of a fresh object: goal <= 1.1x.
 *                      Beside it, the same client served by a minimal
 *                      handler thread of this process (poll, read, pread,
 *                      UFFDIO_COPY): the floor of serving another process.
 *   serve-restore-seq  a 256 MiB restore read in order by the client
 *                      (the server copies the windows ahead of it in the
 *                      background, a fault per window at its marker),
 *                      per page, against the kernel's cost per page of a
 *                      private mapping of the warm tmpfs file: goal
 *                      <= 1.5x.  In-process ufault for information.
 *                      Beside it, the floor: the same client with its
 *                      whole region copied in (UFFDIO_COPY) before it
 *                      starts, so that it only touches pages copied in
 *                      ahead; the server can approach that, not beat it.
 *   serve-restore-warm the same restore by a second client of the same
 *                      server, whose cache the first one (the cold
 *                      restore above) filled: against the floor, goal
 *                      <= 1.1x, and never more than the cold restore.
 *   serve-restore-huge a 64 MiB restore read in order by a client whose
 *                      memory is hugetlbfs (2 MiB pages, page_size 2097152),
 *                      cold, against the best a server of a cold restore
 *                      can do, measured in the same rounds: the better of
 *                      a minimal handler of 2 MiB faults (min_handler with
 *                      2 MiB: poll, read, pread 2 MiB, UFFDIO_COPY 2 MiB)
 *                      and a minimal run-ahead (min_ahead: a thread copying
 *                      the huge pages in order from the handshake on,
 *                      answering faults first): goal <= 1.1x.  Beside it,
 *                      for information, the touch-only floor (the client's
 *                      huge pages all copied in before it starts), which a
 *                      cold restore cannot reach: there each page's bytes
 *                      are read from the file and copied into the client,
 *                      two copies the floor's touches never wait for (the
 *                      row prints this process's memcpy bandwidth and what
 *                      two copies of 4096 bytes cost at it, already about
 *                      10x the floor's time per page; the kernel's page
 *                      cache read and hugetlbfs copy are slower still),
 *                      and the server's CPU time per page (its rusage,
 *                      which the load of the machine moves less than the
 *                      times).  --only serve-huge runs it alone.  Skipped
 *                      where no huge pages can be reserved.
 *   serve-ws           a restore touching a recorded 4096-page working set
 *                      (the one of --only ws) of the 256 MiB, served lazily,
 *                      recorded (uf_object_serve_record), and with the
 *                      record pushed into the client ahead of its faults
 *                      (uf_object_serve_prefetch): the speedup over lazy,
 *                      and the faults the client took.
 *   serve-flood        the client's cold random faults (serve-cold-rand's)
 *                      served by a ufault-serve process started fresh for
 *                      each run (an empty cache), alone, beside an idle
 *                      flood (another uid, 65534, holding as many
 *                      connections that never send as the server lets it,
 *                      reconnecting as soon as one is closed), beside
 *                      a fault flood (uid 65534's VMMs one after another,
 *                      each touching all of the data), beside lying
 *                      offsets (uid 65534's ufault clients, one after
 *                      another, each mapping the rest of the cache and
 *                      telling the server it maps the page after each of
 *                      its pages: each of its 64 reads faults until its
 *                      SIGBUS, which it catches, and goes on), and
 *                      beside a mapping flood (a ufault client of uid
 *                      65534 telling as many mappings as its table
 *                      takes, 4096, then attaching again, in a loop),
 *                      each begun 1 s before the client: its
 *                      throughput beside each, as a ratio to alone:
 *                      goal >= 0.7x.
 *                      For reference, beside that uid burning a CPU and
 *                      nothing else: what the machine's own sharing
 *                      costs, which no server can give back (on 2 CPUs,
 *                      a flooder that spins takes one of them).
 *                      Root only (the flooder is another uid).
 *   serve-flood-restore  the same, for the client's cold restore: the
 *                      first quarter of the data touched in order, as a
 *                      VMM restores its memory (the fault flood touches
 *                      the rest).
 *   serve-restore-packed  a snapshot more like a guest's memory (each
 *                      page its tag, then text-like bytes for half the
 *                      pages and zeros for the rest, in runs), restored in
 *                      order and faulted at random by the client, served
 *                      from the plain file and from its packed form
 *                      (uf_pack_write, uf_pack_open): what decompression
 *                      costs per page, and the packed size (information).
 *   serve-restore-http the restore of serve-restore-seq, the object opened
 *                      with uf_http_open() from an nginx of the bench's
 *                      own on 127.0.0.1 serving a copy of the data, per
 *                      page, against the same restore from the tmpfs
 *                      file: goal <= 2x (tools/http/bench-http.c; skipped
 *                      without nginx or libcurl).  Beside it (information)
 *                      the same data packed (uf_pack_write) and served from
 *                      nginx through uf_pack_create_readv().
 *
 * After one untimed warm-up round the variants of a row run interleaved,
 * and each row prints once, with medians, when its rounds are done.
 */
#define _GNU_SOURCE
#include "bench-serve.h"
#include "../http/bench-http.h"
#include <ufault.h>
#include <ufault-pack.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG		4096UL
#define SV_SIZE		(256UL << 20)
#define SV_RAND		16384		/* cold random faults per run */
#define SV_HUGE		(64UL << 20)	/* serve-restore-huge: its pool */
#define SV_WS_RUN	16
#define SV_WS_NRUNS	128
#define SV_WS_NSINGLE	2048
#define SV_WS_SET	(SV_WS_NRUNS * SV_WS_RUN + SV_WS_NSINGLE)
#define SV_MAX_REPEAT	101
#define EXIT_MISS	1
#define EXIT_ERR	2
#define EXIT_SKIP	77

struct sv {
	size_t size, npages;		/* the data, and the restore */
	bool huge;			/* clients map hugetlbfs memory (2 MiB) */
	size_t nrand;
	unsigned int repeat;
	bool quick;			/* --quick: figures only, no verdicts */
	int fd;				/* the data file (unlinked) */
	char path[64];			/* /proc/self/fd/N */
	/* serve-restore-packed: the client's object is this file instead
	 * (NULL: path), opened with uf_pack_open() when open_packed */
	const char *open_path;
	bool open_packed;
	char rec[PATH_MAX];		/* the working-set record */
	const char *url;		/* client_run() opens this, not a file */
	bool url_packed;		/* ... as a packed snapshot */
	struct uf_pack_write_stats http_pack;	/* serve-restore-http's */
	uint32_t *rand, *seq, *ws;	/* page orders */
};

/* What one client run reports. */
struct sv_result {
	uint64_t ns;			/* its touches */
	uint64_t faults;		/* page faults it took meanwhile */
	uint64_t bad;			/* pages with a wrong tag */
	int err;			/* set-up failed: -errno */
	unsigned int svc_us;		/* the server's median time per fault
					   (event read to wake), upper bound */
};

/* The median of a run's fault latencies (uf_stats.lat_us), an upper bound
 * in microseconds, or 0. */
static unsigned int lat_median_us(struct uf_mm *mm)
{
	struct uf_stats st;
	uint64_t n = 0, sum = 0;
	int i;

	if (uf_mm_stats(mm, &st))
		return 0;
	for (i = 0; i < UF_LAT_BUCKETS; i++)
		n += st.lat_us[i];
	for (i = 0; n && i < UF_LAT_BUCKETS; i++) {
		sum += st.lat_us[i];
		if (2 * sum >= n)
			return 2U << i;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t page_tag(uint64_t p)
{
	return 0x7566000000000000ULL | p;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t self_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

static __attribute__((noinline)) uint64_t touch(const char *base, const uint32_t *order, size_t n)
{
	uint64_t bad = 0;
	size_t i;

	for (i = 0; i < n; i++)
		bad += *(const volatile uint64_t *)(base + (size_t)order[i] * PG) !=
		       page_tag(order[i]);
	return bad;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median of the rounds' ratios @a[r] / @b[r] (@n rounds, in round
 * order, before median() sorts them).  The two of a round are measured
 * within a second of each other; the machine drifts 2-3x between
 * minutes, which a ratio of two medians would judge.
 */
static double median_ratio(const uint64_t *a, const uint64_t *b, unsigned int n, double *lo,
			   double *hi)
{
	double q[SV_MAX_REPEAT];
	unsigned int i;

	for (i = 0; i < n; i++)
		q[i] = b[i] ? (double)a[i] / (double)b[i] : 0;
	qsort(q, n, sizeof(*q), cmp_dbl);
	if (lo)
		*lo = q[0];
	if (hi)
		*hi = q[n - 1];
	return q[n / 2];
}

/* @s's rounds, at least @min of them but with --quick. */
static unsigned int rounds_at_least(const struct sv *s, unsigned int min)
{
	return s->quick || s->repeat >= min ? s->repeat : min;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

static int data_create(struct sv *s, const char *dir)
{
	char tmpl[PATH_MAX];
	size_t chunk = 1 << 20, off, i;
	char *buf;
	int ret = 0;

	snprintf(tmpl, sizeof(tmpl), "%s/ufault-bench-serve.XXXXXX", dir);
	s->fd = mkostemp(tmpl, O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	unlink(tmpl);
	snprintf(s->path, sizeof(s->path), "/proc/self/fd/%d", s->fd);
	buf = aligned_alloc(PG, chunk);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0xa5, chunk);
	for (off = 0; off < s->size && !ret; off += chunk) {
		for (i = 0; i < chunk; i += PG)
			*(uint64_t *)(buf + i) = page_tag((off + i) / PG);
		if (pwrite(s->fd, buf, chunk, (off_t)off) != (ssize_t)chunk)
			ret = errno ? -errno : -EIO;
	}
	free(buf);
	return ret;
}

/* The orders: random over the first nrand pages' worth of the data, in
 * order over all of it, and the working set of --only ws (runs of 16 and
 * singles, a page apart at least, shuffled). */
static int orders_make(struct sv *s)
{
	uint64_t seed = 0x7566617574626e63ULL, ws = seed ^ 0x7773;
	struct { uint32_t start, len; } *item, t;
	uint8_t *used;
	size_t i, k, n = 0;

	s->rand = malloc(s->nrand * sizeof(*s->rand));
	s->seq = malloc(s->npages * sizeof(*s->seq));
	s->ws = malloc(SV_WS_SET * sizeof(*s->ws));
	used = calloc(s->npages, 1);
	item = malloc((SV_WS_NRUNS + SV_WS_NSINGLE) * sizeof(*item));
	if (!s->rand || !s->seq || !s->ws || !used || !item) {
		free(used);
		free(item);
		return -ENOMEM;
	}
	for (i = 0; i < s->npages; i++)
		s->seq[i] = (uint32_t)i;
	for (i = 0; i < s->nrand; i++)
		s->rand[i] = (uint32_t)i;
	for (i = s->nrand - 1; i > 0; i--) {
		uint32_t x;

		k = splitmix64(&seed) % (i + 1);
		x = s->rand[i];
		s->rand[i] = s->rand[k];
		s->rand[k] = x;
	}
	for (i = 0; i < SV_WS_NRUNS + SV_WS_NSINGLE; i++) {
		uint32_t len = i < SV_WS_NRUNS ? SV_WS_RUN : 1, p;

		do {
			p = (uint32_t)(1 + splitmix64(&ws) % (s->npages - SV_WS_RUN - 2));
			for (k = 0; k < len + 2 && !used[p - 1 + k]; k++)
				;
		} while (k < len + 2);
		memset(used + p, 1, len);
		item[i].start = p;
		item[i].len = len;
	}
	for (i = SV_WS_NRUNS + SV_WS_NSINGLE - 1; i > 0; i--) {
		k = splitmix64(&ws) % (i + 1);
		t = item[i];
		item[i] = item[k];
		item[k] = t;
	}
	for (i = 0; i < SV_WS_NRUNS + SV_WS_NSINGLE; i++)
		for (k = 0; k < item[i].len; k++)
			s->ws[n++] = item[i].start + (uint32_t)k;
	free(used);
	free(item);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The client                                                          */
/* ------------------------------------------------------------------ */

/*
 * In the forked client: map @len bytes, register them on a userfaultfd of
 * its own, hand it over with the region (Firecracker's handshake, in
 * binary), wait for the go, touch @order, report.
 */
static int fc_handshake(const char *path, const uint64_t region[3], int uffd);

static void client_main(int sock, size_t len, const uint32_t *order, size_t n, const char *path,
			bool huge)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct sv_result res = { 0 };
	char cbuf[CMSG_SPACE(sizeof(int))], go;
	uint64_t region[2], f0, t0;
	struct iovec iov = { region, sizeof(region) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	char *base;
	int uffd;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		    (huge ? MAP_HUGETLB : MAP_NORESERVE), -1, 0);
	if (uffd < 0 || base == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) < 0) {
		res.err = -errno;
		goto report;
	}
	reg.range.start = (unsigned long)base;
	reg.range.len = len;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		res.err = -errno;
		goto report;
	}
	region[0] = (uint64_t)(uintptr_t)base;
	region[1] = len;
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (path) {
		uint64_t r3[3] = { region[0], region[1], 0 };

		/* to a ufault-serve, in Firecracker's JSON */
		if (fc_handshake(path, r3, uffd) < 0 || read(sock, &go, 1) != 1)
			_exit(1);
	} else if (sendmsg(sock, &mh, 0) != (ssize_t)sizeof(region) || read(sock, &go, 1) != 1) {
		_exit(1);
	}
	f0 = self_faults();
	t0 = now_ns();
	res.bad = touch(base, order, n);
	res.ns = now_ns() - t0;
	res.faults = self_faults() - f0;
report:
	if (write(sock, &res, sizeof(res)) != sizeof(res))
		_exit(1);
	_exit(0);
}

enum sv_ws { SV_LAZY, SV_RECORD, SV_PREFETCH, SV_NMODES };
static const char *const sv_ws_names[] = { "lazy", "record", "prefetch" };

/* ------------------------------------------------------------------ */
/* The floor: a minimal handler of the client's userfaultfd            */
/* ------------------------------------------------------------------ */

struct sv_min {
	int uffd, stopfd, datafd;
	uint64_t base, len;
	size_t pg;			/* the page copied: 4 KiB, or 2 MiB */
};

/* poll, read one event, pread its page from the file, UFFDIO_COPY it
 * (with its wake): what any handler of another process must do.  Of
 * @m->pg bytes: a huge page of hugetlbfs memory is copied whole. */
static void *min_handler(void *arg)
{
	struct sv_min *m = arg;
	size_t pg = m->pg;
	char *buf = aligned_alloc(pg, pg);

	for (;;) {
		struct pollfd pfd[2] = { { m->uffd, POLLIN, 0 }, { m->stopfd, POLLIN, 0 } };
		struct uffd_msg msg;
		struct uffdio_copy c;
		uint64_t addr;

		if (poll(pfd, 2, -1) < 0 || pfd[1].revents)
			break;
		if (read(m->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		addr = msg.arg.pagefault.address & ~(pg - 1);
		if (pread(m->datafd, buf, pg, (off_t)(addr - m->base)) != (ssize_t)pg)
			break;
		c = (struct uffdio_copy){ .dst = addr, .src = (uint64_t)(uintptr_t)buf, .len = pg };
		if (ioctl(m->uffd, UFFDIO_COPY, &c) < 0 && errno == EEXIST) {
			/* a pusher's copy (min_ws_run) was first */
			struct uffdio_range w = { .start = addr, .len = pg };

			ioctl(m->uffd, UFFDIO_WAKE, &w);
		}
	}
	free(buf);
	return NULL;
}

/* Copy huge page @h of @m's region in (pread, UFFDIO_COPY, which wakes a
 * fault waiting on it) unless @done says it is there: 0, or -1 (stop). */
static int min_ahead_copy(struct sv_min *m, char *buf, uint8_t *done, uint64_t h)
{
	struct uffdio_copy c = { .dst = m->base + h * m->pg, .src = (uint64_t)(uintptr_t)buf,
				 .len = m->pg };

	if (done[h])
		return 0;
	done[h] = 1;
	if (pread(m->datafd, buf, m->pg, (off_t)(h * m->pg)) != (ssize_t)m->pg)
		return -1;
	return ioctl(m->uffd, UFFDIO_COPY, &c) < 0 && errno != EEXIST ? -1 : 0;
}

/* The minimal run-ahead: from the handshake on, copy the region's huge
 * pages in, in order, each read and copied once; before each, answer the
 * faults waiting (their page first).  The best any server of a cold
 * restore can do with one thread: every page read from the file and
 * copied into the client once, nothing else. */
static void *min_ahead(void *arg)
{
	struct sv_min *m = arg;
	uint64_t n = m->len / m->pg, next = 0;
	uint8_t *done = calloc(n, 1);
	char *buf = aligned_alloc(m->pg, m->pg);

	while (buf && done && next < n) {
		struct uffd_msg msg;

		while (read(m->uffd, &msg, sizeof(msg)) == sizeof(msg))
			if (msg.event == UFFD_EVENT_PAGEFAULT &&
			    min_ahead_copy(m, buf, done, (msg.arg.pagefault.address - m->base) /
							 m->pg) < 0)
				goto out;
		if (min_ahead_copy(m, buf, done, next++) < 0)
			break;
	}
out:
	free(buf);
	free(done);
	return NULL;
}

/* The minimal push of a working set: a thread beside min_handler(). */
struct sv_min_push {
	struct sv_min *m;
	const uint32_t *order;
	size_t n;
	int err;
};

/*
 * The set in recorded order, a contiguous run at a time: one pread of the
 * file and one UFFDIO_COPY into the client (its wake included), a page
 * the client's fault already had skipped (EEXIST): what any server
 * pushing a set into another process must do, and nothing else.
 */
static void *min_push(void *arg)
{
	struct sv_min_push *p = arg;
	char *buf = aligned_alloc(PG, SV_WS_RUN * PG);
	size_t i, j;

	for (i = 0; buf && i < p->n; i = j) {
		uint64_t len, done = 0;

		for (j = i + 1; j < p->n && j - i < SV_WS_RUN && p->order[j] == p->order[j - 1] + 1;
		     j++)
			;
		len = (j - i) * PG;
		if (pread(p->m->datafd, buf, len, (off_t)p->order[i] * PG) != (ssize_t)len) {
			p->err = -EIO;
			break;
		}
		while (done < len) {
			struct uffdio_copy c = { .dst = p->m->base + p->order[i] * PG + done,
						 .src = (uint64_t)(uintptr_t)buf + done,
						 .len = len - done };

			if (ioctl(p->m->uffd, UFFDIO_COPY, &c) == 0)
				break;
			if (errno != EEXIST && errno != EAGAIN) {
				p->err = -errno;
				break;
			}
			/* past what went in, and the page already there */
			done += c.copy > 0 ? (uint64_t)c.copy : 0;
			if (errno == EEXIST)
				done += PG;
		}
	}
	if (!buf)
		p->err = -ENOMEM;
	free(buf);
	return NULL;
}

/*
 * Fork a client that will touch @order (client_main): *@sock is this end
 * of its socket, *@pid the client, which client_end() reaps.  0, or
 * -errno with no client made.
 */
static int client_start(struct sv *s, const uint32_t *order, size_t n, int *sock, pid_t *pid,
			const char *path)
{
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		ret = -errno;
		close(sv[0]);
		close(sv[1]);
		return ret;
	}
	if (*pid == 0) {
		close(sv[0]);
		client_main(sv[1], s->size, order, n, path, s->huge);
	}
	close(sv[1]);
	*sock = sv[0];
	return 0;
}

/* The client's handshake on @sock: its region and its userfaultfd. */
static int client_handshake(int sock, uint64_t region[2], int *uffd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { region, 2 * sizeof(region[0]) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;

	*uffd = -1;
	if (recvmsg(sock, &mh, 0) != (ssize_t)(2 * sizeof(region[0])))
		return -EPROTO;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(uffd, CMSG_DATA(cm), sizeof(int));
	return *uffd < 0 ? -EPROTO : 0;
}

/* Unless @ret: tell the client to go, and read its result into @res;
 * then reap it.  The first error of @ret and these. */
static int client_end(int sock, pid_t pid, int ret, struct sv_result *res)
{
	int st;

	if (!ret && write(sock, "g", 1) != 1)
		ret = -EPIPE;
	if (ret)
		shutdown(sock, SHUT_WR);	/* no go: it exits */
	bool short_read = read(sock, res, sizeof(*res)) != sizeof(*res);

	if (short_read && !ret)
		ret = -EPROTO;
	close(sock);
	if (waitpid(pid, &st, 0) != pid && !ret)
		ret = -ECHILD;
	else if (short_read && ret == -EPROTO)	/* why it gave no result */
		fprintf(stderr, "ufault-bench: the client gave no result: %s %d\n",
			WIFSIGNALED(st) ? "killed by signal" : "exit status",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return ret;
}

/*
 * One client run served by min_handler() in a thread of this process
 * (@fn: or min_ahead()): the kernel's cost of serving another process,
 * with no cache.
 */
static int min_run(struct sv *s, const uint32_t *order, size_t n, struct sv_result *res,
		   void *(*fn)(void *))
{
	uint64_t region[2], one = 1;
	struct sv_min m = { .uffd = -1, .datafd = s->fd, .pg = s->huge ? 2UL << 20 : PG };
	bool started = false;
	pthread_t t;
	int sock, ret;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	ret = client_start(s, order, n, &sock, &pid, NULL);
	if (ret)
		return ret;
	m.stopfd = eventfd(0, EFD_CLOEXEC);
	ret = client_handshake(sock, region, &m.uffd);
	m.base = region[0];
	m.len = region[1];
	if (!ret && m.stopfd < 0)
		ret = -EPROTO;
	if (!ret && pthread_create(&t, NULL, fn ? fn : min_handler, &m))
		ret = -EAGAIN;
	started = !ret;
	ret = client_end(sock, pid, ret, res);
	if (started && write(m.stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(t, NULL);
	if (m.uffd >= 0)
		close(m.uffd);
	if (m.stopfd >= 0)
		close(m.stopfd);
	if (!ret && res->err)
		ret = res->err;
	return !ret && res->bad ? -EIO : ret;
}

/*
 * One client run of the working set @order served by the minimal loops:
 * min_push() pushing the set from when the client is taken (as ufault's
 * push starts with the serve), min_handler() serving its faults meanwhile.
 * The floor of uf_object_serve_prefetch(), in the same run.
 */
static int min_ws_run(struct sv *s, const uint32_t *order, size_t n, struct sv_result *res)
{
	uint64_t region[2], one = 1;
	struct sv_min m = { .uffd = -1, .datafd = s->fd, .pg = PG };
	struct sv_min_push p = { .m = &m, .order = order, .n = n };
	bool started = false, pushing = false;
	pthread_t t, tp;
	int sock, ret;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	ret = client_start(s, order, n, &sock, &pid, NULL);
	if (ret)
		return ret;
	m.stopfd = eventfd(0, EFD_CLOEXEC);
	ret = client_handshake(sock, region, &m.uffd);
	m.base = region[0];
	if (!ret && m.stopfd < 0)
		ret = -EPROTO;
	if (!ret && pthread_create(&t, NULL, min_handler, &m))
		ret = -EAGAIN;
	started = !ret;
	if (!ret && pthread_create(&tp, NULL, min_push, &p))
		ret = -EAGAIN;
	pushing = !ret;
	ret = client_end(sock, pid, ret, res);
	if (pushing)
		pthread_join(tp, NULL);
	if (started && write(m.stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(t, NULL);
	if (m.uffd >= 0)
		close(m.uffd);
	if (m.stopfd >= 0)
		close(m.stopfd);
	if (!ret && p.err && p.err != -ESRCH)
		ret = p.err;
	if (!ret && res->err)
		ret = res->err;
	return !ret && res->bad ? -EIO : ret;
}

/*
 * One client run whose pages are all copied in before it starts: the
 * whole region, read from the file and copied with UFFDIO_COPY by this
 * process in ra_max-sized pieces (no fault left to serve).  Its touches
 * are the floor of any UFFDIO_COPY server: a page copied in ahead, then
 * touched.
 */
static int ahead_run(struct sv *s, const uint32_t *order, size_t n, struct sv_result *res)
{
	size_t chunk = 512 * PG, off;
	uint64_t region[2];
	int sock, uffd = -1, ret;
	char *buf = NULL;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	ret = client_start(s, order, n, &sock, &pid, NULL);
	if (ret)
		return ret;
	ret = client_handshake(sock, region, &uffd);
	if (!ret && !(buf = aligned_alloc(PG, chunk)))
		ret = -ENOMEM;
	for (off = 0; !ret && off < region[1]; off += chunk) {
		size_t len = region[1] - off < chunk ? region[1] - off : chunk;
		struct uffdio_copy c = { .dst = region[0] + off, .src = (uint64_t)(uintptr_t)buf,
					 .len = len };

		if (pread(s->fd, buf, len, (off_t)off) != (ssize_t)len)
			ret = -EIO;
		else if (ioctl(uffd, UFFDIO_COPY, &c) < 0)
			ret = -errno;
	}
	free(buf);
	ret = client_end(sock, pid, ret, res);
	if (uffd >= 0)
		close(uffd);
	if (!ret && res->err)
		ret = res->err;
	return !ret && res->bad ? -EIO : ret;
}

/* Serve started client @sock from @obj (unless @ret), let it touch its
 * order, and reap it.  The first error of @ret and these. */
static int client_serve(struct sv *s, struct uf_object *obj, int sock, pid_t pid, int ret,
			struct sv_result *res)
{
	struct uf_serve_region r;
	uint64_t region[2];
	int uffd;

	if (!ret)
		ret = client_handshake(sock, region, &uffd);
	if (!ret) {
		r = (struct uf_serve_region){ .start = region[0], .len = region[1], .offset = 0 };
		ret = uf_object_serve_uffd_huge(obj, uffd, &r, 1, NULL, s->huge ? 2UL << 20 : PG);
		if (ret)
			close(uffd);
	}
	ret = client_end(sock, pid, ret, res);
	if (!ret && res->err)
		ret = res->err;
	if (!ret && res->bad)
		ret = -EIO;
	return ret;
}

/*
 * One client run: fork the client, serve it from a fresh mm and object
 * (recording or prefetching as @mode says), let it touch @order.  With
 * @warm, then a second client touching it too, served from the same
 * cache (warm now) in @warm.
 */
static int client_run(struct sv *s, const uint32_t *order, size_t n, enum sv_ws mode,
		      struct sv_result *res, struct sv_result *warm)
{
	struct uf_object *obj = NULL;
	struct uf_mm *mm = NULL;
	int sock, sock2 = -1, ret;
	pid_t pid, pid2 = -1;

	memset(res, 0, sizeof(*res));
	/* before the mm: the client is no child of ufault's */
	ret = client_start(s, order, n, &sock, &pid, NULL);
	if (ret)
		return ret;
	if (warm) {
		memset(warm, 0, sizeof(*warm));
		ret = client_start(s, order, n, &sock2, &pid2, NULL);
	}
	if (!ret)
		ret = uf_mm_create(NULL, &mm);
	if (!ret && s->url)
		ret = s->url_packed ? bench_http_open_packed(mm, s->url, &obj)
				    : bench_http_open(mm, s->url, &obj);
	else if (!ret && s->open_packed)
		ret = uf_pack_open(mm, s->open_path, &obj);
	else if (!ret)
		ret = uf_object_open(mm, s->open_path ? s->open_path : s->path, O_RDONLY, &obj);
	if (!ret && mode == SV_RECORD)
		ret = uf_object_serve_record(obj, s->rec);
	if (!ret && mode == SV_PREFETCH)
		ret = uf_object_serve_prefetch(obj, s->rec);
	ret = client_serve(s, obj, sock, pid, ret, res);
	if (warm && sock2 >= 0)
		ret = client_serve(s, obj, sock2, pid2, ret, warm);
	res->svc_us = lat_median_us(mm);
	if (!ret && mode == SV_RECORD) {
		int np = uf_object_record_stop(obj);

		ret = np < 0 ? np : (size_t)np != n ? -EPROTO : 0;
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return ret;
}

/* ------------------------------------------------------------------ */
/* References in this process                                          */
/* ------------------------------------------------------------------ */

/* ufault in this process: a fresh object, mapped, touched in @order. */
static int inproc_run(struct sv *s, const uint32_t *order, size_t n, uint64_t *ns,
		      unsigned int *svc_us)
{
	struct uf_object *obj = NULL;
	struct uf_mm *mm = NULL;
	uint64_t t0, bad = 0;
	char *base = NULL;
	int ret;

	ret = uf_mm_create(NULL, &mm);
	if (!ret)
		ret = uf_object_open(mm, s->path, O_RDONLY, &obj);
	if (!ret)
		ret = uf_mmap(mm, s->size, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&base);
	if (!ret) {
		t0 = now_ns();
		bad = touch(base, order, n);
		*ns = now_ns() - t0;
		*svc_us = lat_median_us(mm);
		uf_munmap(mm, base, s->size);
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return ret ? ret : bad ? -EIO : 0;
}

/* The kernel: a private mapping of the warm tmpfs file, read in order. */
static int kernel_run(struct sv *s, uint64_t *ns)
{
	char *base = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
	uint64_t t0, bad;

	if (base == MAP_FAILED)
		return -errno;
	t0 = now_ns();
	bad = touch(base, s->seq, s->npages);
	*ns = now_ns() - t0;
	munmap(base, s->size);
	return bad ? -EIO : 0;
}

/* ------------------------------------------------------------------ */
/* Rows                                                                */
/* ------------------------------------------------------------------ */

static int row_rand(struct sv *s, bool *miss)
{
	uint64_t serve[SV_MAX_REPEAT], inproc[SV_MAX_REPEAT], floor[SV_MAX_REPEAT], ms, mi, mf;
	uint64_t svc[2][SV_MAX_REPEAT];
	struct sv_result res;
	unsigned int r;
	double paired;
	int ret = 0;

	for (r = 0; r <= s->repeat && !ret; r++) {
		uint64_t ns = 0;
		unsigned int us = 0;

		struct sv_result fl = { 0 };

		ret = client_run(s, s->rand, s->nrand, SV_LAZY, &res, NULL);
		if (!ret)
			ret = inproc_run(s, s->rand, s->nrand, &ns, &us);
		if (!ret)
			ret = min_run(s, s->rand, s->nrand, &fl, NULL);
		if (r) {
			floor[r - 1] = fl.ns;
			serve[r - 1] = res.ns;
			inproc[r - 1] = ns;
			svc[0][r - 1] = res.svc_us;
			svc[1][r - 1] = us;
		}
	}
	if (ret)
		return ret;
	paired = median_ratio(serve, inproc, s->repeat, NULL, NULL);
	ms = median(serve, s->repeat);
	mi = median(inproc, s->repeat);
	mf = median(floor, s->repeat);
	*miss |= !s->quick && paired > 1.1;
	printf("%-20s %9.2f us/page  in-process ufault %9.2f us/page  %6.2fx (goal <= 1.10x) %s"
	       "  [handler median <= %" PRIu64 " / %" PRIu64 " us; a minimal handler of the "
	       "client's uffd: %.2f us/page, serve %.2fx it]\n",
	       "serve-cold-rand", (double)ms / 1e3 / (double)s->nrand,
	       (double)mi / 1e3 / (double)s->nrand, paired,
	       s->quick ? "" : paired > 1.1 ? "MISS" : "PASS",
	       median(svc[0], s->repeat),
	       median(svc[1], s->repeat), (double)mf / 1e3 / (double)s->nrand,
	       (double)ms / (double)mf);
	fflush(stdout);
	return 0;
}

/*
 * Rounds of serve-restore-seq and -warm at least (but with --quick).  The
 * warm and the cold restore both reach the floor here, and the warm
 * median is held to the slowest cold round: of 3 rounds from one and the
 * same distribution that fails 1 time in 5, of 7 rounds 1 in 29.
 */
#define SEQ_ROUNDS	7

/*
 * The warm restore: the second client of one cache, against the floor
 * and the cold restore (the first client) of the same rounds.  Both
 * reach the floor here, where the client's own touches cost the most, so
 * "no slower than cold" is judged against the cold rounds' spread: the
 * warm median over the slowest cold round (@cmax), not over the cold
 * median, a coin toss between two equal costs.
 */
static void row_warm(struct sv *s, unsigned int n, uint64_t mw, uint64_t mf, double wf,
		     uint64_t mc, uint64_t cmax, uint64_t faults, bool *miss)
{
	double np = (double)s->npages;
	bool ok = wf <= 1.1 && mw <= cmax;

	*miss |= !s->quick && !ok;
	printf("%-20s %9.3f us/page  floor      %9.3f us/page  %6.2fx %s %s  [%u rounds; cold "
	       "restore %.3f us/page, its slowest round %.3f; warm/cold %.2fx; client faults %"
	       PRIu64 "]\n",
	       "serve-restore-warm", (double)mw / 1e3 / np, (double)mf / 1e3 / np,
	       wf, s->quick ? "" : "(goal <= 1.10x, and <= cold)",
	       s->quick ? "" : ok ? "PASS" : "MISS", n, (double)mc / 1e3 / np,
	       (double)cmax / 1e3 / np, (double)mw / (double)mc, faults);
	fflush(stdout);
}

static int row_seq(struct sv *s, bool *miss)
{
	uint64_t serve[SV_MAX_REPEAT], kern[SV_MAX_REPEAT], inproc[SV_MAX_REPEAT];
	uint64_t floor[SV_MAX_REPEAT], warmt[SV_MAX_REPEAT], ms, mk, mi, mf;
	uint64_t faults = 0, wfaults = 0, cmax = 0;
	struct sv_result res, warm;
	double wf, sk;
	unsigned int r, n = rounds_at_least(s, SEQ_ROUNDS);
	int ret = 0;

	for (r = 0; r <= n && !ret; r++) {
		uint64_t nk = 0, ni = 0;
		struct sv_result fl = { 0 };
		unsigned int us;

		ret = client_run(s, s->seq, s->npages, SV_LAZY, &res, &warm);
		if (!ret)
			ret = kernel_run(s, &nk);
		if (!ret)
			ret = inproc_run(s, s->seq, s->npages, &ni, &us);
		if (!ret)
			ret = ahead_run(s, s->seq, s->npages, &fl);
		if (r) {
			serve[r - 1] = res.ns;
			kern[r - 1] = nk;
			inproc[r - 1] = ni;
			floor[r - 1] = fl.ns;
			warmt[r - 1] = warm.ns;
			if (res.ns > cmax)
				cmax = res.ns;
			faults = res.faults;
			wfaults = warm.faults;
		}
	}
	if (ret)
		return ret;
	wf = median_ratio(warmt, floor, n, NULL, NULL);
	sk = median_ratio(serve, kern, n, NULL, NULL);
	ms = median(serve, n);
	mk = median(kern, n);
	mi = median(inproc, n);
	mf = median(floor, n);
	*miss |= !s->quick && sk > 1.5;
	printf("%-20s %9.3f us/page  tmpfs warm %9.3f us/page  %6.2fx (goal <= 1.50x) %s"
	       "  [%zu MiB; client faults %" PRIu64 "; in-process ufault cold %.3f us/page; "
	       "floor %.3f us/page (a page copied in ahead, then touched), %.2fx tmpfs, "
	       "serve/floor %.2fx]\n",
	       "serve-restore-seq", (double)ms / 1e3 / (double)s->npages,
	       (double)mk / 1e3 / (double)s->npages, sk,
	       s->quick ? "" : sk > 1.5 ? "MISS" : "PASS", s->size >> 20,
	       faults,
	       (double)mi / 1e3 / (double)s->npages, (double)mf / 1e3 / (double)s->npages,
	       (double)mf / (double)mk, (double)ms / (double)mf);
	fflush(stdout);
	row_warm(s, n, median(warmt, n), mf, wf, ms, cmax, wfaults, miss);
	return 0;
}

static long nr_hugepages(long set)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", set < 0 ? "r" : "w");
	long n = -1;

	if (!f)
		return -1;
	if (set < 0 && fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (set >= 0)
		n = fprintf(f, "%ld\n", set) > 0 ? set : -1;
	if (fclose(f))
		n = -1;
	return n;
}

/* This process's memcpy, in bytes per second: @len bytes, warm, the
 * best of a few copies (what a copy of a huge page can cost at least). */
static double memcpy_bw(size_t len)
{
	char *a = aligned_alloc(2UL << 20, len), *b = aligned_alloc(2UL << 20, len);
	uint64_t best = UINT64_MAX, t0, t;
	int i;

	if (!a || !b) {
		free(a);
		free(b);
		return 0;
	}
	memset(a, 0xa5, len);
	memset(b, 0x5a, len);
	for (i = 0; i < 5; i++) {
		t0 = now_ns();
		memcpy(b, a, len);
		__asm__ __volatile__("" : : "r"(b) : "memory");
		t = now_ns() - t0;
		if (t < best)
			best = t;
	}
	free(a);
	free(b);
	return best ? (double)len * 1e9 / (double)best : 0;
}

/* The rounds of serve-restore-huge, each variant's median into @m. */
enum sv_huge { HG_SERVE, HG_FLOOR, HG_MIN, HG_AHEAD, HG_N };

/* Rounds of serve-restore-huge at least (but with --quick): a round is
 * four runs of 64 MiB, a fraction of a second, and the machine's drift
 * moved one server's round from 1.3 to 2.2 us a page within a run. */
#define HG_ROUNDS	9

/* This process's CPU time so far (all its threads), in nanoseconds. */
static uint64_t self_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
}

/* @n rounds; @m: each variant's median time; @cpu: the CPU time this
 * process (the server) spent on it, median. */
static int huge_rounds(struct sv *s, unsigned int n, uint64_t m[HG_N], uint64_t cpu[HG_N],
		       uint64_t *faults, double *paired)
{
	uint64_t t[HG_N][SV_MAX_REPEAT], c[HG_N][SV_MAX_REPEAT], best[SV_MAX_REPEAT];
	unsigned int r, k;
	int ret = 0;

	for (r = 0; r <= n && !ret; r++) {
		for (k = 0; k < HG_N && !ret; k++) {
			struct sv_result res = { 0 };
			uint64_t c0 = self_cpu_ns();

			if (k == HG_SERVE)
				ret = client_run(s, s->seq, s->npages, SV_LAZY, &res, NULL);
			else if (k == HG_FLOOR)
				ret = ahead_run(s, s->seq, s->npages, &res);
			else
				ret = min_run(s, s->seq, s->npages, &res,
					      k == HG_MIN ? NULL : min_ahead);
			if (r) {
				t[k][r - 1] = res.ns;
				c[k][r - 1] = self_cpu_ns() - c0;
			}
			if (r && k == HG_SERVE)
				*faults = res.faults;
		}
	}
	/* each round's serve over that round's better minimal server */
	for (r = 0; !ret && r < n; r++)
		best[r] = t[HG_MIN][r] < t[HG_AHEAD][r] ? t[HG_MIN][r] : t[HG_AHEAD][r];
	if (!ret)
		*paired = median_ratio(t[HG_SERVE], best, n, NULL, NULL);
	for (k = 0; !ret && k < HG_N; k++) {
		m[k] = median(t[k], n);
		cpu[k] = median(c[k], n);
	}
	return ret;
}

/*
 * serve-restore-huge: the restore of serve-restore-seq, SV_HUGE bytes of
 * hugetlbfs memory (2 MiB pages from a pool this row fills and gives
 * back), cold, against the best a server of a cold restore can do: the
 * better of a minimal handler of 2 MiB faults and a minimal run-ahead
 * (min_ahead), in the same rounds.  Beside them the touch-only floor
 * (its huge pages all copied in before the client starts), out of reach
 * for a cold restore: there each page is read from the file and copied
 * into the client, two copies of its bytes that the floor's touches
 * never wait for; the row prints what those copies cost at this
 * process's memcpy bandwidth.
 */
static int row_huge(struct sv *s, bool *miss)
{
	size_t size = s->size, npages = s->npages;
	unsigned int rounds = rounds_at_least(s, HG_ROUNDS);
	long old = nr_hugepages(-1), need = (long)(SV_HUGE >> 21);
	double np = (double)(SV_HUGE / PG), bw, best, paired = 0;
	uint64_t m[HG_N], cpu[HG_N], faults = 0;
	int ret;

	if (old < 0 || nr_hugepages(old + need) < 0 || nr_hugepages(-1) < old + need) {
		if (old >= 0)
			nr_hugepages(old);
		printf("%-20s skipped: no %ld huge pages of 2 MiB to be had here\n",
		       "serve-restore-huge", need);
		return 0;
	}
	s->huge = true;
	s->size = SV_HUGE < size ? SV_HUGE : size;
	s->npages = s->size / PG;
	ret = huge_rounds(s, rounds, m, cpu, &faults, &paired);
	s->huge = false;
	s->size = size;
	s->npages = npages;
	nr_hugepages(old);
	if (ret)
		return ret;
	bw = memcpy_bw(SV_HUGE);
	best = (double)(m[HG_MIN] < m[HG_AHEAD] ? m[HG_MIN] : m[HG_AHEAD]);
	*miss |= !s->quick && paired > 1.1;
	printf("%-20s %9.3f us/page  minimal   %9.3f us/page  %6.2fx %s %s  [median of %u "
	       "rounds' ratios; %zu MiB of 2 MiB "
	       "pages, cold; client faults %" PRIu64 "; minimal: the better of a handler of 2 MiB "
	       "faults (%.3f us/page) and a run-ahead from the handshake (%.3f us/page); "
	       "touch-only floor %.3f us/page (its huge pages copied in before it starts), serve "
	       "%.2fx it, out of reach cold: memcpy %.1f GB/s, the 2 copies of a page's 4096 bytes "
	       "(file to buffer, buffer to client) %.3f us/page; server CPU per page: serve %.3f "
	       "us, minimal handler %.3f us, run-ahead %.3f us]\n", "serve-restore-huge",
	       (double)m[HG_SERVE] / 1e3 / np, best / 1e3 / np, paired,
	       s->quick ? "" : "(goal <= 1.10x)",
	       s->quick ? "" : paired > 1.1 ? "MISS" : "PASS", rounds,
	       (size_t)(SV_HUGE >> 20), faults, (double)m[HG_MIN] / 1e3 / np,
	       (double)m[HG_AHEAD] / 1e3 / np, (double)m[HG_FLOOR] / 1e3 / np,
	       (double)m[HG_SERVE] / (double)m[HG_FLOOR], bw / 1e9,
	       bw > 0 ? 2.0 * PG / bw * 1e6 : 0.0, (double)cpu[HG_SERVE] / 1e3 / np,
	       (double)cpu[HG_MIN] / 1e3 / np, (double)cpu[HG_AHEAD] / 1e3 / np);
	fflush(stdout);
	return 0;
}

static int row_ws(struct sv *s)
{
	uint64_t t[SV_NMODES][SV_MAX_REPEAT], m[SV_NMODES], faults[SV_NMODES] = { 0 };
	uint64_t tmin[SV_MAX_REPEAT], mmin, fmin = 0;
	struct stat st;
	unsigned int r, k;
	int ret = 0, fd;

	snprintf(s->rec, sizeof(s->rec), "/tmp/ufault-bench-serve-ws.XXXXXX");
	fd = mkstemp(s->rec);
	if (fd < 0)
		return -errno;
	close(fd);
	/* round 0: warm-up, and the first record */
	for (r = 0; r <= s->repeat && !ret; r++)
		for (k = 0; k < SV_NMODES && !ret; k++) {
			struct sv_result res;

			ret = client_run(s, s->ws, SV_WS_SET, (enum sv_ws)k, &res, NULL);
			if (ret)
				fprintf(stderr, "ufault-bench: serve-ws %s: %s\n", sv_ws_names[k],
					strerror(-ret));
			if (r) {
				t[k][r - 1] = res.ns;
				faults[k] = res.faults;
			}
			if (!ret && k == SV_PREFETCH) {
				/* the minimal loop, beside the prefetch */
				ret = min_ws_run(s, s->ws, SV_WS_SET, &res);
				if (ret)
					fprintf(stderr, "ufault-bench: serve-ws minimal loop: %s\n",
						strerror(-ret));
				if (r) {
					tmin[r - 1] = res.ns;
					fmin = res.faults;
				}
			}
		}
	if (!ret) {
		double lo, hi, paired = median_ratio(tmin, t[SV_PREFETCH], s->repeat, &lo, &hi);

		for (k = 0; k < SV_NMODES; k++)
			m[k] = median(t[k], s->repeat);
		mmin = median(tmin, s->repeat);
		printf("%-20s lazy %9.0f us  record %9.0f us  prefetch %9.0f us  %6.2fx faster "
		       "(info); record %.2fx lazy; client faults %" PRIu64 " / %" PRIu64 " / %" PRIu64
		       "; record %ld bytes\n", "serve-ws", (double)m[SV_LAZY] / 1e3,
		       (double)m[SV_RECORD] / 1e3, (double)m[SV_PREFETCH] / 1e3,
		       (double)m[SV_LAZY] / (double)m[SV_PREFETCH],
		       (double)m[SV_RECORD] / (double)m[SV_LAZY], faults[SV_LAZY],
		       faults[SV_RECORD], faults[SV_PREFETCH],
		       stat(s->rec, &st) == 0 ? (long)st.st_size : -1L);
		printf("%-20s minimal loop %9.0f us, client faults %" PRIu64 "; ufault's prefetch "
		       "over the minimal loop's (minimal/prefetch, median of the rounds') %.2fx %s  "
		       "[rounds %.2f-%.2f; minimal loop: a thread pushing each recorded run with "
		       "pread + UFFDIO_COPY, a minimal handler beside it, in each round right after "
		       "the prefetch]\n", "serve-ws-min", (double)mmin / 1e3, fmin, paired,
		       s->quick ? "" : paired < 0.9 ? "(>= 0.9) MISS" : "(>= 0.9) PASS", lo, hi);
		fflush(stdout);
	}
	unlink(s->rec);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Beside a hostile tenant: a ufault-serve process of its own          */
/* ------------------------------------------------------------------ */

#define FLOOD_UID	65534
#define FLOOD_IDLE	256	/* connections the idle flooder tries to hold */

/* Connect to the Unix socket @path: the fd, or -1. */
static int unix_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Firecracker's handshake for @region (address, length, offset in the
 * data) with @uffd to the server at @path: the connection (kept open, as
 * Firecracker does), or -1. */
static int fc_handshake(const char *path, const uint64_t region[3], int uffd)
{
	char json[256], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { json, 0 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = unix_connect(path);

	if (fd < 0)
		return -1;
	iov.iov_len = (size_t)snprintf(json, sizeof(json),
				       "[{\"base_host_virt_addr\":%" PRIu64 ",\"size\":%" PRIu64
				       ",\"offset\":%" PRIu64 ",\"page_size\":4096}]", region[0],
				       region[1], region[2]);
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)iov.iov_len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A ufault-serve process serving the data file, and its supervisor. */
struct sv_srv {
	pid_t pid, super;
	char dir[64], sock[128], log[128];
};

/* Start build/ufault-serve (beside this program) on a socket of its own
 * and wait until it serves: 0, or -errno. */
static int srv_start(struct sv *s, struct sv_srv *v)
{
	char bin[PATH_MAX], src[64], buf[8192], *p;
	ssize_t n = readlink("/proc/self/exe", bin, sizeof(bin) - 32);
	int i, fd;

	if (n <= 0)
		return -ENOENT;
	bin[n] = '\0';
	p = strrchr(bin, '/');
	strcpy(p ? p + 1 : bin, "ufault-serve");
	if (access(bin, X_OK))
		return -ENOENT;
	memset(v, 0, sizeof(*v));
	snprintf(v->dir, sizeof(v->dir), "/tmp/ufault-bench-flood-XXXXXX");
	if (!mkdtemp(v->dir) || chmod(v->dir, 0711))
		return -errno;
	snprintf(v->sock, sizeof(v->sock), "%s/sock", v->dir);
	snprintf(v->log, sizeof(v->log), "%s/log", v->dir);
	snprintf(src, sizeof(src), "/proc/%d/fd/%d", (int)getpid(), s->fd);
	fflush(NULL);
	v->pid = fork();
	if (v->pid < 0)
		return -errno;
	if (v->pid == 0) {
		char uid[16];

		snprintf(uid, sizeof(uid), "%d", FLOOD_UID);
		fd = open(v->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execl(bin, bin, "--threads", "2", "--allow-uid", uid, "--max-per-uid", "64",
		      "--handshake-timeout", "1", "--orphan-timeout", "0", v->sock, src, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 5000; i++) {
		fd = open(v->log, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if ((p = strstr(buf, "supervisor pid ")) && strstr(buf, "serving ")) {
			v->super = (pid_t)atoi(p + 15);
			return 0;
		}
		if (waitpid(v->pid, NULL, WNOHANG) == v->pid) {
			/* what it said last, to tell why */
			char *last = n > 1 ? memrchr(buf, '\n', (size_t)n - 1) : NULL;

			fprintf(stderr, "ufault-bench: ufault-serve exited at its start: %s",
				last ? last + 1 : n > 0 ? buf : "(nothing logged)\n");
			v->pid = 0;
			return -EPROTO;
		}
		usleep(2000);
	}
	return -ETIMEDOUT;
}

static void srv_stop(struct sv_srv *v)
{
	char ctl[160];

	if (v->pid > 0) {
		kill(v->pid, SIGKILL);
		waitpid(v->pid, NULL, 0);
	}
	if (v->super > 0)
		kill(v->super, SIGKILL);	/* (not a child of ours: double-forked) */
	snprintf(ctl, sizeof(ctl), "%s.ctl", v->sock);
	unlink(ctl);
	unlink(v->sock);
	unlink(v->log);
	rmdir(v->dir);
}

/* In a child: become the other tenant, in a process group of its own
 * (its VMMs with it: flood_run() kills the group). */
static void flood_become(void)
{
	setpgid(0, 0);
	if (setgroups(0, NULL) || setgid(FLOOD_UID) || setuid(FLOOD_UID))
		_exit(2);
	/* (after setuid, which clears both) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_DUMPABLE, 1);
}

/* The idle flood: hold as many connections as the server lets it, each
 * sending nothing; one closed (refused, timed out) is made again. */
static void __attribute__((noreturn)) flood_idle(const char *path)
{
	struct pollfd pfd[FLOOD_IDLE];
	int i;

	flood_become();
	for (i = 0; i < FLOOD_IDLE; i++)
		pfd[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	for (;;) {
		for (i = 0; i < FLOOD_IDLE; i++)
			if (pfd[i].fd < 0)
				pfd[i].fd = unix_connect(path);
		if (poll(pfd, FLOOD_IDLE, 100) < 0)
			continue;
		for (i = 0; i < FLOOD_IDLE; i++)
			if (pfd[i].fd >= 0 && pfd[i].revents) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
	}
}

/* The fault flood: VMMs of the other tenant, one after another, each
 * touching every page of the data from @off on (user-mode-only
 * userfaultfds: no privilege needed).  (Past the client's pages: the
 * flood does not warm the cache for it.) */
static void __attribute__((noreturn)) flood_faults(const char *path, size_t off, size_t len)
{
	flood_become();
	for (;;) {
		pid_t pid = fork();

		if (pid == 0) {
			struct uffdio_api api = { .api = UFFD_API };
			struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
			int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
			char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			uint64_t region[3] = { (uint64_t)(uintptr_t)base, len, off };
			size_t i;

			reg.range = (struct uffdio_range){ region[0], len };
			if (uffd < 0 || base == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) ||
			    ioctl(uffd, UFFDIO_REGISTER, &reg) || fc_handshake(path, region, uffd) < 0)
				_exit(1);
			for (i = 0; i < len; i += PG)
				(void)*(const volatile char *)(base + i);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			usleep(10000);
	}
}

/* The machine's share, for reference: the other tenant burning a CPU
 * and doing nothing with the server. */
static void __attribute__((noreturn)) flood_cpu(void)
{
	volatile uint64_t x = 0;

	flood_become();
	for (;;)
		x++;
}

/* The protocol of ufault clients (src/as/attach_proto.h), as an attacker
 * speaks it: a connection of its own, no libufault. */
struct fl_req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};

struct fl_rep {
	int64_t ret;
	uint64_t pad;
};

enum { FL_ATT_UFFD = 1, FL_ATT_MAP };
#define FL_ATT_SHARED	0x100
#define FL_ATT_MAPS	4096	/* a client's table (uf_object_attach(3)) */

/* Send @r to the attach server on @s, with @fd as SCM_RIGHTS when it is
 * >= 0, and read its answer: the answer's ret, or -EPIPE. */
static int64_t fl_call(int s, const struct fl_req *r, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)r, sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	struct fl_rep p;

	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(*r) ||
	    recv(s, &p, sizeof(p), MSG_WAITALL) != (ssize_t)sizeof(p))
		return -EPIPE;
	return p.ret;
}

/* Attach to the server at @path O_RDWR, by hand, and hand it a
 * user-mode-only userfaultfd with @features: the connection, or -1;
 * *@memfd the cache's fd it sent, *@uffd the userfaultfd. */
static int fl_attach(const char *path, uint64_t features, int *memfd, int *uffd)
{
	struct { char magic[8]; uint8_t version, pad[3]; uint32_t oflags; } h = {
		.magic = "UFATTACH", .version = 1, .oflags = O_RDWR };
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	char ans[24], cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { ans, sizeof(ans) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct fl_req r = { .op = FL_ATT_UFFD };
	struct cmsghdr *cm;
	int s = unix_connect(path);

	*memfd = *uffd = -1;
	if (s < 0)
		return -1;
	if (write(s, &h, sizeof(h)) != (ssize_t)sizeof(h) ||
	    recvmsg(s, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(ans))
		goto fail;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(memfd, CMSG_DATA(cm), sizeof(int));
	*uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
	if (*memfd < 0 || *uffd < 0 || ioctl(*uffd, UFFDIO_API, &api) ||
	    fl_call(s, &r, *uffd) != 0)
		goto fail;
	return s;
fail:
	close(s);
	return -1;
}

static sigjmp_buf fl_jmp;

static void fl_sigbus(int sig)
{
	(void)sig;
	siglongjmp(fl_jmp, 1);
}

/* One lying client: it maps pages [@first, @npages - 1) of the cache and
 * tells the server it maps [@first + 1, @npages), then reads its pages at
 * random: each fault fills the page after the one it maps, the fault
 * repeats and ends in SIGBUS (after 8: as_unresolved()), which it
 * catches, and goes on to another page; @tries of them, then it exits
 * (and its connection with it).  (The server ends the connection at the
 * first lie and bans the uid a while: the other pages are poisoned, and
 * the next liar is refused till the ban ends.) */
static void __attribute__((noreturn)) flood_liar(const char *path, size_t first,
						 size_t npages, unsigned int tries)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct sigaction sa = { .sa_handler = fl_sigbus };
	size_t len = (npages - 1 - first) * PG;
	volatile unsigned int i = 0;
	struct fl_req r;
	int memfd, uffd, s;
	uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL;
	char *p;

	/* refused (its uid banned for a lie: uf_object_serve_ban(3)), it
	 * asks again at once, from this process, as a flooder would */
	while ((s = fl_attach(path, UFFD_FEATURE_MISSING_SHMEM, &memfd, &uffd)) < 0) {
		if (memfd >= 0)
			close(memfd);
		if (uffd >= 0)
			close(uffd);
	}
	if (len == 0)
		_exit(1);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, memfd, (off_t)(first * PG));
	reg.range = (struct uffdio_range){ (uint64_t)(uintptr_t)p, len };
	if (p == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg))
		_exit(1);
	r = (struct fl_req){ .op = FL_ATT_MAP, .a = (uintptr_t)p, .b = len, .c = first + 1,
			     .d = PROT_READ | FL_ATT_SHARED };
	if (fl_call(s, &r, -1) != 0)
		_exit(1);
	sigaction(SIGBUS, &sa, NULL);
	sigsetjmp(fl_jmp, 1);
	while (i++ < tries) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		(void)*(const volatile char *)(p + (x >> 33) % (len / PG) * PG);
	}
	_exit(0);
}

/* The lying-offsets flood: lying clients of the other tenant, one after
 * another, over the pages from @first on (past the client's). */
static void __attribute__((noreturn)) flood_lies(const char *path, size_t first, size_t npages)
{
	flood_become();
	for (;;) {
		pid_t pid = fork();

		if (pid == 0)
			flood_liar(path, first, npages, 64);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			usleep(10000);
	}
}

/* The mapping flood: a client of the other tenant telling the server as
 * many mappings (none of them real) as its table takes, until -ENOMEM,
 * then attaching again and again. */
static void __attribute__((noreturn)) flood_maps(const char *path)
{
	flood_become();
	for (;;) {
		int memfd, uffd, s = fl_attach(path, 0, &memfd, &uffd);
		struct fl_req r;
		uint64_t i;

		for (i = 0; s >= 0 && i <= FL_ATT_MAPS; i++) {
			r = (struct fl_req){ .op = FL_ATT_MAP, .a = 0x100000000ULL + i * 2 * PG,
					     .b = PG, .d = PROT_READ };
			if (fl_call(s, &r, -1) != 0)
				break;
		}
		if (s < 0)
			usleep(10000);
		else
			close(s);
		if (memfd >= 0)
			close(memfd);
		if (uffd >= 0)
			close(uffd);
	}
}

enum sv_flood { FL_ALONE, FL_IDLE, FL_FAULTS, FL_LIES, FL_MAPS, FL_CPU, FL_N };

/* The client's touches of @order (@n pages, all below page @n: its cold
 * random faults, or its cold restore) from a fresh ufault-serve, beside
 * @flood (for 1 s before it starts, and while it runs: a flood has run a
 * while when a restore begins, and ufault-serve judges shares over seconds). */
static int flood_run(struct sv *s, enum sv_flood flood, const uint32_t *order, size_t n,
		     struct sv_result *res)
{
	struct sv_srv v;
	pid_t fl = 0, pid;
	int sock, ret;

	memset(res, 0, sizeof(*res));
	ret = srv_start(s, &v);
	if (!ret && flood != FL_ALONE) {
		fflush(NULL);
		fl = fork();
		if (fl == 0) {
			if (flood == FL_IDLE)
				flood_idle(v.sock);
			if (flood == FL_CPU)
				flood_cpu();
			if (flood == FL_LIES)
				flood_lies(v.sock, n, s->size / PG);
			if (flood == FL_MAPS)
				flood_maps(v.sock);
			flood_faults(v.sock, n * PG, s->size - n * PG);
		}
		if (fl < 0) {
			ret = -errno;
		} else {
			setpgid(fl, fl);	/* (it does too: whichever is first) */
			usleep(1000000);
		}
	}
	if (!ret)
		ret = client_start(s, order, n, &sock, &pid, v.sock);
	if (!ret)
		ret = client_end(sock, pid, 0, res);
	if (!ret && res->err)
		ret = res->err;
	if (!ret && res->bad)
		ret = -EIO;
	if (fl > 0) {
		kill(-fl, SIGKILL);	/* the flooder and its VMMs */
		kill(fl, SIGKILL);
		waitpid(fl, NULL, 0);
	}
	srv_stop(&v);
	return ret;
}

/* serve-flood (@restore false: the client's cold random faults) and
 * serve-flood-restore (its cold restore of the first quarter of the
 * data, in order, as a VMM's). */
static int row_flood(struct sv *s, bool restore, bool *miss)
{
	static const char *const names[FL_N] = { "alone", "idle flood", "fault flood",
						 "lying offsets", "mapping flood", "CPU burner" };
	const char *row = restore ? "serve-flood-restore" : "serve-flood";
	const uint32_t *order = restore ? s->seq : s->rand;
	size_t n = restore ? s->npages / 4 : s->nrand;
	uint64_t t[FL_N][SV_MAX_REPEAT], m[FL_N];
	double x[FL_N], goal;
	char verdict[32];
	unsigned int r, k;
	bool bad = false;
	int ret = 0;

	if (geteuid() != 0) {
		printf("%-20s skipped: the flooder is another uid (run as root)\n", row);
		return 0;
	}
	for (r = 0; r <= s->repeat && !ret; r++)
		for (k = 0; k < FL_N && !ret; k++) {
			struct sv_result res;

			ret = flood_run(s, (enum sv_flood)k, order, n, &res);
			if (ret)
				fprintf(stderr, "ufault-bench: %s %s: %s\n", row, names[k],
					strerror(-ret));
			if (r)
				t[k][r - 1] = res.ns;
		}
	if (ret == -ENOENT) {
		printf("%-20s skipped: no ufault-serve beside this program\n", row);
		return 0;
	}
	if (ret)
		return ret;
	/* each round's flood beside that round's client alone */
	for (k = 0; k < FL_N; k++)
		x[k] = median_ratio(t[FL_ALONE], t[k], s->repeat, NULL, NULL);
	for (k = 0; k < FL_N; k++)
		m[k] = median(t[k], s->repeat);
	/* 0.7x, or where a process of that uid burning a CPU (no goal: for
	 * reference) costs the client more, what it leaves: no server gives
	 * back what the scheduler gives another process on 2 CPUs */
	goal = x[FL_CPU] < 0.7 ? x[FL_CPU] : 0.7;
	for (k = 0; k < FL_N; k++)
		bad |= k != FL_ALONE && k != FL_CPU && x[k] < goal;
	snprintf(verdict, sizeof(verdict), "(goal >= %.2fx)", goal);
	*miss |= !s->quick && bad;
	printf("%-20s alone %9.2f us/page; beside an idle flood %5.2fx, a fault flood %5.2fx, "
	       "lying offsets %5.2fx, a mapping flood %5.2fx %s %s  [%s of %zu pages; a fresh "
	       "ufault-serve each run; the flooder is uid %d, --max-per-uid 64, "
	       "--handshake-timeout 1; for reference, beside a process of that uid burning a "
	       "CPU and nothing else: %.2fx; the goal: 0.70x, or that where lower]\n", row,
	       (double)m[FL_ALONE] / 1e3 / (double)n, x[FL_IDLE], x[FL_FAULTS], x[FL_LIES], x[FL_MAPS],
	       s->quick ? "" : verdict, s->quick ? "" : bad ? "MISS" : "PASS",
	       restore ? "cold restore" : "cold random faults", n, FLOOD_UID, x[FL_CPU]);
	fflush(stdout);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Packed snapshots                                                    */
/* ------------------------------------------------------------------ */

struct sv_packed {
	int dfd, pfd;			/* the plain data, its packed form (unlinked) */
	char dpath[64], ppath[64];	/* /proc/self/fd/N */
	struct uf_pack_write_stats st;
};

/* Page @p: its tag, then text-like words, or zeros, in runs of 1-8 pages. */
static void mixed_page(char *buf, uint64_t p)
{
	static const char *const words[] = {
		"the", "page", "fault", "handler", "reads", "a", "frame", "from", "store",
		"and", "copies", "into", "cache", "kernel", "memory", "of", "snapshot",
		"restore", "guest", "virtual", "struct", "return", "int", "static", "void",
		"const", "unsigned", "char", "if", "for", "while", "NULL", "errno", "size_t",
	};
	uint64_t r = p / 8, w = p + 1, h = splitmix64(&r);
	size_t i = 8;

	memset(buf, 0, PG);
	*(uint64_t *)(void *)buf = page_tag(p);
	if ((h ^ (p % 8 < (h >> 8) % 8)) & 1)
		return;
	while (i < PG) {
		const char *word = words[splitmix64(&w) % (sizeof(words) / sizeof(words[0]))];

		for (; *word && i < PG; word++)
			buf[i++] = *word;
		if (i < PG)
			buf[i++] = splitmix64(&w) % 9 ? ' ' : '\n';
	}
}

/* The mixed data file in @dir, and its packed form. */
static int packed_create(struct sv *s, struct sv_packed *pk, const char *dir)
{
	char tmpl[PATH_MAX], *buf = aligned_alloc(PG, PG);
	int ret = buf ? 0 : -ENOMEM;
	size_t p;

	pk->dfd = pk->pfd = -1;
	for (int i = 0; i < 2 && !ret; i++) {
		int *fd = i ? &pk->pfd : &pk->dfd;

		snprintf(tmpl, sizeof(tmpl), "%s/ufault-bench-pack.XXXXXX", dir);
		*fd = mkostemp(tmpl, O_CLOEXEC);
		if (*fd < 0)
			ret = -errno;
		else
			unlink(tmpl);
	}
	for (p = 0; !ret && p < s->npages; p++) {
		mixed_page(buf, p);
		if (pwrite(pk->dfd, buf, PG, (off_t)(p * PG)) != (ssize_t)PG)
			ret = errno ? -errno : -EIO;
	}
	free(buf);
	if (!ret)
		ret = uf_pack_write(pk->dfd, pk->pfd, NULL, &pk->st);
	snprintf(pk->dpath, sizeof(pk->dpath), "/proc/self/fd/%d", pk->dfd);
	snprintf(pk->ppath, sizeof(pk->ppath), "/proc/self/fd/%d", pk->pfd);
	return ret;
}

/* One client run on the mixed data: plain (@packed false) or packed. */
static int packed_run(struct sv *s, const struct sv_packed *pk, bool packed,
		      const uint32_t *order, size_t n, uint64_t *ns)
{
	struct sv_result res;
	int ret;

	s->open_path = packed ? pk->ppath : pk->dpath;
	s->open_packed = packed;
	ret = client_run(s, order, n, SV_LAZY, &res, NULL);
	s->open_path = NULL;
	s->open_packed = false;
	*ns = res.ns;
	return ret;
}

static int row_packed(struct sv *s, const char *dir)
{
	uint64_t t[4][SV_MAX_REPEAT], m[4];
	struct sv_packed pk;
	unsigned int r, k;
	int ret = packed_create(s, &pk, dir);

	if (ret == -ENOTSUP) {
		printf("%-20s skipped: built without libzstd (no packed snapshots)\n",
		       "serve-restore-packed");
		ret = 0;
		goto out;
	}
	for (r = 0; r <= s->repeat && !ret; r++) {
		for (k = 0; k < 4 && !ret; k++) {
			uint64_t ns = 0;

			ret = k < 2 ? packed_run(s, &pk, k == 1, s->seq, s->npages, &ns) :
				      packed_run(s, &pk, k == 3, s->rand, s->nrand, &ns);
			if (r)
				t[k][r - 1] = ns;
		}
	}
	if (ret)
		goto out;
	for (k = 0; k < 4; k++)
		m[k] = median(t[k], s->repeat);
	printf("%-20s %9.3f us/page  plain file %9.3f us/page  %6.2fx (info)  [%zu MiB, half "
	       "text-like, half zero-filled pages: packed to %.1f%% (%" PRIu64 " bytes, %" PRIu64
	       " frames); cold random faults: packed %.2f us/page, plain %.2f us/page, %.2fx]\n",
	       "serve-restore-packed", (double)m[1] / 1e3 / (double)s->npages,
	       (double)m[0] / 1e3 / (double)s->npages, (double)m[1] / (double)m[0], s->size >> 20,
	       100.0 * (double)pk.st.packed_size / (double)pk.st.size, pk.st.packed_size,
	       pk.st.frames, (double)m[3] / 1e3 / (double)s->nrand,
	       (double)m[2] / 1e3 / (double)s->nrand, (double)m[3] / (double)m[2]);
	fflush(stdout);
out:
	if (pk.dfd >= 0)
		close(pk.dfd);
	if (pk.pfd >= 0)
		close(pk.pfd);
	return ret;
}

/* A copy of the data as @dir/data, for nginx to serve, and its packed
 * form as @dir/data.pack (*@packed false: none, built without libzstd). */
static int data_copy(struct sv *s, const char *dir, bool *packed)
{
	char path[PATH_MAX + 16];
	loff_t in = 0;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (!ret && (size_t)in < s->size) {
		ssize_t n = copy_file_range(s->fd, &in, fd, NULL, s->size - (size_t)in, 0);

		if (n <= 0)
			ret = n < 0 ? -errno : -EIO;
	}
	close(fd);
	if (ret)
		return ret;
	/* and its packed form, @dir/data.pack (none without libzstd) */
	snprintf(path, sizeof(path), "%s/data.pack", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = lseek(s->fd, 0, SEEK_SET) ? -errno : uf_pack_write(s->fd, fd, NULL, &s->http_pack);
	close(fd);
	*packed = !ret;
	if (ret == -ENOTSUP) {
		unlink(path);
		ret = 0;
	}
	return ret;
}

/* The restore of row_seq() served from loopback nginx, beside the same
 * from the tmpfs file, interleaved. */
static int row_http(struct sv *s, const char *tmpfs, bool *miss)
{
	uint64_t t[3][SV_MAX_REPEAT] = { { 0 } }, m[3], faults = 0;
	char dir[PATH_MAX], base[128], url[2][256], why[256] = "", cmd[PATH_MAX + 16];
	struct sv_result res;
	bool packed = false;
	unsigned int r, k;
	int ret;

	snprintf(dir, sizeof(dir), "%s/ufault-bench-http.XXXXXX", tmpfs);
	if (!mkdtemp(dir))
		return -errno;
	ret = data_copy(s, dir, &packed);
	if (!ret && bench_http_start(dir, base, sizeof(base), why, sizeof(why))) {
		printf("%-20s skipped: %s\n", "serve-restore-http", why);
		goto out;
	}
	snprintf(url[0], sizeof(url[0]), "%s/data", base);
	snprintf(url[1], sizeof(url[1]), "%s/data.pack", base);
	/* the file, the URL, the packed URL, interleaved */
	for (r = 0; r <= s->repeat && !ret; r++) {
		for (k = 0; k < (packed ? 3u : 2u) && !ret; k++) {
			s->url = k ? url[k - 1] : NULL;
			s->url_packed = k == 2;
			ret = client_run(s, s->seq, s->npages, SV_LAZY, &res, NULL);
			if (r)
				t[k][r - 1] = res.ns;
			if (k == 1)
				faults = res.faults;
		}
		s->url = NULL;
		s->url_packed = false;
	}
	bench_http_stop();
	if (ret)
		goto out;
	for (k = 0; k < 3; k++)
		m[k] = median(t[k], s->repeat);
	*miss |= (double)m[1] / (double)m[0] > 2.0;
	printf("%-20s %9.3f us/page  tmpfs file %9.3f us/page  %6.2fx (goal <= 2.00x) %s"
	       "  [%zu MiB from nginx on 127.0.0.1 (range GETs, kept-alive); client faults %"
	       PRIu64 "; ", "serve-restore-http", (double)m[1] / 1e3 / (double)s->npages,
	       (double)m[0] / 1e3 / (double)s->npages, (double)m[1] / (double)m[0],
	       (double)m[1] / (double)m[0] > 2.0 ? "MISS" : "PASS", s->size >> 20, faults);
	if (packed)
		printf("packed (%.1f%%) from nginx %.3f us/page, %.2fx the file]\n",
		       100.0 * (double)s->http_pack.packed_size / (double)s->size,
		       (double)m[2] / 1e3 / (double)s->npages, (double)m[2] / (double)m[0]);
	else
		printf("packed: built without libzstd]\n");
	fflush(stdout);
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
		/* (a temporary directory left behind) */
	}
	return ret;
}

int bench_serve_main(const struct bench_serve_opts *o)
{
	struct sv s = { .fd = -1 };
	bool miss = false;
	int ret, fd;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fprintf(stderr, "ufault-bench: serve: no userfaultfd here: %s\n", strerror(errno));
		return EXIT_SKIP;
	}
	close(fd);
	s.quick = o->quick;
	s.size = o->quick ? 64UL << 20 : SV_SIZE;
	s.npages = s.size / PG;
	s.nrand = o->quick ? 1024 : SV_RAND;
	s.repeat = o->repeat ? o->repeat : o->quick ? 1 : 3;
	if (s.repeat > SV_MAX_REPEAT)
		s.repeat = SV_MAX_REPEAT;
	ret = data_create(&s, o->tmpfs_dir ? o->tmpfs_dir : "/dev/shm");
	if (!ret)
		ret = orders_make(&s);
	if (ret) {
		fprintf(stderr, "ufault-bench: serve: %s\n", strerror(-ret));
		return EXIT_ERR;
	}
	printf("ufault-bench: serve: a Firecracker-style client (forked, anonymous memory, its "
	       "own userfaultfd) served by uf_object_serve_uffd from a fresh mm and object over "
	       "a %zu MiB tmpfs file; median of %u after a warm-up round\n", s.size >> 20,
	       s.repeat);
	fflush(stdout);
	if (o->ws_only) {
		ret = row_ws(&s);
		goto out;
	}
	if (o->huge_only) {
		ret = row_huge(&s, &miss);
	} else if (!o->flood_only) {
		ret = row_rand(&s, &miss);
		if (!ret)
			ret = row_seq(&s, &miss);
		if (!ret)
			ret = row_huge(&s, &miss);
		if (!ret)
			ret = row_ws(&s);
		if (!ret)
			ret = row_packed(&s, o->tmpfs_dir ? o->tmpfs_dir : "/dev/shm");
		if (!ret)
			ret = row_http(&s, o->tmpfs_dir ? o->tmpfs_dir : "/dev/shm", &miss);
	}
	if (!ret && !o->huge_only)
		ret = row_flood(&s, false, &miss);
	if (!ret && !o->huge_only)
		ret = row_flood(&s, true, &miss);
out:
	free(s.rand);
	free(s.seq);
	free(s.ws);
	close(s.fd);
	if (ret) {
		fprintf(stderr, "ufault-bench: serve: %s\n", strerror(-ret));
		return EXIT_ERR;
	}
	return miss && o->check ? EXIT_MISS : 0;
}
