/* Description: several mms in one process work independently: each serves
 * its own mappings with its own handler threads and counters, does not
 * know the others' mappings, keeps serving while another mm's fault() is
 * stuck waiting, and survives another mm's destruction. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#define NMM 3
#define NPAGES 4
#define WAIT_SEC 5

struct shared {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stuck_started, released;
	bool stuck_timed_out;
};

struct ctx {
	struct uf_mm *mm;
	int id;
	struct shared *sh;
	unsigned char *map;
	int calls;
	pthread_t handler;		/* thread that ran fault() last */
};

static bool wait_for(struct shared *sh, const bool *flag)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += WAIT_SEC;
	pthread_mutex_lock(&sh->lock);
	while (!*flag && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&sh->cond, &sh->lock, &dl);
	ret = *flag;
	pthread_mutex_unlock(&sh->lock);
	return ret;
}

static void set(struct shared *sh, bool *flag)
{
	pthread_mutex_lock(&sh->lock);
	*flag = true;
	pthread_cond_broadcast(&sh->cond);
	pthread_mutex_unlock(&sh->lock);
}

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->handler, pthread_self(), __ATOMIC_RELAXED);
	if (c->id == 0 && fd->pgoff == NPAGES - 1) {
		/* mm 0 stays stuck here until main has used mm 1 */
		set(c->sh, &c->sh->stuck_started);
		if (!wait_for(c->sh, &c->sh->released))
			__atomic_store_n(&c->sh->stuck_timed_out, true, __ATOMIC_RELAXED);
	}
	page = uf_page_alloc(c->mm);
	if (page)
		memset(uf_page_address(page), c->id * 16 + (int)fd->pgoff, UF_PAGE_SIZE);
	fd->type = c->id % 2 ? UF_FAULT_MAJOR : UF_FAULT_MINOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

static void *touch_stuck(void *arg)
{
	struct ctx *c = arg;

	return (void *)(uintptr_t)c->map[(NPAGES - 1) * UF_PAGE_SIZE];
}

int main(void)
{
	struct shared sh = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct ctx c[NMM];
	struct uf_stats st;
	pthread_t t;
	void *ret;
	int i, j;
	size_t pg;

	for (i = 0; i < NMM; i++) {
		c[i] = (struct ctx){ .id = i, .sh = &sh };
		c[i].mm = ut_mm_create(NULL);
		CHECK_RET(uf_mmap_ops(c[i].mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops,
				      &c[i], (void **)&c[i].map), 0);
	}
	for (i = 0; i < NMM; i++)
		for (j = 0; j < NMM; j++) {
			CHECK((uf_find_vma(c[i].mm, c[j].map) != NULL) == (i == j),
			      "mm %d finds mm %d's mapping: %d", i, j, i != j);
			if (i != j)
				CHECK_RET(uf_munmap(c[i].mm, c[j].map, NPAGES * UF_PAGE_SIZE), -EINVAL);
		}

	/* each mm serves its own pages, on its own handler thread */
	for (pg = 0; pg < NPAGES - 1; pg++)
		for (i = 0; i < NMM; i++)
			CHECK(c[i].map[pg * UF_PAGE_SIZE] == i * 16 + pg, "mm %d page %zu: %#x",
			      i, pg, c[i].map[pg * UF_PAGE_SIZE]);
	for (i = 0; i < NMM; i++)
		for (j = i + 1; j < NMM; j++)
			CHECK(!pthread_equal(__atomic_load_n(&c[i].handler, __ATOMIC_RELAXED),
					     __atomic_load_n(&c[j].handler, __ATOMIC_RELAXED)),
			      "mm %d and mm %d share a handler thread", i, j);

	/* mm 0's handler is stuck in fault(): mm 1 and 2 still serve */
	CHECK(pthread_create(&t, NULL, touch_stuck, &c[0]) == 0, "pthread_create");
	CHECK(wait_for(&sh, &sh.stuck_started), "mm 0's fault() never started");
	for (i = 1; i < NMM; i++)
		CHECK(c[i].map[(NPAGES - 1) * UF_PAGE_SIZE] == i * 16 + NPAGES - 1,
		      "mm %d while mm 0 is stuck", i);
	set(&sh, &sh.released);
	pthread_join(t, &ret);
	CHECK((uintptr_t)ret == NPAGES - 1, "mm 0 stuck page: %#lx", (unsigned long)(uintptr_t)ret);
	CHECK(!__atomic_load_n(&sh.stuck_timed_out, __ATOMIC_RELAXED),
	      "mm 1/2 could not serve while mm 0's fault() was running");

	/* counters are per mm: MINOR for even ids, MAJOR for odd */
	for (i = 0; i < NMM; i++) {
		CHECK_RET(uf_mm_stats(c[i].mm, &st), 0);
		CHECK(__atomic_load_n(&c[i].calls, __ATOMIC_RELAXED) == NPAGES, "mm %d calls", i);
		CHECK(i % 2 ? st.major_faults == NPAGES && st.minor_faults == 0
			    : st.minor_faults == NPAGES && st.major_faults == 0,
		      "mm %d: minor %lu major %lu", i, (unsigned long)st.minor_faults,
		      (unsigned long)st.major_faults);
	}

	/* destroying one leaves the others working */
	uf_mm_destroy(c[1].mm);
	for (i = 0; i < NMM; i += 2) {
		unsigned char *again;

		c[i].map[1] = 0xCC;
		CHECK(c[i].map[1] == 0xCC && c[i].map[0] == i * 16, "mm %d after mm 1 went", i);
		CHECK_RET(uf_mmap_ops(c[i].mm, UF_PAGE_SIZE, PROT_READ, &ops, &c[i], (void **)&again), 0);
		CHECK(again[0] == i * 16, "mm %d: new mapping", i);
		CHECK_RET(uf_munmap(c[i].mm, again, UF_PAGE_SIZE), 0);
	}
	uf_mm_destroy(c[0].mm);
	uf_mm_destroy(c[2].mm);
	return 0;
}
