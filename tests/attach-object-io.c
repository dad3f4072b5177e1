// SPDX-License-Identifier: MIT
/* Description: uf_object_pread, pwrite, size, truncate and punch_hole of an attached object behave as for a local one, and reach the other client's mapping: bytes written show there, punched pages read zeros, a truncate gives SIGBUS past the new end there; a read-only attach refuses writes */
#include "attach-test.h"

#define SIZE	(4 << 20)
#define PG	4096

/* The reader: maps everything, reports what it sees on request.
 * 1 off: the byte at off (or -SIGBUS); 0: done. */
static void reader(int in, int out, void *arg)
{
	const char *sock = arg;
	struct uf_mm *mm;
	struct uf_object *obj = ut_attach(&mm, sock, O_RDONLY);
	unsigned char *p, v;
	struct ut_fault f;
	long w;

	ut_watchdog(60);
	ut_catch_signals();
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	/* read-only: no writes, no writable shared mapping */
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), -EROFS);
	CHECK_RET(uf_object_truncate(obj, 0), -EROFS);
	{
		void *q;

		CHECK_RET(uf_mmap(mm, PG, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, &q), -EACCES);
	}
	ut_say(out, 0);
	while ((w = ut_hear(in)) > 0) {
		long off = ut_hear(in);

		if (w == 1) {
			int sig = ut_read(p + off, &v, &f);

			ut_say(out, sig ? -sig : v);
		} else {
			ut_say(out, (long)uf_object_size(obj));
		}
	}
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	struct ut_server srv;
	struct ut_client r;
	struct uf_mm *mm;
	struct uf_object *obj;
	char buf[3 * PG];
	unsigned char *p;
	int i;

	/* the clients first: no thread of the test's may be there at a fork
	 * (ThreadSanitizer) */
	ut_server_start(&srv, SIZE, NULL);
	ut_client_start(&r, reader, srv.sock);
	ut_watchdog(120);
	if (ut_hear(r.from) < 0)
		return ut_client_wait(&r) == UT_SKIP ? UT_SKIP : UT_FAIL;
	obj = ut_attach(&mm, srv.sock, O_RDWR);

	CHECK_RET(uf_object_size(obj), SIZE);
	/* pread: SOURCE's bytes, across pages, short at the end */
	CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), PG - 10), sizeof(buf));
	for (i = 0; i < (int)sizeof(buf); i++)
		CHECK(buf[i] == (char)ut_pattern(PG - 10 + i), "pread byte %d", i);
	CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), SIZE - 100), 100);
	CHECK_RET(uf_object_pread(obj, buf, 10, SIZE + PG), 0);
	/* the reader has the pages cached before the changes */
	CHECK_RET(ut_ask(&r, 1, 5 * PG), ut_pattern(5 * PG));
	CHECK_RET(ut_ask(&r, 1, 3 * PG + 7), ut_pattern(3 * PG + 7));
	CHECK_RET(ut_ask(&r, 1, SIZE - PG), ut_pattern(SIZE - PG));

	/* pwrite: in the reader's mapping at once, and in pread */
	CHECK_RET(uf_object_pwrite(obj, "hello", 5, 5 * PG), 5);
	CHECK_RET(ut_ask(&r, 1, 5 * PG + 1), 'e');
	CHECK_RET(uf_object_pread(obj, buf, 5, 5 * PG), 5);
	CHECK(!memcmp(buf, "hello", 5), "pread after pwrite");
	/* and through this client's own mapping */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	CHECK(!memcmp(p + 5 * PG, "hello", 5), "mapping after pwrite");

	/* punch: zeros in the reader's mapping */
	CHECK_RET(uf_object_punch_hole(obj, 3 * PG, PG), 0);
	CHECK_RET(ut_ask(&r, 1, 3 * PG + 7), 0);
	CHECK_RET(ut_ask(&r, 1, 4 * PG + 7), ut_pattern(4 * PG + 7));

	/* truncate: SIGBUS past the end in the reader, the size there too */
	CHECK_RET(uf_object_truncate(obj, SIZE / 2), 0);
	CHECK_RET(uf_object_size(obj), SIZE / 2);
	CHECK_RET(ut_ask(&r, 2, 0), SIZE / 2);
	CHECK_RET(ut_ask(&r, 1, SIZE - PG), -SIGBUS);
	CHECK_RET(ut_ask(&r, 1, SIZE / 2 + 10), -SIGBUS);
	CHECK_RET(ut_ask(&r, 1, SIZE / 2 - 10), ut_pattern(SIZE / 2 - 10));

	/* pwrite past the end extends */
	CHECK_RET(uf_object_pwrite(obj, "tail", 4, SIZE / 2 + PG), 4);
	CHECK_RET(uf_object_size(obj), SIZE / 2 + PG + 4);
	CHECK_RET(ut_ask(&r, 1, SIZE / 2 + PG + 2), 'i');
	CHECK_RET(ut_ask(&r, 1, SIZE / 2 + 8), 0);	/* the gap reads zeros */

	ut_say(r.to, 0);
	CHECK_RET(ut_client_wait(&r), 0);
	CHECK_RET(uf_munmap(mm, p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
