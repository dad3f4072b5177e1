// SPDX-License-Identifier: MIT
/* Description: ufault-serve --read-only serves a SOURCE it could write as read-only: the log says so, a ufault client's O_RDWR attach gets -EROFS, and an O_RDONLY one reads SOURCE's bytes (a read-only object: a VMM's and a pushed working set's pages reach the client before the cache) */
#include "attach-test.h"

#define SIZE	(1 << 20)

int main(void)
{
	static const char *const opts[] = { "--read-only", NULL };
	struct ut_server srv;
	struct uf_object *obj;
	struct uf_mm *mm;
	unsigned char *p;
	size_t off;
	int ret;

	ut_watchdog(60);
	ut_server_start(&srv, SIZE, opts);
	ut_server_log_wait(&srv, "read-only (--read-only)");
	mm = ut_mm_create(NULL);
	ret = uf_object_attach(mm, srv.sock, O_RDWR, &obj);
	if (ret == -EOPNOTSUPP || ret == -ENOSYS) {
		fprintf(stderr, "no userfaultfd for shared memory here\n");
		return UT_SKIP;
	}
	printf("O_RDWR attach: %s\n", ret ? strerror(-ret) : "attached");
	CHECK_RET(ret, -EROFS);
	uf_mm_destroy(mm);
	obj = ut_attach(&mm, srv.sock, O_RDONLY);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p), 0);
	for (off = 0; off < SIZE; off += 4096)
		CHECK(p[off] == ut_pattern(off) && p[off + 4095] == ut_pattern(off + 4095),
		      "byte %zu", off);
	uf_munmap(mm, p, SIZE);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	printf("pass: served read-only\n");
	return 0;
}
