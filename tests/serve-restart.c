// SPDX-License-Identifier: MIT
/* Description: ufault-serve killed with SIGKILL and started again on the same SOCKET and SOURCE: its Firecracker-style client goes on with the right bytes without restarting -- a thread asleep in a fault the dead server had read, the pages it never touched, a range its balloon removed (zeros) -- and a second ufault-serve beside a live one, or with another SOURCE, is refused */
#include "serve-test.h"

#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>

struct toucher {
	const volatile char *p;
	unsigned char got;
	int done;		/* atomic */
};

static void *touch(void *arg)
{
	struct toucher *t = arg;

	t->got = (unsigned char)*t->p;
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Take @fc's next page-fault message off its own userfaultfd, as a
 * server would read it: whoever reads it and dies leaves the thread
 * asleep in the kernel until someone wakes it. */
static unsigned long take_fault(struct ut_fc *fc)
{
	struct pollfd p = { .fd = fc->uffd, .events = POLLIN };
	struct uffd_msg m;

	for (;;) {
		CHECK(poll(&p, 1, -1) == 1, "poll: %s", strerror(errno));
		if (read(fc->uffd, &m, sizeof(m)) != sizeof(m))
			continue;
		CHECK(m.event == UFFD_EVENT_PAGEFAULT, "event %u", m.event);
		return (unsigned long)m.arg.pagefault.address;
	}
}

static bool removed(size_t pg)
{
	return (pg >= 100 && pg < 116) || (pg >= 700 && pg < 716);
}

int main(void)
{
	const size_t len[2] = { 4 << 20, 1 << 20 };
	const uint64_t off[2] = { 1 << 20, 8 << 20 };
	struct toucher t = { 0 };
	struct ut_server srv;
	struct ut_fc fc;
	struct stat sb;
	char ctl[160];
	pthread_t th;
	unsigned long addr;
	size_t pg;
	int st;

	ut_watchdog(60);
	ut_server_start(&srv, 12 << 20, NULL);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	snprintf(ctl, sizeof(ctl), "%s.ctl", srv.sock);
	CHECK(stat(ctl, &sb) == 0 && S_ISSOCK(sb.st_mode) && (sb.st_mode & 0777) == 0600,
	      "%s: mode %o", ctl, (unsigned)sb.st_mode);

	/* half of region 0 read; a balloon removes a range read and one not */
	for (pg = 0; pg < 512; pg++)
		CHECK((unsigned char)fc.base[0][pg * 4096 + 9] == ut_pattern(off[0] + pg * 4096 + 9),
		      "page %zu", pg);
	CHECK(madvise(fc.base[0] + 100 * 4096, 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	CHECK(madvise(fc.base[0] + 700 * 4096, 16 * 4096, MADV_DONTNEED) == 0, "madvise");
	CHECK(fc.base[0][100 * 4096] == 0 && fc.base[0][715 * 4096] == 0, "removed: not zero");
	/* the supervisor has both removals before the server dies */
	while (ut_super_status(&srv, "removed ") < 32)
		;

	/* a live server: a second one is refused, the first goes on */
	st = ut_server_second(&srv, NULL);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "second server: status %#x", st);
	ut_server_log_wait(&srv, "a server is serving there");
	CHECK((unsigned char)fc.base[1][3 * 4096] == ut_pattern(off[1] + 3 * 4096), "region 1");

	ut_server_stop(&srv);
	/* a thread faults with no server; its message is read and dropped */
	t.p = fc.base[1] + 77 * 4096 + 5;
	CHECK(pthread_create(&th, NULL, touch, &t) == 0, "pthread_create");
	addr = take_fault(&fc);
	CHECK(addr == ((unsigned long)t.p & ~4095UL), "fault at %#lx", addr);
	CHECK(!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE), "a fault served with no server");

	/* the clients' bytes come from SOURCE: another is refused */
	ut_server_source = "/dev/null";
	st = ut_server_second(&srv, NULL);
	ut_server_source = NULL;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "server of another SOURCE: status %#x", st);
	ut_server_log_wait(&srv, "its clients are served from");
	CHECK(!__atomic_load_n(&t.done, __ATOMIC_ACQUIRE), "a fault served with no server");

	ut_server_restart(&srv, NULL);
	pthread_join(th, NULL);
	CHECK(t.got == ut_pattern(off[1] + 77 * 4096 + 5), "the waiting thread: %u", t.got);
	ut_server_log_wait(&srv, "taken over, 2 regions");

	/* every page: SOURCE's bytes, zeros where the balloon removed */
	for (pg = 0; pg < len[0] / 4096; pg++) {
		unsigned char a = (unsigned char)fc.base[0][pg * 4096],
			      b = (unsigned char)fc.base[0][pg * 4096 + 4095];

		if (removed(pg))
			CHECK(a == 0 && b == 0, "removed page %zu: %u %u", pg, a, b);
		else
			CHECK(a == ut_pattern(off[0] + pg * 4096) &&
			      b == ut_pattern(off[0] + pg * 4096 + 4095), "page %zu", pg);
	}
	ut_fc_check(&fc, 1, 1);
	return UT_PASS;
}
