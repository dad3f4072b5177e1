/* Description: uf_object_truncate() and uf_object_punch_hole() on a
 * read-only object return -EROFS (file stores opened O_RDONLY, and a memory
 * store without ->write); a punch of length 0 returns -EINVAL; NULL objects
 * return -EINVAL; after each error the size, the mapped bytes, pread and the
 * file are unchanged. */
#define _GNU_SOURCE
#include "trunc-target.h"

#define SIZE	(4 * PG + 10)

/* A read-only memory store: ->read only. */
struct ro_store {
	unsigned char data[SIZE];
};

static ssize_t ro_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct ro_store *s = store;

	if (off >= SIZE)
		return 0;
	if (len > SIZE - off)
		len = SIZE - off;
	memcpy(buf, s->data + off, len);
	return (ssize_t)len;
}

static const struct uf_store_ops ro_ops = { .read = ro_read };

static void unchanged(struct uf_object *obj, const unsigned char *map, const char *name,
		      const char *path, const char *step)
{
	unsigned char buf[SIZE];
	char what[128];
	size_t i;

	CHECK(uf_object_size(obj) == SIZE, "%s: %s: size %lu", name, step,
	      (unsigned long)uf_object_size(obj));
	for (i = 0; i < SIZE; i++)
		buf[i] = ut_pattern(i);
	snprintf(what, sizeof(what), "%s: %s: mapping", name, step);
	tt_expect_bytes(what, map, buf, SIZE);
	CHECK_RET(uf_object_pread(obj, buf, SIZE, 0), SIZE);
	for (i = 0; i < SIZE; i++)
		CHECK(buf[i] == ut_pattern(i), "%s: %s: pread byte %zu", name, step, i);
	if (path) {
		struct stat st;

		CHECK(stat(path, &st) == 0 && st.st_size == SIZE, "%s: %s: file size", name, step);
	}
}

static void check_object(struct uf_mm *mm, struct uf_object *obj, const char *name,
			 const char *path, bool ro)
{
	unsigned char *map;
	int ret;

	CHECK_RET(uf_mmap(mm, 5 * PG, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	unchanged(obj, map, name, path, "before");
	if (ro) {
		CHECK_RET(uf_object_truncate(obj, 2 * PG), -EROFS);
		unchanged(obj, map, name, path, "truncate shrink");
		CHECK_RET(uf_object_truncate(obj, 8 * PG), -EROFS);
		unchanged(obj, map, name, path, "truncate grow");
		CHECK_RET(uf_object_truncate(obj, SIZE), -EROFS);
		CHECK_RET(uf_object_punch_hole(obj, PG, PG), -EROFS);
		unchanged(obj, map, name, path, "punch");
		CHECK_RET(uf_object_punch_hole(obj, 0, SIZE), -EROFS);
		unchanged(obj, map, name, path, "punch all");
	}
	/* zero length: -EINVAL (a read-only object may say -EROFS first) */
	ret = uf_object_punch_hole(obj, PG, 0);
	CHECK(ret == -EINVAL || (ro && ret == -EROFS), "%s: punch len 0 returned %d", name, ret);
	ret = uf_object_punch_hole(obj, 0, 0);
	CHECK(ret == -EINVAL || (ro && ret == -EROFS), "%s: punch len 0 returned %d", name, ret);
	unchanged(obj, map, name, path, "punch len 0");
	CHECK_RET(uf_munmap(mm, map, 5 * PG), 0);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct ro_store *ros = calloc(1, sizeof(*ros));
	struct uf_object *obj;
	size_t i;
	int s;

	CHECK(ros, "out of memory");
	ut_catch_signals();

	CHECK_RET(uf_object_truncate(NULL, 0), -EINVAL);
	CHECK_RET(uf_object_punch_hole(NULL, 0, 1), -EINVAL);

	/* read-only memory store */
	for (i = 0; i < SIZE; i++)
		ros->data[i] = ut_pattern(i);
	CHECK_RET(uf_object_create(mm, &ro_ops, ros, SIZE, &obj), 0);
	check_object(mm, obj, "read-only mem", NULL, true);
	uf_object_put(obj);

	/* read-only files, and the writable objects for punch len 0 */
	for (s = 0; s < UT_NSTORES; s++) {
		char path[256];

		obj = ut_object(mm, (enum ut_store)s, SIZE, path, sizeof(path));
		check_object(mm, obj, ut_store_names[s], path[0] ? path : NULL, false);
		uf_object_put(obj);
		if (!path[0])
			continue;
		CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
		check_object(mm, obj, ut_store_names[s], path, true);
		uf_object_put(obj);
		unlink(path);
	}
	free(ros);
	uf_mm_destroy(mm);
	return 0;
}
