// SPDX-License-Identifier: MIT
/* Description: a working set pushed into a Firecracker-style client (uf_object_serve_prefetch) from a read-only store reaches the client before the server's cache: with the store's second read held, the client has the push's first batch and the cache none of it; two faults of the client on runs ahead of the push send the push on after them, and the runs it went past come after the set; then every page reaches the cache too, each read from the store once, and the client touching the set takes no fault and reads the store's bytes */
#define _GNU_SOURCE
#include "ws-test.h"
#include "serve-ws-client.h"
#include "watchdog.h"

#include <pthread.h>

#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE	(16UL << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE
#define NRUNS	32
#define RUNLEN	8
#define NSET	(NRUNS * RUNLEN)
#define HEAD	32		/* pages of a push's first batch (UF_WS_BATCH_FIRST) */
#define SECOND	12		/* the first run after the second batch (64 pages) */
#define AHEAD	20		/* the run the client faults on while the push waits */

/* The store: ut_pattern() bytes, its ->readv held at its second call
 * while @hold is set. */
struct store {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold, held;
	unsigned int readv_calls;
	uint64_t pages;		/* read, by both methods */
	unsigned char call[NPAGES];	/* the ->readv call that read each page */
};

static ssize_t st_read(void *s, void *buf, size_t len, uint64_t off)
{
	struct store *st = s;

	ut_fill_pattern(buf, len, off);
	__atomic_add_fetch(&st->pages, (len + PG - 1) / PG, __ATOMIC_RELAXED);
	return (ssize_t)len;
}

static int st_readv(void *s, const struct uf_store_iov *iov, size_t n)
{
	struct store *st = s;
	unsigned int call;
	size_t i;

	pthread_mutex_lock(&st->lock);
	call = ++st->readv_calls < 255 ? st->readv_calls : 255;
	if (call == 2 && st->hold) {
		st->held = true;
		pthread_cond_broadcast(&st->cond);
		while (st->hold)
			pthread_cond_wait(&st->cond, &st->lock);
	}
	pthread_mutex_unlock(&st->lock);
	for (i = 0; i < n; i++) {
		uint64_t pg;

		for (pg = iov[i].off / PG; pg < (iov[i].off + iov[i].len + PG - 1) / PG; pg++)
			__atomic_store_n(&st->call[pg], (unsigned char)call, __ATOMIC_RELAXED);
		ut_fill_pattern(iov[i].buf, iov[i].len, iov[i].off);
		__atomic_add_fetch(&st->pages, (iov[i].len + PG - 1) / PG, __ATOMIC_RELAXED);
	}
	return 0;
}

static const struct uf_store_ops ops = { .read = st_read };

/* The ->readv call that read page @pg (0: none). */
static unsigned int called(struct store *st, uint64_t pg)
{
	return __atomic_load_n(&st->call[pg], __ATOMIC_RELAXED);
}

/* The set in recorded order: runs of RUNLEN pages 40 apart, from the
 * top of the object down. */
static uint64_t set_page(size_t i)
{
	return 100 + 40 * (uint64_t)(NRUNS - 1 - i / RUNLEN) + i % RUNLEN;
}

/* Record the set from an object of the store, touched in order. */
static void record(struct store *st, const char *rec)
{
	struct uf_object *obj;
	struct uf_mm *mm = ut_mm_create(NULL);

	CHECK_RET(uf_object_create(mm, &ops, st, SIZE, &obj), 0);
	CHECK_RET(uf_object_set_readv(obj, st_readv), 0);
	sws_record(mm, obj, rec, SIZE, NSET);
}

/* The client: then, on each command byte, 'h': how many pages of the
 * push's first batch it has, 'a': touch the first pages of runs AHEAD - 1
 * and AHEAD, 't': touch the set, answering how many of its pages were
 * not in (then faulted: the process's own fault count would take a
 * sanitizer's or a stack page's too) and the pages whose bytes are
 * wrong. */
static void client(int sock)
{
	unsigned char *base = pc_client_start(sock, SIZE, 0, NULL);
	uint64_t ans[2];
	size_t i;
	char cmd;

	while (read(sock, &cmd, 1) == 1) {
		ans[0] = ans[1] = 0;
		if (cmd == 'a') {
			for (i = AHEAD - 1; i <= AHEAD; i++)
				ans[1] += base[set_page(i * RUNLEN) * PG] !=
					  ut_pattern(set_page(i * RUNLEN) * PG);
		} else if (cmd == 'h') {
			ans[0] = sws_present(base, 0, HEAD);
		} else {
			ans[0] = NSET - sws_present(base, 0, NSET);
			ans[1] = sws_touch(base, NSET);
		}
		if (write(sock, ans, sizeof(ans)) != sizeof(ans))
			_exit(UT_FAIL);
	}
	_exit(0);
}

/* Send @cmd to the client on @sock, and its answer. */
static void ask(int sock, char cmd, uint64_t ans[2])
{
	CHECK(write(sock, &cmd, 1) == 1, "to the client: %s", strerror(errno));
	CHECK(read(sock, ans, 2 * sizeof(uint64_t)) == 2 * sizeof(uint64_t), "the client's answer");
}

int main(void)
{
	struct store st = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	char dir[64], rec[128];
	uint64_t region[2], ans[2];
	struct uf_serve_region r;
	struct uf_object *obj;
	struct uf_stats s;
	struct uf_mm *mm;
	int sock, uffd = -1, status;
	pid_t pid;

	ut_watchdog(120);
	snprintf(dir, sizeof(dir), "/tmp/ufault-wspush-XXXXXX");
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(rec, sizeof(rec), "%s/ws", dir);
	record(&st, rec);

	/* the client first: it is no child of the server's mm */
	sock = pc_client_fork(client, region, &uffd, &pid);
	if (sock < 0) {
		fprintf(stderr, "no userfaultfd here\n");
		return UT_SKIP;
	}

	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_create(mm, &ops, &st, SIZE, &obj), 0);
	CHECK_RET(uf_object_set_readv(obj, st_readv), 0);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), 0);
	st.pages = 0;
	st.readv_calls = 0;
	st.hold = true;
	r = (struct uf_serve_region){ .start = region[0], .len = region[1], .offset = 0 };
	CHECK_RET(uf_object_serve_uffd(obj, uffd, &r, 1), 0);

	/* the push's second read waits: its first batch went before */
	pthread_mutex_lock(&st.lock);
	while (!st.held)
		pthread_cond_wait(&st.cond, &st.lock);
	pthread_mutex_unlock(&st.lock);
	ask(sock, 'h', ans);
	CHECK(ans[0] == HEAD, "the client has %lu of the push's first %d pages",
	      (unsigned long)ans[0], HEAD);
	CHECK_RET(uf_mm_stats(mm, &s), 0);
	CHECK(s.cache_pages == 0, "the cache has %lu pages before the client has the set: the "
	      "client's copies come first", (unsigned long)s.cache_pages);
	/* the client runs ahead of the push (its fault is served at once) */
	ask(sock, 'a', ans);
	CHECK(ans[1] == 0, "runs %d, %d: wrong bytes", AHEAD - 1, AHEAD);

	pthread_mutex_lock(&st.lock);
	st.hold = false;
	pthread_cond_broadcast(&st.cond);
	pthread_mutex_unlock(&st.lock);
	/* the rest reaches the client, and then the cache (for the next) */
	do {
		usleep(1000);
		CHECK_RET(uf_mm_stats(mm, &s), 0);
	} while (s.cache_pages < NSET);
	CHECK(s.cache_pages == NSET, "cache %lu pages, want %d", (unsigned long)s.cache_pages, NSET);
	CHECK(__atomic_load_n(&st.pages, __ATOMIC_RELAXED) == NSET && s.pages_read == NSET,
	      "store read %lu pages (counted %lu), want each of the %d once",
	      (unsigned long)st.pages, (unsigned long)s.pages_read, NSET);
	/* the push went on after the runs the faults met, and pushed the
	 * runs it went past last */
	CHECK(called(&st, set_page((AHEAD + 1) * RUNLEN)) == 3,
	      "run %d read by the push's read %u, want 3 (after the client's faults on runs %d, "
	      "%d)", AHEAD + 1, called(&st, set_page((AHEAD + 1) * RUNLEN)), AHEAD - 1, AHEAD);
	CHECK(called(&st, set_page(SECOND * RUNLEN)) > 3 &&
	      called(&st, set_page((AHEAD - 2) * RUNLEN)) == called(&st, set_page(SECOND * RUNLEN)),
	      "runs %d..%d read by the push's reads %u..%u, want one read after the set's", SECOND,
	      AHEAD - 2, called(&st, set_page(SECOND * RUNLEN)),
	      called(&st, set_page((AHEAD - 2) * RUNLEN)));
	ask(sock, 't', ans);
	CHECK(ans[1] == 0, "%lu pages of the set with wrong bytes", (unsigned long)ans[1]);
	CHECK(ans[0] == 0, "%lu pages of the set not in the client before it touched them (each "
	      "a fault)", (unsigned long)ans[0]);

	close(sock);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "client exit %d", status);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(rec);
	rmdir(dir);
	printf("push: client first (%d pages before the cache), %d pages, no fault\n", HEAD, NSET);
	return UT_PASS;
}
