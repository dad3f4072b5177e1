// SPDX-License-Identifier: MIT
/* Description: while a Firecracker-style client is served a region of SOURCE, a writer (an O_RDWR ufault client) cannot cut or punch that region: uf_object_truncate() below the region's end and uf_object_punch_hole() over it fail with -EBUSY, and the client reads SOURCE's bytes, never zeros; growing, and cutting past every region, still work, and once the client has gone the truncate does */
#include "attach-test.h"

#define SIZE	(8UL << 20)

/* The writer: 1 size: truncate; 2 off: punch 1 MiB at off; 0: done. */
static void writer(int in, int out, void *arg)
{
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, arg, O_RDWR);
	long w;

	ut_watchdog(60);
	ut_say(out, 0);
	while ((w = ut_hear(in)) > 0) {
		long x = ut_hear(in);

		if (w == 1)
			ut_say(out, uf_object_truncate(obj, (uint64_t)x));
		else
			ut_say(out, uf_object_punch_hole(obj, (uint64_t)x, 1 << 20));
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

/* The VMM: 1: read the second half, answer wrong pages * 65536 + SIGBUS
 * count; 0: exit. */
static void vmm(int in, int out, void *arg)
{
	const size_t len = SIZE;
	const uint64_t off = 0;
	struct ut_fault f;
	struct ut_fc fc;
	size_t pg, zeros = 0, bus = 0;

	ut_watchdog(60);
	ut_catch_signals();
	ut_fc_map(&fc, 1, &len, &off);
	if (fc.uffd < 0)
		exit(UT_SKIP);
	ut_fc_handshake(&fc, arg);
	/* a few pages in (no stream to run ahead of) */
	for (pg = 0; pg < SIZE / 2; pg += 64 * 4096)
		CHECK((unsigned char)fc.base[0][pg] == ut_pattern(pg), "byte %zu", pg);
	ut_say(out, 0);
	if (ut_hear(in) != 1)
		return;
	for (pg = SIZE / 2; pg < SIZE; pg += 4096) {
		unsigned char v;

		if (ut_read(fc.base[0] + pg + 5, &v, &f))
			bus++;
		else if (v != ut_pattern(pg + 5) && zeros++ < 3)
			fprintf(stderr, "page %zu reads %#x, SOURCE has %#x\n", pg >> 12, v,
				ut_pattern(pg + 5));
	}
	ut_say(out, (long)(zeros * 65536 + bus));
	ut_hear(in);
}

int main(void)
{
	struct ut_server srv;
	struct ut_client c, v;
	long r1, r2, r3, got;
	int st;

	ut_server_start(&srv, SIZE, NULL);
	ut_client_start(&c, writer, srv.sock);
	ut_client_start(&v, vmm, srv.sock);
	/* (after the forks: no thread of the test's at a fork, ThreadSanitizer) */
	ut_watchdog(120);
	CHECK_RET(ut_hear(c.from), 0);
	got = ut_hear(v.from);
	if (got < 0) {
		st = ut_client_wait(&v);
		if (st == UT_SKIP)
			return UT_SKIP;
		CHECK(0, "the VMM died: %d", st);
	}
	/* the writer cuts SOURCE to 4 MiB and back, punches 1 MiB */
	r1 = ut_ask(&c, 1, (long)SIZE / 2);
	r2 = ut_ask(&c, 1, (long)SIZE);
	r3 = ut_ask(&c, 2, (long)SIZE / 2 + (1 << 20));
	ut_say(v.to, 1);
	got = ut_hear(v.from);
	printf("truncate down %ld, up %ld, punch %ld; %ld wrong pages, %ld SIGBUS\n", r1, r2,
	       r3, got / 65536, got % 65536);
	CHECK(got >= 0, "the VMM died");
	CHECK(got / 65536 == 0, "the VMM read %ld pages that are not SOURCE's", got / 65536);
	CHECK_RET(got % 65536, 0);
	CHECK_RET(r1, -EBUSY);
	CHECK_RET(r3, -EBUSY);
	/* growing, and cutting what no region shows, are no one's loss */
	CHECK_RET(ut_ask(&c, 1, (long)SIZE * 2), 0);
	CHECK_RET(ut_ask(&c, 2, (long)SIZE + (1 << 20)), 0);
	CHECK_RET(ut_ask(&c, 1, (long)SIZE), 0);
	/* the VMM gone, its region goes: SOURCE is the writer's again */
	ut_say(v.to, 0);
	CHECK_RET(ut_client_wait(&v), 0);
	for (;;) {
		long r = ut_ask(&c, 1, (long)SIZE / 2);

		if (r == 0)
			break;
		CHECK_RET(r, -EBUSY);
		usleep(10000);
	}
	ut_say(c.to, 0);
	CHECK_RET(ut_client_wait(&c), 0);
	printf("pass: the served region could not be cut while served\n");
	return 0;
}
