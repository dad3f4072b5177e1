// SPDX-License-Identifier: MIT
/* Description: uf_mmap at an offset, uf_mprotect of part of a mapping and uf_munmap of parts of an attached object work as for a local one, and the server's copy of the client's table follows: the holes left are still served with the right bytes */
#include "attach-test.h"

#define SIZE	(8 << 20)
#define MB	(1 << 20)

int main(void)
{
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *p, *q, v;
	struct ut_fault f;
	size_t i;

	ut_server_start(&srv, SIZE, NULL);
	ut_watchdog(120);
	ut_catch_signals();
	obj = ut_attach(&mm, srv.sock, O_RDWR);

	/* at an offset: the object's bytes there */
	CHECK_RET(uf_mmap(mm, 2 * MB, PROT_READ, UF_MAP_SHARED, obj, 3 * MB, (void **)&q), 0);
	for (i = 0; i < 2 * MB; i += 4096 + 13)
		CHECK(q[i] == ut_pattern(3 * MB + i), "offset mapping, byte %zu", i);
	CHECK_RET(uf_mmap(mm, 4 * MB, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&p), 0);

	/* read-only in the middle: writes fault, holes there are served */
	CHECK_RET(uf_mprotect(mm, p + MB, MB, PROT_READ), 0);
	CHECK_RET(ut_write(p + MB + 8192, 1, &f), SIGSEGV);
	CHECK_RET(ut_read(p + MB + 3 * 4096, &v, &f), 0);
	CHECK(v == ut_pattern(MB + 3 * 4096), "read-only part");
	CHECK_RET(ut_write(p + 5, 0x42, &f), 0);
	CHECK(q[0] == ut_pattern(3 * MB), "other mapping untouched");

	/* a part unmapped: SIGSEGV there, the rest still served */
	CHECK_RET(uf_munmap(mm, p, MB), 0);
	CHECK_RET(ut_read(p + 4096, &v, &f), SIGSEGV);
	for (i = 2 * MB; i < 4 * MB; i += 4096 * 7 + 1)
		CHECK(p[i] == ut_pattern(i), "byte %zu after a part went", i);
	/* not mapped: errors as for a local object */
	CHECK_RET(uf_msync(mm, p, MB, 0), -ENOMEM);
	CHECK_RET(uf_mprotect(mm, p, 2 * MB, PROT_READ), -ENOMEM);
	/* the rest in two pieces */
	CHECK_RET(uf_munmap(mm, p + 3 * MB, MB), 0);
	CHECK_RET(uf_msync(mm, p + MB, 2 * MB, UF_MS_SYNC), 0);
	CHECK_RET(uf_munmap(mm, p + MB, 2 * MB), 0);
	CHECK_RET(uf_munmap(mm, q, 2 * MB), 0);
	/* what was written reached SOURCE */
	CHECK(ut_file_byte(srv.src, 5) == 0x42, "written byte in SOURCE");
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
