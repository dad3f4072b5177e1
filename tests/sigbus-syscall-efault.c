/* Description: a system call whose buffer lies in a page the store cannot
 * read (read() into it, write() from it) fails with EFAULT in bounded time,
 * through shared and private mappings, and no SIGBUS arrives later; a plain
 * access to the page still gets SIGBUS with si_addr in the page; once the
 * store reads again, the same system calls and accesses see the right bytes.
 */
#define _GNU_SOURCE
#include "object-store.h"
#include "watchdog.h"

#include <sys/mman.h>
#include <time.h>

#define NPAGES	16
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define BAD	3

static void set_bad(struct os_store *s, uint64_t page)
{
	pthread_mutex_lock(&s->lock);
	s->bad_page = page;
	pthread_mutex_unlock(&s->lock);
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0)
		;
}

/* The bad page, while the store fails: both calls fail with EFAULT. */
static void syscalls_fail(unsigned char *map, int zero, int pipefd[2], const char *what)
{
	unsigned char *bad = map + BAD * UF_PAGE_SIZE;
	ssize_t n;

	errno = 0;
	n = read(zero, bad + 100, 16);
	CHECK(n == -1 && errno == EFAULT, "%s: read() into the bad page: %zd, errno %d", what, n,
	      errno);
	errno = 0;
	n = write(pipefd[1], bad + 200, 16);
	CHECK(n == -1 && errno == EFAULT, "%s: write() from the bad page: %zd, errno %d", what, n,
	      errno);
}

static void access_sigbus(unsigned char *map, const char *what)
{
	unsigned char *bad = map + BAD * UF_PAGE_SIZE, v;
	struct ut_fault f;

	CHECK(ut_read(bad + 7, &v, &f) == SIGBUS, "%s: plain read: signal %d", what, f.sig);
	CHECK((unsigned char *)f.addr >= bad && (unsigned char *)f.addr < bad + UF_PAGE_SIZE,
	      "%s: si_addr %p outside the page %p", what, f.addr, (void *)bad);
}

static void syscalls_work(unsigned char *map, int pipefd[2], const char *what)
{
	unsigned char *bad = map + BAD * UF_PAGE_SIZE, buf[16];
	uint64_t off = BAD * UF_PAGE_SIZE + 300;
	int i;

	CHECK_RET(write(pipefd[1], bad + 300, 16), 16);
	CHECK_RET(read(pipefd[0], buf, 16), 16);
	for (i = 0; i < 16; i++)
		CHECK(buf[i] == ut_pattern(off + (uint64_t)i), "%s: byte %d through write() = %u",
		      what, i, buf[i]);
	CHECK(bad[4095] == ut_pattern(BAD * UF_PAGE_SIZE + 4095), "%s: plain read after repair",
	      what);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	unsigned char *shared, *priv;
	struct os_store st;
	struct uf_object *obj;
	int zero, pipefd[2];

	ut_catch_signals();	/* a SIGBUS outside ut_read() kills the test */
	ut_watchdog(30);	/* the bug: the system call never returns */
	os_init(&st, SIZE);
	set_bad(&st, BAD);
	obj = os_object(mm, &st);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&shared), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0,
			  (void **)&priv), 0);
	zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	CHECK(zero >= 0 && pipe(pipefd) == 0, "open /dev/zero, pipe");

	syscalls_fail(shared, zero, pipefd, "shared");
	syscalls_fail(priv, zero, pipefd, "private");
	/* and again: nothing left over from the first failures changes that */
	syscalls_fail(shared, zero, pipefd, "shared again");
	nap_ms(300);		/* a stray SIGBUS would land here */
	access_sigbus(shared, "shared");
	access_sigbus(priv, "private");
	syscalls_fail(priv, zero, pipefd, "private after SIGBUS");
	nap_ms(300);

	/* the store reads again: so do the calls and the accesses */
	set_bad(&st, UINT64_MAX);
	nap_ms(500);
	syscalls_work(shared, pipefd, "shared");
	syscalls_work(priv, pipefd, "private");

	CHECK_RET(uf_munmap(mm, priv, SIZE), 0);
	CHECK_RET(uf_munmap(mm, shared, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	close(zero);
	close(pipefd[0]);
	close(pipefd[1]);
	return 0;
}
