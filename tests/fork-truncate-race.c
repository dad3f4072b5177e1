/* Description: fork() racing truncate: while a thread shrinks and regrows
 * a shared object and other threads fault on it, the main thread forks
 * children that read every page: each read gives the object's byte, zero
 * (a page cut and grown again) or SIGBUS (past EOF at that moment), never
 * another byte and never a hang; parent and children exit cleanly.
 */
#define _GNU_SOURCE
#include "fork-target.h"

#include <pthread.h>

#define NPAGES	64
#define SIZE	(NPAGES * PG)
#define FORKS	40

struct ctx {
	struct tt t;
	unsigned char *m;
	int stop;
};

static void *truncator(void *arg)
{
	struct ctx *c = arg;
	unsigned int i = 0;

	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		uf_object_truncate(c->t.obj, (uint64_t)(8 + i % 48) * PG);
		uf_object_truncate(c->t.obj, SIZE);
		i++;
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct ctx *c = arg;
	unsigned char v;
	struct ut_fault f;
	size_t p = 0;

	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		ut_read(c->m + p * PG + 3, &v, &f);
		p = (p + 7) % NPAGES;
	}
	return NULL;
}

static int child(struct ctx *c)
{
	size_t p;

	ut_catch_signals();
	for (p = 0; p < NPAGES; p++) {
		int b = fk_byte(c->m + p * PG + 3);

		if (b != -SIGBUS && b != 0 && b != ut_pattern(p * PG + 3))
			return 1;
	}
	return 0;
}

int main(void)
{
	struct ctx c = { 0 };
	pthread_t tr, rd;
	int i;

	ut_watchdog(120);
	if (!ut_fork_events())
		return UT_SKIP;
	ut_catch_signals();
	c.t.mm = ut_mm_create(NULL);
	tt_open(&c.t, c.t.mm, TT_UF_MEM, SIZE);
	c.m = tt_map(&c.t, SIZE, PROT_READ, true, 0);
	CHECK(pthread_create(&tr, NULL, truncator, &c) == 0, "pthread_create");
	CHECK(pthread_create(&rd, NULL, reader, &c) == 0, "pthread_create");
	for (i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		int st;

		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			_exit(child(&c));
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "fork %d: child status %#x", i, st);
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	pthread_join(tr, NULL);
	pthread_join(rd, NULL);
	CHECK(c.m[5 * PG + 3] == ut_pattern(5 * PG + 3) || c.m[5 * PG + 3] == 0, "page 5");
	tt_unmap(&c.t, c.m, SIZE);
	tt_close(&c.t);
	uf_mm_destroy(c.t.mm);
	return 0;
}
