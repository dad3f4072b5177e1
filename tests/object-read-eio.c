/* Description: a store read that fails (-EIO) for one page gives an access
 * to that page SIGBUS (exact si_addr, counted in uf_stats.sigbus) through
 * shared and private mappings, for reads and writes, every time it is
 * touched -- never zero or stale bytes -- while every other page, the
 * neighbours inside the same readahead window included, reads correctly;
 * uf_object_pread() of the page returns the error; once the store is
 * repaired the page reads its true bytes.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	64
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define BAD	21

static void set_bad(struct os_store *s, uint64_t page)
{
	pthread_mutex_lock(&s->lock);
	s->bad_page = page;
	pthread_mutex_unlock(&s->lock);
}

/* Read every page of @map in order; only page BAD may (and must) fault. */
static void scan(struct uf_mm *mm, unsigned char *map, const char *what)
{
	uint64_t p, sigbus0 = os_vma_stats(mm, map).sigbus;
	unsigned char buf[UF_PAGE_SIZE];
	struct ut_fault f;

	for (p = 0; p < NPAGES; p++) {
		int sig = ut_copy_from(buf, map + p * UF_PAGE_SIZE, UF_PAGE_SIZE, &f);
		uint64_t i;

		if (p == BAD) {
			CHECK(sig == SIGBUS, "%s: bad page: signal %d", what, sig);
			CHECK(f.addr == map + p * UF_PAGE_SIZE, "%s: si_addr %p, want %p", what,
			      f.addr, (void *)(map + p * UF_PAGE_SIZE));
			continue;
		}
		CHECK(sig == 0, "%s: page %lu: signal %d", what, (unsigned long)p, sig);
		for (i = 0; i < UF_PAGE_SIZE; i++)
			CHECK(buf[i] == ut_pattern(p * UF_PAGE_SIZE + i), "%s: byte %lu = %u", what,
			      (unsigned long)(p * UF_PAGE_SIZE + i), buf[i]);
	}
	CHECK(os_vma_stats(mm, map).sigbus == sigbus0 + 1, "%s: sigbus count %lu, want %lu",
	      what, (unsigned long)os_vma_stats(mm, map).sigbus, (unsigned long)sigbus0 + 1);
}

/* Copy the page at @p once a try gets no SIGBUS: 10 ms between tries, 500
 * tries at most.  The signal of the last try, or 0. */
static int read_repaired(unsigned char *buf, const unsigned char *p, struct ut_fault *f)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int i, sig = 0;

	for (i = 0; i < 500; i++) {
		sig = ut_copy_from(buf, p, UF_PAGE_SIZE, f);
		if (sig != SIGBUS)
			break;
		nanosleep(&pause, NULL);
	}
	return sig;
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	unsigned char *shared, *priv, v, buf[UF_PAGE_SIZE];
	struct uf_stats mst;
	struct os_store st;
	struct uf_object *obj;
	struct ut_fault f;
	int i;

	ut_catch_signals();
	os_watchdog(30);
	os_init(&st, SIZE);
	set_bad(&st, BAD);
	obj = os_object(mm, &st);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0,
			  (void **)&shared), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0,
			  (void **)&priv), 0);

	/* sequential: the readahead windows cover the bad page */
	scan(mm, shared, "shared scan");
	scan(mm, priv, "private scan");

	/* touched again, and in the middle of the page, and by a write */
	for (i = 0; i < 3; i++) {
		unsigned char *a = shared + BAD * UF_PAGE_SIZE + 100 * (unsigned int)i;

		CHECK(ut_read(a, &v, &f) == SIGBUS, "shared retouch %d: signal %d", i, f.sig);
		CHECK(f.addr == a, "retouch si_addr %p, want %p", f.addr, (void *)a);
	}
	CHECK(os_poke(shared + BAD * UF_PAGE_SIZE + 8, 1, &f) == SIGBUS, "shared write: %d", f.sig);
	CHECK(f.addr == shared + BAD * UF_PAGE_SIZE + 8, "write si_addr %p", f.addr);
	CHECK(os_poke(priv + BAD * UF_PAGE_SIZE + 9, 1, &f) == SIGBUS, "private write: %d", f.sig);
	CHECK(f.addr == priv + BAD * UF_PAGE_SIZE + 9, "write si_addr %p", f.addr);

	CHECK(uf_object_pread(obj, buf, 10, BAD * UF_PAGE_SIZE + 5) == -EIO, "pread of the bad page");
	CHECK(uf_object_pread(obj, buf, 2 * UF_PAGE_SIZE, (BAD - 1) * UF_PAGE_SIZE) == -EIO,
	      "pread across the bad page");
	mst = os_mm_stats(mm);
	/* at least the first SIGBUS of each mapping went through fault();
	 * later touches may be refused by the kernel itself (poison) */
	CHECK(mst.sigbus >= 2, "mm sigbus count %lu", (unsigned long)mst.sigbus);

	/* repaired: the true bytes, through both mappings and pread.  A
	 * marker may still stand for a moment (ufault(7): at the latest 50 ms
	 * after; later on a loaded machine), so a reader pauses between tries,
	 * as the page says; a marker never lifted fails within 5 s. */
	set_bad(&st, UINT64_MAX);
	CHECK(read_repaired(buf, shared + BAD * UF_PAGE_SIZE, &f) == 0, "repaired: signal %d",
	      f.sig);
	for (i = 0; i < (int)UF_PAGE_SIZE; i++)
		CHECK(buf[i] == ut_pattern(BAD * UF_PAGE_SIZE + (uint64_t)i), "repaired byte %d = %u",
		      i, buf[i]);
	CHECK(read_repaired(buf, priv + BAD * UF_PAGE_SIZE, &f) == 0 &&
	      buf[4095] == ut_pattern(BAD * UF_PAGE_SIZE + 4095), "repaired private read");
	CHECK_RET(uf_object_pread(obj, buf, 1, BAD * UF_PAGE_SIZE + 1), 1);
	CHECK(buf[0] == ut_pattern(BAD * UF_PAGE_SIZE + 1), "repaired pread byte %u", buf[0]);

	CHECK_RET(uf_munmap(mm, priv, SIZE), 0);
	CHECK_RET(uf_munmap(mm, shared, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	os_fini(&st);
	return 0;
}
