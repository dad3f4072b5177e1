/* Description: system(), posix_spawn() and fork()+exec() work while a
 * ufault address space is serving faults, and the parent's mappings keep
 * working afterwards (the children never touch ufault's state).
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define NPAGES	256
#define SIZE	(NPAGES * UF_PAGE_SIZE)

extern char **environ;

static int wait_status(pid_t pid)
{
	int status;

	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void)
{
	char *argv[] = { "sh", "-c", "exit 7", NULL };
	struct uf_object *obj;
	unsigned char *map;
	struct uf_mm *mm;
	char path[256];
	size_t pg = 0;
	pid_t pid;
	int i;

	os_watchdog(60);
	mm = ut_mm_create(NULL);
	obj = ut_object(mm, UT_STORE_TMPFS, SIZE, path, sizeof(path));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (i = 0; i < 3; i++) {
		CHECK(map[pg * UF_PAGE_SIZE] == ut_pattern(pg * UF_PAGE_SIZE), "page %zu", pg);
		pg += 23;
		CHECK(WEXITSTATUS(system("exit 3")) == 3, "system()");
		CHECK(map[pg * UF_PAGE_SIZE] == ut_pattern(pg * UF_PAGE_SIZE), "page %zu", pg);
		pg += 23;
		CHECK(posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) == 0, "posix_spawn");
		CHECK(wait_status(pid) == 7, "posix_spawn child");
		CHECK(map[pg * UF_PAGE_SIZE] == ut_pattern(pg * UF_PAGE_SIZE), "page %zu", pg);
		pg += 23;
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
			_exit(99);
		}
		CHECK(wait_status(pid) == 5, "fork+exec child");
	}
	map[1] = 0x99;
	CHECK_RET(uf_object_sync(obj), 0);
	{
		unsigned char b;
		int fd = open(path, O_RDONLY);

		CHECK(fd >= 0 && pread(fd, &b, 1, 1) == 1 && b == 0x99, "write reached the file");
		close(fd);
	}
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
	return 0;
}
