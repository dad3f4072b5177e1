/* Description: uf_mm_stats() and uf_vma_stats() count each fault() outcome
 * exactly as fault() typed it (minor, major, sigbus, oom; a NULL return
 * that installed nothing as sigbus), per mapping and summed per mm, and the
 * lat_us histogram holds one entry per fault; NULL arguments give -EINVAL. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <sys/mman.h>

#define NPAGES 20
#define SNAP_PAGE (NPAGES - 1)	/* its fault() snapshots the counters */

/* what fault() answers for page @pg; counts of each among pages 0..18 */
enum answer { A_MINOR, A_MAJOR, A_SIGBUS, A_OOM, A_NOINSTALL, A_INSERT_MAJOR };
static enum answer answer_of(uint64_t pg)
{
	static const enum answer table[] = {
		A_MINOR, A_MAJOR, A_MAJOR, A_SIGBUS, A_MINOR, A_OOM, A_MAJOR,
		A_NOINSTALL, A_INSERT_MAJOR, A_MINOR, A_SIGBUS, A_MAJOR, A_MINOR,
		A_OOM, A_OOM, A_MAJOR, A_INSERT_MAJOR, A_MINOR, A_MAJOR,
	};
	return table[pg];
}

struct want {
	uint64_t minor, major, sigbus, oom;
};

struct ctx {
	struct uf_mm *mm;
	struct uf_stats snap_vma, snap_mm;	/* taken inside the last fault() */
	int snap_ret;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page;

	if (fd->pgoff == SNAP_PAGE) {
		/*
		 * One handler thread: every earlier fault has been counted,
		 * latency included, and this one not yet.
		 */
		c->snap_ret = uf_vma_stats(vma, &c->snap_vma) | uf_mm_stats(c->mm, &c->snap_mm);
		fd->type = UF_FAULT_MINOR;
		return uf_page_alloc(c->mm);
	}
	switch (answer_of(fd->pgoff)) {
	case A_SIGBUS:
		fd->type = UF_FAULT_SIGBUS;
		return NULL;
	case A_OOM:
		fd->type = UF_FAULT_OOM;
		return NULL;
	case A_NOINSTALL:
		fd->type = UF_FAULT_MAJOR;
		return NULL;
	case A_INSERT_MAJOR:
		page = uf_page_alloc(c->mm);
		if (!page || uf_vm_insert_page(vma, fd->address, page)) {
			uf_page_put(page);
			fd->type = UF_FAULT_OOM;
			return NULL;
		}
		uf_page_put(page);
		fd->type = UF_FAULT_MAJOR;
		return NULL;
	case A_MAJOR:
		fd->type = UF_FAULT_MAJOR;
		return uf_page_alloc(c->mm);
	default:
		return uf_page_alloc(c->mm);	/* type starts as MINOR */
	}
}

static const struct uf_vm_operations ops = { .fault = fault };

static void expect(const struct uf_stats *st, const struct want *w, uint64_t lat_extra,
		   const char *what)
{
	uint64_t lat = 0;
	int i;

	CHECK(st->minor_faults == w->minor && st->major_faults == w->major &&
	      st->sigbus == w->sigbus && st->oom == w->oom,
	      "%s: minor %lu major %lu sigbus %lu oom %lu, want %lu %lu %lu %lu", what,
	      (unsigned long)st->minor_faults, (unsigned long)st->major_faults,
	      (unsigned long)st->sigbus, (unsigned long)st->oom, (unsigned long)w->minor,
	      (unsigned long)w->major, (unsigned long)w->sigbus, (unsigned long)w->oom);
	for (i = 0; i < UF_LAT_BUCKETS; i++)
		lat += st->lat_us[i];
	CHECK(lat == w->minor + w->major + w->sigbus + w->oom + lat_extra,
	      "%s: lat_us holds %lu faults, want %lu", what, (unsigned long)lat,
	      (unsigned long)(w->minor + w->major + w->sigbus + w->oom + lat_extra));
	CHECK(st->pages_read == 0 && st->cache_pages == 0 && st->readahead_pages == 0,
	      "%s: object counters moved for operation mappings", what);
}

/* Touch pages [0, n) of @map once each; tally what fault() will answer. */
static void touch(unsigned char *map, size_t n, struct want *w)
{
	struct ut_fault f;
	unsigned char v;
	size_t pg;

	for (pg = 0; pg < n; pg++) {
		int sig = ut_read(map + pg * UF_PAGE_SIZE + 11, &v, &f);

		switch (answer_of(pg)) {
		case A_MINOR:
			w->minor++;
			CHECK(sig == 0, "page %zu: signal %d", pg, sig);
			break;
		case A_MAJOR:
		case A_INSERT_MAJOR:
			w->major++;
			CHECK(sig == 0, "page %zu: signal %d", pg, sig);
			break;
		case A_OOM:
			w->oom++;
			CHECK(sig == SIGBUS, "page %zu: signal %d, want SIGBUS", pg, sig);
			break;
		default:
			w->sigbus++;
			CHECK(sig == SIGBUS, "page %zu: signal %d, want SIGBUS", pg, sig);
			break;
		}
	}
}

int main(void)
{
	struct ctx c0 = { 0 }, c1 = { 0 };
	struct want w0 = { 0 }, w1 = { 0 }, wmm;
	struct uf_stats st;
	unsigned char *m0, *m1;
	struct uf_vma *v0, *v1;

	ut_catch_signals();
	c0.mm = c1.mm = ut_mm_create(NULL);
	CHECK_RET(uf_mm_stats(c0.mm, &st), 0);
	expect(&st, &w0, 0, "new mm");
	CHECK_RET(uf_mm_stats(NULL, &st), -EINVAL);
	CHECK_RET(uf_mm_stats(c0.mm, NULL), -EINVAL);
	CHECK_RET(uf_vma_stats(NULL, &st), -EINVAL);

	CHECK_RET(uf_mmap_ops(c0.mm, NPAGES * UF_PAGE_SIZE, PROT_READ, &ops, &c0, (void **)&m0), 0);
	CHECK_RET(uf_mmap_ops(c0.mm, NPAGES * UF_PAGE_SIZE, PROT_READ, &ops, &c1, (void **)&m1), 0);
	v0 = uf_find_vma(c0.mm, m0);
	v1 = uf_find_vma(c0.mm, m1);
	CHECK(v0 && v1, "uf_find_vma");
	CHECK_RET(uf_vma_stats(v0, NULL), -EINVAL);
	CHECK_RET(uf_vma_stats(v1, &st), 0);
	expect(&st, &w1, 0, "new vma");

	touch(m0, SNAP_PAGE, &w0);
	touch(m1, 10, &w1);
	/* one more fault on each: fault() snapshots the counters */
	CHECK(m0[SNAP_PAGE * UF_PAGE_SIZE] == 0 && m1[SNAP_PAGE * UF_PAGE_SIZE] == 0, "snapshot pages");
	CHECK_RET(uf_munmap(c0.mm, m1, NPAGES * UF_PAGE_SIZE), 0);	/* waits for the handler */

	CHECK(c0.snap_ret == 0 && c1.snap_ret == 0, "stats inside fault(): %d %d",
	      c0.snap_ret, c1.snap_ret);
	expect(&c0.snap_vma, &w0, 0, "mapping 0");
	/* mapping 1's snapshot: mapping 0's faults, its own, and mapping 0's
	 * snapshot fault, whose latency is counted too by then */
	expect(&c1.snap_vma, &w1, 0, "mapping 1");
	wmm = (struct want){ w0.minor + w1.minor + 1, w0.major + w1.major, w0.sigbus + w1.sigbus,
			     w0.oom + w1.oom };
	expect(&c1.snap_mm, &wmm, 0, "mm, seen from mapping 1's last fault");

	/* after the unmap: the mm keeps the counts of the mapping it lost */
	wmm.minor++;
	CHECK_RET(uf_mm_stats(c0.mm, &st), 0);
	expect(&st, &wmm, 0, "mm after unmapping mapping 1");
	CHECK_RET(uf_munmap(c0.mm, m0, NPAGES * UF_PAGE_SIZE), 0);
	uf_mm_destroy(c0.mm);
	return 0;
}
