/* Description: dirty tracking is exact across two shared writable mappings
 * of one object, with asynchronous and synchronous write-protect (no
 * budget, no wp-async, a budget): pages filled through one mapping and
 * written through the other reach the store, pages only read there do not;
 * so for a page filled while the other mapping exists (by a fault there,
 * by uf_object_pread(), by uf_object_pwrite()), and for a third mapping
 * made once pages are cached.  pages_written counts exactly the pages
 * written. */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	512
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define PG	UF_PAGE_SIZE

struct ctx {
	const char *mode;
	struct uf_mm *mm;
	struct os_store store;
	struct uf_object *obj;
	unsigned char *a, *b;
	size_t wlog;		/* store writes seen so far */
	uint64_t written;	/* pages_written so far */
	bool want[NPAGES];	/* pages written since the last sync */
	unsigned char val[NPAGES];	/* the byte written at offset 11 */
};

static void poke(struct ctx *c, unsigned char *map, uint64_t pg, unsigned char v)
{
	struct ut_fault f;

	CHECK(os_poke(map + pg * PG + 11, v, &f) == 0, "%s: write to page %lu faulted", c->mode,
	      (unsigned long)pg);
	c->want[pg] = true;
	c->val[pg] = v;
}

static void peek(struct ctx *c, const unsigned char *map, uint64_t pg)
{
	unsigned char want = c->val[pg] ? c->val[pg] : ut_pattern(pg * PG + 11);

	CHECK(map[pg * PG + 11] == want, "%s: page %lu reads %#x, want %#x", c->mode,
	      (unsigned long)pg, map[pg * PG + 11], want);
}

/* Sync through @how and check that exactly the pages written since the
 * last sync reached the store, with their bytes. */
static void sync_check(struct ctx *c, const char *step, int how)
{
	unsigned int count[NPAGES];
	struct uf_stats st;
	uint64_t pg, n = 0;

	if (how == 0) {
		CHECK_RET(uf_msync(c->mm, c->a, SIZE, UF_MS_SYNC), 0);
		CHECK_RET(uf_msync(c->mm, c->b, SIZE, UF_MS_SYNC), 0);
	} else {
		CHECK_RET(uf_object_sync(c->obj), 0);
	}
	os_written_pages(&c->store, c->wlog, count, NPAGES, SIZE);
	for (pg = 0; pg < NPAGES; pg++) {
		CHECK(count[pg] == (c->want[pg] ? 1u : 0u), "%s: %s: page %lu written %u times%s",
		      c->mode, step, (unsigned long)pg, count[pg],
		      c->want[pg] ? " (it was written)" : " (it was only read)");
		if (c->want[pg]) {
			CHECK(c->store.data[pg * PG + 11] == c->val[pg],
			      "%s: %s: page %lu holds %#x in the store, want %#x", c->mode, step,
			      (unsigned long)pg, c->store.data[pg * PG + 11], c->val[pg]);
			n++;
		}
	}
	CHECK_RET(uf_mm_stats(c->mm, &st), 0);
	CHECK(st.pages_written - c->written == n, "%s: %s: pages_written grew by %lu, want %lu",
	      c->mode, step, (unsigned long)(st.pages_written - c->written), (unsigned long)n);
	c->written = st.pages_written;
	c->wlog = os_nwrites(&c->store);
	memset(c->want, 0, sizeof(c->want));
}

static void run(struct ctx *c)
{
	unsigned char buf[PG], *m3;
	uint64_t pg;

	os_init(&c->store, SIZE);
	c->obj = os_object(c->mm, &c->store);
	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c->obj, 0,
			  (void **)&c->a), 0);
	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c->obj, 0,
			  (void **)&c->b), 0);

	/* filled through A; written and read through B */
	for (pg = 0; pg < 64; pg++)
		peek(c, c->a, pg);
	for (pg = 0; pg < 64; pg += 4)
		poke(c, c->b, pg, (unsigned char)(0x80 + pg));
	for (pg = 1; pg < 64; pg += 4)
		peek(c, c->b, pg);
	sync_check(c, "filled in A, written in B", 0);

	/* filled through B (a fault there), written and read through A */
	for (pg = 200; pg < 232; pg++)
		peek(c, c->b, pg);
	for (pg = 200; pg < 232; pg += 3)
		poke(c, c->a, pg, (unsigned char)(0x10 + pg));
	for (pg = 201; pg < 232; pg += 3)
		peek(c, c->a, pg);
	sync_check(c, "filled in B, written in A", 1);

	/* filled by uf_object_pread() (neither mapping faulted) */
	CHECK_RET(uf_object_pread(c->obj, buf, PG, 300 * PG), PG);
	poke(c, c->b, 300, 0x33);
	peek(c, c->a, 301);
	peek(c, c->b, 302);
	sync_check(c, "filled by pread", 0);

	/* cached by uf_object_pwrite(): written once, then only read */
	memset(buf, 0x5a, sizeof(buf));
	CHECK_RET(uf_object_pwrite(c->obj, buf, PG, 400 * PG), PG);
	c->want[400] = true;
	c->val[400] = 0x5a;
	sync_check(c, "pwrite", 1);
	peek(c, c->a, 400);
	peek(c, c->b, 400);
	sync_check(c, "pwrite, then read", 0);

	/* the same pages again: only what is written now */
	poke(c, c->a, 0, 0x99);
	peek(c, c->b, 4);
	peek(c, c->b, 201);
	sync_check(c, "second round", 1);

	/* a third mapping made once pages are cached */
	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, c->obj, 0,
			  (void **)&m3), 0);
	for (pg = 0; pg < 64; pg += 2)
		peek(c, m3, pg);
	peek(c, m3, 300);
	peek(c, m3, 400);
	poke(c, m3, 8, 0x77);
	poke(c, m3, 210, 0x78);
	sync_check(c, "third mapping", 1);
	CHECK_RET(uf_munmap(c->mm, m3, SIZE), 0);
	sync_check(c, "third mapping unmapped", 1);

	CHECK_RET(uf_munmap(c->mm, c->a, SIZE), 0);
	CHECK_RET(uf_munmap(c->mm, c->b, SIZE), 0);
	uf_object_put(c->obj);
	CHECK(os_nwrites(&c->store) == c->wlog, "%s: %zu store writes after the last sync",
	      c->mode, os_nwrites(&c->store) - c->wlog);
	os_fini(&c->store);
}

int main(void)
{
	static const struct {
		const char *name;
		struct uf_mm_config cfg;
	} modes[] = {
		{ "no budget", { .flags = 0 } },
		{ "no wp-async", { .flags = UF_MM_NO_WP_ASYNC } },
		{ "budget", { .cache_budget = 64 << 20 } },
	};
	size_t m;

	if (!os_have_wp_async())
		return UT_SKIP;
	ut_catch_signals();
	os_watchdog(60);
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct ctx c = { .mode = modes[m].name };

		c.mode = modes[m].name;
		c.mm = ut_mm_create(&modes[m].cfg);
		run(&c);
		uf_mm_destroy(c.mm);
	}
	return UT_PASS;
}
