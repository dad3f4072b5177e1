/* Description: in a LOCKDEP=1 build a lock with no class stops the process
 * with a message saying so (it is not let through unchecked), while a
 * program using ufault, whose locks all have a class, runs; locks taken
 * in lockorder.h's order go through and one taken against it stops the
 * process.  Skips in a build without lockdep.
 */
#define _GNU_SOURCE
#define UF_LOCKDEP		/* lockdep.c's calls, */
#define UF_LOCKDEP_SELF		/* not the pthread macros */
#include "../src/lib/lockdep.h"
#include "helpers.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* in libufault.a only when built with LOCKDEP=1 */
#pragma weak uf_lockdep_class
#pragma weak uf_ld_mutex_lock
#pragma weak uf_ld_mutex_unlock

#define LEN	(64 * UF_PAGE_SIZE)

/* Take @outer (class @co, or none) then @inner (class @ci, or none) in a
 * child; return its wait status, its stderr in @msg. */
static int run(int co, int ci, char *msg, size_t msglen)
{
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	CHECK(pipe(fds) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
		pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;

		dup2(fds[1], 2);
		if (co)
			uf_lockdep_class(&outer, co);
		if (ci)
			uf_lockdep_class(&inner, ci);
		if (co >= 0)
			uf_ld_mutex_lock(&outer, __FILE__, __LINE__);
		uf_ld_mutex_lock(&inner, __FILE__, __LINE__);
		uf_ld_mutex_unlock(&inner);
		if (co >= 0)
			uf_ld_mutex_unlock(&outer);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], msg, msglen - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	return status;
}

static bool aborted(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

int main(void)
{
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p;
	char msg[512];
	int status, i;

	/* ufault's own locks: every one has a class, or this aborts */
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_create_mem(mm, LEN, &obj), 0);
	CHECK_RET(uf_object_pwrite(obj, "lockdep", 7, 5 * UF_PAGE_SIZE), 7);
	CHECK_RET(uf_mmap(mm, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, obj, 0, (void **)&p), 0);
	for (i = 0; i < 64; i++)
		p[i * UF_PAGE_SIZE + 1] = 1;
	CHECK(memcmp(p + 5 * UF_PAGE_SIZE + 2, "ckdep", 5) == 0, "bytes through the mapping");
	CHECK_RET(uf_msync(mm, p, LEN, MS_SYNC), 0);
	CHECK_RET(uf_munmap(mm, p, LEN), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	if (!uf_ld_mutex_lock) {
		printf("skip: not a LOCKDEP=1 build (no lockdep.c in libufault.a)\n");
		return UT_SKIP;
	}

	/* a lock with no class, alone */
	status = run(-1, 0, msg, sizeof(msg));
	CHECK(aborted(status), "an unclassed lock went unchecked (status 0x%x)", status);
	CHECK(strstr(msg, "no class"), "message: %s", msg);

	/* in the order: taken */
	status = run(UF_LK_VMA, UF_LK_INVALIDATE, msg, sizeof(msg));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "vma then invalidate: %s", msg);
	status = run(UF_LK_CHARGE, UF_LK_OBJ, msg, sizeof(msg));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "charge then obj: %s", msg);
	status = run(UF_LK_RA, UF_LK_NOCOW, msg, sizeof(msg));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "ra then nocow: %s", msg);

	/* against it: stopped, both named */
	status = run(UF_LK_INVALIDATE, UF_LK_VMA, msg, sizeof(msg));
	CHECK(aborted(status), "invalidate then vma (status 0x%x)", status);
	CHECK(strstr(msg, "mm->vma_lock") && strstr(msg, "obj->invalidate_lock"), "message: %s", msg);
	status = run(UF_LK_OBJ, UF_LK_CHARGE, msg, sizeof(msg));
	CHECK(aborted(status), "obj then charge (status 0x%x)", status);
	status = run(UF_LK_STORE, UF_LK_STORE, msg, sizeof(msg));
	CHECK(aborted(status), "two store locks (status 0x%x)", status);

	/* a classed lock under a lock with none */
	status = run(0, UF_LK_VMA, msg, sizeof(msg));
	CHECK(aborted(status) && strstr(msg, "no class"), "status 0x%x: %s", status, msg);
	printf("ok\n");
	return UT_PASS;
}
