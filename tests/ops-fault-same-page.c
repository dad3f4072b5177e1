/* Description: several threads faulting the same page at once all wake
 * with the same bytes, whatever number of times fault() ran for it (each
 * call stamps the page with its call number: the first installed wins),
 * with one and with four handler threads. */
#define _GNU_SOURCE
#include "helpers.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#define NTHREADS 8
#define NPAGES 4

struct ctx {
	struct uf_mm *mm;
	unsigned char *map;
	pthread_barrier_t start;
	int calls[NPAGES];
	unsigned char seen[NTHREADS][NPAGES][64];	/* first bytes each thread saw */
};

struct thread_arg {
	struct ctx *c;
	int idx;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct timespec ts = { 0, 20 * 1000 * 1000 };	/* let the others pile up */
	struct uf_page *page;
	int call;

	if (fd->pgoff >= NPAGES) {
		fd->type = UF_FAULT_SIGBUS;
		return NULL;
	}
	call = __atomic_add_fetch(&c->calls[fd->pgoff], 1, __ATOMIC_RELAXED);
	nanosleep(&ts, NULL);
	page = uf_page_alloc(c->mm);
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), (int)(fd->pgoff * 16 + (unsigned)call), UF_PAGE_SIZE);
	fd->type = UF_FAULT_MAJOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

static void *toucher(void *arg)
{
	struct thread_arg *a = arg;
	struct ctx *c = a->c;
	size_t pg;

	for (pg = 0; pg < NPAGES; pg++) {
		pthread_barrier_wait(&c->start);
		memcpy(c->seen[a->idx][pg], c->map + pg * UF_PAGE_SIZE + 1000, 64);
	}
	return NULL;
}

static void run(unsigned int handlers)
{
	struct uf_mm_config cfg = { .handler_threads = handlers };
	struct thread_arg args[NTHREADS];
	pthread_t t[NTHREADS];
	struct ctx *c = calloc(1, sizeof(*c));
	struct uf_stats st;
	uint64_t calls = 0;
	size_t pg, i, k;

	CHECK(c != NULL, "calloc");
	c->mm = ut_mm_create(&cfg);
	CHECK_RET(uf_mmap_ops(c->mm, NPAGES * UF_PAGE_SIZE, PROT_READ, &ops, c,
			      (void **)&c->map), 0);
	pthread_barrier_init(&c->start, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		args[i] = (struct thread_arg){ c, (int)i };
		CHECK(pthread_create(&t[i], NULL, toucher, &args[i]) == 0, "pthread_create");
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);

	for (pg = 0; pg < NPAGES; pg++) {
		int n = __atomic_load_n(&c->calls[pg], __ATOMIC_RELAXED);
		unsigned char first = c->map[pg * UF_PAGE_SIZE];

		/* the page holds one call's stamp, whole */
		CHECK(n >= 1 && n <= NTHREADS, "%u handlers: page %zu: %d calls", handlers, pg, n);
		CHECK(first > pg * 16 && first <= pg * 16 + (unsigned)n,
		      "%u handlers: page %zu: stamp %#x is no call's", handlers, pg, first);
		for (k = 0; k < UF_PAGE_SIZE; k++)
			CHECK(c->map[pg * UF_PAGE_SIZE + k] == first,
			      "%u handlers: page %zu: byte %zu mixes stamps", handlers, pg, k);
		for (i = 0; i < NTHREADS; i++)
			for (k = 0; k < 64; k++)
				CHECK(c->seen[i][pg][k] == first, "%u handlers: page %zu: thread %zu "
				      "saw %#x, the page holds %#x", handlers, pg, i,
				      c->seen[i][pg][k], first);
		calls += (uint64_t)n;
		fprintf(stderr, "%u handlers: page %zu: fault() ran %d times for %d threads\n",
			handlers, pg, n, NTHREADS);
	}
	/*
	 * Every call is counted once, as MAJOR.  A late duplicate event may
	 * still be in fault() when uf_munmap() comes: its install then fails
	 * and it is counted as sigbus (see mm-stats and ops-munmap-pending-fault
	 * for that); so count it either way here.
	 */
	CHECK_RET(uf_munmap(c->mm, c->map, NPAGES * UF_PAGE_SIZE), 0);
	/* ... and such a late call is counted after uf_munmap() returned,
	 * which waits for it: count the calls again */
	for (calls = 0, pg = 0; pg < NPAGES; pg++)
		calls += (uint64_t)__atomic_load_n(&c->calls[pg], __ATOMIC_RELAXED);
	CHECK_RET(uf_mm_stats(c->mm, &st), 0);
	CHECK(st.major_faults + st.sigbus == calls && st.minor_faults == 0 && st.oom == 0,
	      "%u handlers: major %lu minor %lu sigbus %lu for %lu calls", handlers,
	      (unsigned long)st.major_faults, (unsigned long)st.minor_faults,
	      (unsigned long)st.sigbus, (unsigned long)calls);
	uf_mm_destroy(c->mm);
	pthread_barrier_destroy(&c->start);
	free(c);
}

int main(void)
{
	run(1);
	run(4);
	return 0;
}
