// SPDX-License-Identifier: MIT
/* Description: a ufault client attached (uf_object_attach) to ufault-serve serving a packed SOURCE maps the original bytes, zero pages included, and reads them with uf_object_pread(); the object is read-only: an O_RDWR attach is refused with -EROFS */
#include "pack-test.h"
#include "serve-test.h"

#include <sys/mman.h>

#define SIZE	(8u << 20)

static enum pt_kind kind(uint64_t pg)
{
	return pg % 3 == 1 || (pg >= 1000 && pg < 1200) ? PT_ZERO : pg % 2 ? PT_TEXT : PT_PATTERN;
}

int main(void)
{
	unsigned char *map, want[UF_PAGE_SIZE], buf[3 * UF_PAGE_SIZE];
	struct uf_object *obj = NULL;
	struct ut_server srv;
	struct pt_image im;
	struct uf_mm *mm;
	int ret;

	ut_watchdog(60);
	pt_make(&im, SIZE, kind, 0);
	ut_server_source = im.packed;
	ut_server_start(&srv, 4096, NULL);
	mm = ut_mm_create(NULL);
	ret = uf_object_attach(mm, srv.sock, O_RDWR, &obj);
	if (ret == -EOPNOTSUPP || ret == -ENOSYS) {
		printf("skip: no userfaultfd for shared memory here\n");
		return UT_SKIP;
	}
	CHECK(ret == -EROFS, "O_RDWR attach to a packed SOURCE: %d, want -EROFS", ret);
	CHECK_RET(uf_object_attach(mm, srv.sock, O_RDONLY, &obj), 0);
	CHECK(uf_object_size(obj) == SIZE, "size %lu", (unsigned long)uf_object_size(obj));
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	for (uint64_t pg = 0; pg < SIZE / UF_PAGE_SIZE; pg++) {
		CHECK(pread(im.src_fd, want, UF_PAGE_SIZE, (off_t)(pg * UF_PAGE_SIZE)) == UF_PAGE_SIZE,
		      "pread");
		CHECK(!memcmp(want, map + pg * UF_PAGE_SIZE, UF_PAGE_SIZE), "page %lu differs",
		      (unsigned long)pg);
	}
	CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), 999 * UF_PAGE_SIZE + 7), sizeof(buf));
	CHECK(!memcmp(buf, map + 999 * UF_PAGE_SIZE + 7, sizeof(buf)), "pread differs");
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
