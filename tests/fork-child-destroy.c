/* Description: without fork events (UF_MM_NO_FORK, as on a kernel or in
 * a process without CAP_SYS_PTRACE), a forked child that cleans up
 * (uf_mm_destroy(), uf_object_put(), as an atexit handler would) and exits
 * leaves the parent working: the parent's later faults are served with
 * the file's bytes and its writes reach the file; in the child every
 * other uf_* call fails with -ECHILD and a touch of ufault memory gets
 * SIGSEGV (regions are MADV_DONTFORK).  Three rounds, one child each.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define NPAGES	64
#define SIZE	(NPAGES * UF_PAGE_SIZE)

struct ctx {
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *map;
	char path[256];
};

/* The child: check what it may and may not do, clean up, exit. */
static void child(struct ctx *c, int round)
{
	struct ut_fault f;
	unsigned char v;
	void *p = NULL;
	char buf[8];

	ut_catch_signals();
	/* the mapping is not inherited: a touch is SIGSEGV, not a fill
	 * (not checked under ThreadSanitizer, whose fork child does not
	 * deliver it) */
#ifndef __SANITIZE_THREAD__
	if (ut_read(c->map + (size_t)(NPAGES - 1 - round) * UF_PAGE_SIZE, &v, &f) != SIGSEGV)
		_exit(10);
#else
	(void)v;
	(void)f;
	(void)round;
#endif
	if (uf_mmap(c->mm, UF_PAGE_SIZE, PROT_READ, UF_MAP_SHARED, c->obj, 0, &p) != -ECHILD)
		_exit(11);
	if (uf_object_pread(c->obj, buf, sizeof(buf), 0) != -ECHILD)
		_exit(12);
	if (uf_object_sync(c->obj) != -ECHILD)
		_exit(13);
	if (uf_munmap(c->mm, c->map, SIZE) != -ECHILD)
		_exit(14);
	uf_object_put(c->obj);
	uf_mm_destroy(c->mm);
	/* _exit: a sanitizer's leak check at exit() would count the memory
	 * of the parent's handler threads, which the child never had */
	_exit(0);
}

int main(void)
{
	struct uf_mm_config cfg = { .flags = UF_MM_NO_FORK };
	struct ctx c;
	unsigned char buf[16];
	int round, fd;

	os_watchdog(60);
	c.mm = ut_mm_create(&cfg);
	c.obj = ut_object(c.mm, UT_STORE_TMPFS, SIZE, c.path, sizeof(c.path));
	CHECK_RET(uf_mmap(c.mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c.obj, 0,
			  (void **)&c.map), 0);
	CHECK(c.map[0] == ut_pattern(0), "first page");

	for (round = 0; round < 3; round++) {
		size_t pg = 1 + 2 * (size_t)round;
		int status;
		pid_t pid;

		/* a fault just served before the fork */
		CHECK(c.map[pg * UF_PAGE_SIZE] == ut_pattern(pg * UF_PAGE_SIZE), "page %zu", pg);
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0)
			child(&c, round);
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);

		/* the parent keeps working: a new fault and a write */
		pg++;
		CHECK(c.map[pg * UF_PAGE_SIZE + 5] == ut_pattern(pg * UF_PAGE_SIZE + 5),
		      "round %d: page %zu after the child", round, pg);
		c.map[pg * UF_PAGE_SIZE] = (unsigned char)(0xa0 + round);
		CHECK_RET(uf_object_sync(c.obj), 0);
	}
	fd = open(c.path, O_RDONLY);
	CHECK(fd >= 0, "open");
	for (round = 0; round < 3; round++) {
		size_t pg = 2 + 2 * (size_t)round;

		CHECK(pread(fd, buf, 1, (off_t)(pg * UF_PAGE_SIZE)) == 1, "pread");
		CHECK(buf[0] == 0xa0 + round, "file page %zu: %#x", pg, buf[0]);
	}
	close(fd);
	CHECK_RET(uf_munmap(c.mm, c.map, SIZE), 0);
	uf_object_put(c.obj);
	uf_mm_destroy(c.mm);
	unlink(c.path);
	return 0;
}
