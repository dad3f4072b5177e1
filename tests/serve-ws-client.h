/* SPDX-License-Identifier: MIT */
/*
 * The client of a working set pushed into a served process
 * (uf_object_serve_prefetch tests), a pair-client.h client: how it looks
 * at a set's pages.  Not a test program itself; the test defines
 * set_page(), the set's pages in recorded order.
 */
#ifndef UT_SERVE_WS_CLIENT_H
#define UT_SERVE_WS_CLIENT_H

#include "pair-client.h"

static uint64_t set_page(size_t i);

/* Record @rec from @obj of @mm (both ended here): the set's first @n
 * pages touched in order through a mapping of its first @size bytes. */
static __attribute__((unused)) void sws_record(struct uf_mm *mm, struct uf_object *obj,
					       const char *rec, size_t size, size_t n)
{
	unsigned char *m;
	size_t i;

	CHECK_RET(uf_mmap(mm, size, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&m), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (i = 0; i < n; i++)
		CHECK(m[set_page(i) * UF_PAGE_SIZE] == ut_pattern(set_page(i) * UF_PAGE_SIZE),
		      "recording");
	CHECK_RET(uf_object_record_stop(obj), (long)n);
	CHECK_RET(uf_munmap(mm, m, size), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

/* Of the set's pages [@from, @to) in @base, how many are in (mincore,
 * which faults nothing). */
static uint64_t sws_present(const unsigned char *base, size_t from, size_t to)
{
	uint64_t n = 0;
	size_t i;

	for (i = from; i < to; i++) {
		unsigned char vec = 0;

		if (mincore((void *)(base + set_page(i) * UF_PAGE_SIZE), UF_PAGE_SIZE, &vec) == 0 &&
		    (vec & 1))
			n++;
	}
	return n;
}

/* Touch the set's first @n pages in @base: the pages whose bytes are
 * wrong.  Not instrumented: a sanitizer's shadow of the pages read would
 * fault in as the client's faults too. */
__attribute__((no_sanitize("address", "thread"), noinline))
static uint64_t sws_touch(const unsigned char *base, size_t n)
{
	uint64_t bad = 0;
	size_t i;

	for (i = 0; i < n; i++)
		bad += base[set_page(i) * UF_PAGE_SIZE + i % UF_PAGE_SIZE] !=
		       ut_pattern(set_page(i) * UF_PAGE_SIZE + i % UF_PAGE_SIZE);
	return bad;
}

#endif
