/* Description: an access the store cannot serve kills the process with
 * SIGBUS, as the kernel's own fault does, when the process ignores SIGBUS
 * (SIG_IGN) or the thread blocks it -- it never waits forever.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define NPAGES	8
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define BAD	2

enum mode { IGNORED, BLOCKED };
static const char *const mode_name[] = { "ignored", "blocked" };

static void child(enum mode mode)
{
	struct uf_mm *mm;
	unsigned char *map;
	struct uf_object *obj;
	struct os_store st;

	mm = ut_mm_create(NULL);
	os_init(&st, SIZE);
	st.bad_page = BAD;
	obj = os_object(mm, &st);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	if (mode == IGNORED) {
		signal(SIGBUS, SIG_IGN);
	} else {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGBUS);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	(void)*(volatile unsigned char *)(map + BAD * UF_PAGE_SIZE + 1);
	_exit(3);		/* the access went on: wrong */
}

int main(void)
{
	struct uf_mm *probe = ut_mm_create(NULL);	/* skips without userfaultfd */
	int m;

	uf_mm_destroy(probe);
	for (m = IGNORED; m <= BLOCKED; m++) {
		int status = 0, waited = 0;
		pid_t pid = fork();

		CHECK(pid >= 0, "fork");
		if (pid == 0)
			child(m);
		/* at most 30 s: the bug is a child that waits forever */
		while (waitpid(pid, &status, WNOHANG) == 0) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			if (++waited > 3000) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				CHECK(0, "%s: the access hung", mode_name[m]);
			}
			nanosleep(&ts, NULL);
		}
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
		      "%s: child ended with status %#x, want death by SIGBUS", mode_name[m], status);
	}
	return 0;
}
