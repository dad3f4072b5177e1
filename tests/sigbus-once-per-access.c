/* Description: one failed access costs one SIGBUS, delivered to that
 * access: a thread whose wait for a slow, failing store read is broken
 * again and again by another signal (a 50 Hz timer) takes exactly one
 * SIGBUS per access, with si_addr in the page, and none later during
 * unrelated work.
 */
#define _GNU_SOURCE
#include "object-store.h"
#include "watchdog.h"

#include <sys/mman.h>
#include <time.h>

#define NPAGES	8
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define BAD	5

/* The bad page's read takes 100 ms (five timer ticks), then fails. */
static ssize_t slow_read(void *store, void *buf, size_t len, uint64_t off)
{
	if (off <= BAD * UF_PAGE_SIZE && off + len > BAD * UF_PAGE_SIZE) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		while (nanosleep(&ts, &ts) < 0)
			;
	}
	return os_read(store, buf, len, off);
}

static const struct uf_store_ops slow_ops = { .read = slow_read };

static void tick(int sig)
{
	(void)sig;
}

/* Sleep @ms, in slices the timer keeps breaking. */
static void work_ms(long ms)
{
	struct timespec end, now;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	do {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct sigevent sev = { 0 };
	struct itimerspec its = { { 0, 20 * 1000 * 1000 }, { 0, 20 * 1000 * 1000 } };
	struct sigaction sa = { 0 };
	unsigned char *map, *bad, v;
	struct uf_object *obj;
	struct os_store st;
	struct ut_fault f;
	timer_t timer;
	int i;

	ut_catch_signals();	/* a SIGBUS outside ut_read() kills the test */
	ut_watchdog(60);
	sa.sa_handler = tick;	/* no SA_RESTART: every tick breaks a wait */
	sigaction(SIGUSR1, &sa, NULL);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev._sigev_un._tid = gettid();
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &timer) == 0, "timer_create");

	os_init(&st, SIZE);
	st.bad_page = BAD;
	CHECK_RET(uf_object_create(mm, &slow_ops, &st, SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	bad = map + BAD * UF_PAGE_SIZE;
	CHECK(timer_settime(timer, 0, &its, NULL) == 0, "timer_settime");

	for (i = 0; i < 4; i++) {
		CHECK(ut_read(bad + 10 * i, &v, &f) == SIGBUS, "access %d: signal %d", i, f.sig);
		CHECK((unsigned char *)f.addr >= bad && (unsigned char *)f.addr < bad + UF_PAGE_SIZE,
		      "access %d: si_addr %p outside the page %p", i, f.addr, (void *)bad);
		/* unrelated work: a second SIGBUS for that access would land here */
		work_ms(500);
		CHECK(map[(BAD - 1) * UF_PAGE_SIZE + 1] == ut_pattern((BAD - 1) * UF_PAGE_SIZE + 1),
		      "good page");
	}
	its.it_value.tv_nsec = its.it_interval.tv_nsec = 0;
	timer_settime(timer, 0, &its, NULL);
	timer_delete(timer);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	return 0;
}
