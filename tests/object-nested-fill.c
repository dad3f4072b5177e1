/* Description: a store whose ->read calls uf_object_pread() on another
 * object (an overlay), nested three deep and at an unaligned offset,
 * fills the right bytes through a mapping and through uf_object_pread():
 * each fill level reads into its own buffer, so an inner fill neither
 * overwrites nor frees the buffer of the fill that called it.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define PAGES	40
#define SHIFT	100		/* each level shows its lower object from here */

struct overlay {
	struct uf_object *lower;
};

static ssize_t overlay_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct overlay *o = store;

	return uf_object_pread(o->lower, buf, len, off + SHIFT);
}

static const struct uf_store_ops overlay_ops = {
	.read = overlay_read,
};

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	/* each level is one page larger than the one above, so an inner
	 * fill needs a larger buffer than the fill that called it */
	uint64_t base_size = (PAGES + 3) * UF_PAGE_SIZE;
	struct overlay ov[3];
	struct uf_object *obj[4];
	char path[256];
	unsigned char *map, *buf;
	uint64_t i, size;
	int l;

	ut_catch_signals();
	os_watchdog(60);
	obj[0] = ut_object(mm, UT_STORE_MEM, base_size, path, sizeof(path));
	for (l = 1; l <= 3; l++) {
		ov[l - 1].lower = obj[l - 1];
		size = base_size - (uint64_t)l * UF_PAGE_SIZE;
		CHECK_RET(uf_object_create(mm, &overlay_ops, &ov[l - 1], size, &obj[l]), 0);
	}
	size = uf_object_size(obj[3]);

	/* through a mapping of the top object: sequential faults read ahead */
	CHECK_RET(uf_mmap(mm, size, PROT_READ, UF_MAP_SHARED, obj[3], 0, (void **)&map), 0);
	for (i = 0; i < size; i++)
		CHECK(map[i] == ut_pattern(i + 3 * SHIFT), "mapped byte %lu = %u, want %u",
		      (unsigned long)i, map[i], ut_pattern(i + 3 * SHIFT));
	CHECK_RET(uf_munmap(mm, map, size), 0);

	/* through uf_object_pread of a fresh top object, in one large read */
	uf_object_put(obj[3]);
	CHECK_RET(uf_object_create(mm, &overlay_ops, &ov[2], size, &obj[3]), 0);
	buf = malloc(size);
	CHECK(buf, "out of memory");
	CHECK_RET(uf_object_pread(obj[3], buf, size, 0), size);
	for (i = 0; i < size; i++)
		CHECK(buf[i] == ut_pattern(i + 3 * SHIFT), "pread byte %lu = %u, want %u",
		      (unsigned long)i, buf[i], ut_pattern(i + 3 * SHIFT));
	free(buf);

	for (l = 3; l >= 0; l--)
		uf_object_put(obj[l]);
	uf_mm_destroy(mm);
	printf("nested fills: %d levels, %lu bytes, all right\n", 3, (unsigned long)size);
	return 0;
}
