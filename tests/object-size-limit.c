/* Description: the documented size limit of objects: uf_object_create()
 * and uf_object_create_mem() return -EFBIG for a size above 2^63 - 4096
 * and only then, so 2^63 - 4096 itself is not -EFBIG, and
 * uf_object_create_mem(2^63) is -EFBIG (not -EINVAL). */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>

static ssize_t zero_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store; (void)off;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static const struct uf_store_ops ops = { .read = zero_read };

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj = NULL;
	int ret;

	ret = uf_object_create_mem(mm, 1ULL << 63, &obj);
	CHECK(ret == -EFBIG, "uf_object_create_mem(2^63) = %d, want -EFBIG", ret);
	ret = uf_object_create(mm, &ops, NULL, (1ULL << 63) - 4096, &obj);
	CHECK(ret != -EFBIG, "uf_object_create(2^63 - 4096) = -EFBIG, the header says "
	      "only sizes above it are");
	if (ret == 0)
		uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
