// SPDX-License-Identifier: MIT
/* Description: whichever byte of a packed snapshot is damaged (300 bytes chosen at random, and every byte of the header, trailer and an index entry), opening it fails or every page reads either its original bytes or -EIO: damage is never served as bytes */
#include "pack-test.h"

#define FRAME	(64u << 10)
#define SIZE	((1u << 20) + 3000)
#define NPAGES	((SIZE + UF_PAGE_SIZE - 1) / UF_PAGE_SIZE)

static enum pt_kind kind(uint64_t pg)
{
	return pg % 4 == 1 || (pg >= 32 && pg < 48) ? PT_ZERO : pg % 3 ? PT_TEXT : PT_RANDOM;
}

/* Open the packed file with the byte at @off damaged; every page right or
 * -EIO.  Returns 1 when the open succeeded. */
static int try_damage(struct uf_mm *mm, const struct pt_image *im, const unsigned char *orig,
		      uint64_t off, unsigned int *eio)
{
	unsigned char buf[UF_PAGE_SIZE];
	struct uf_object *obj;
	int ret;

	pt_damage(im, off);
	ret = uf_pack_open(mm, im->packed, &obj);
	CHECK(ret == 0 || ret == -EIO || ret == -ENOEXEC || ret == -EPROTONOSUPPORT,
	      "byte %lu damaged: open %d", (unsigned long)off, ret);
	for (uint64_t pg = 0; !ret && pg < NPAGES; pg++) {
		size_t want = pg == NPAGES - 1 ? SIZE - (size_t)pg * UF_PAGE_SIZE : UF_PAGE_SIZE;
		ssize_t n = uf_object_pread(obj, buf, UF_PAGE_SIZE, pg * UF_PAGE_SIZE);

		if (n == -EIO) {
			(*eio)++;
			continue;
		}
		CHECK(n == (ssize_t)want && !memcmp(buf, orig + pg * UF_PAGE_SIZE, want),
		      "byte %lu damaged: page %lu served wrong (%zd)", (unsigned long)off,
		      (unsigned long)pg, n);
	}
	if (!ret)
		uf_object_put(obj);
	pt_damage(im, off);	/* undone */
	return !ret;
}

int main(void)
{
	unsigned char *orig = malloc(SIZE);
	unsigned int opened = 0, tries = 0, eio = 0;
	uint64_t packed, index_off, s = 7;
	unsigned char t[64];
	struct pt_image im;
	struct uf_mm *mm;
	int fd;

	ut_watchdog(170);
	CHECK(orig, "malloc");
	pt_make(&im, SIZE, kind, FRAME);
	CHECK(pread(im.src_fd, orig, SIZE, 0) == SIZE, "pread");
	fd = open(im.packed, O_RDONLY);
	packed = (uint64_t)lseek(fd, 0, SEEK_END);
	CHECK(pread(fd, t, 64, (off_t)(packed - 64)) == 64, "trailer");
	close(fd);
	index_off = pt_get64(t + 24);
	mm = ut_mm_create(NULL);

	for (uint64_t off = 0; off < 64; off++, tries++)		/* the header */
		opened += try_damage(mm, &im, orig, off, &eio);
	for (uint64_t off = packed - 64; off < packed; off++, tries++)	/* the trailer */
		opened += try_damage(mm, &im, orig, off, &eio);
	for (uint64_t off = index_off; off < index_off + 48; off++, tries++)	/* two entries */
		opened += try_damage(mm, &im, orig, off, &eio);
	for (int i = 0; i < 300; i++, tries++)				/* anywhere */
		opened += try_damage(mm, &im, orig, pt_rand(&s) % packed, &eio);
	printf("%u damaged bytes: %u opened, %u page reads -EIO, no wrong byte\n", tries, opened,
	       eio);
	CHECK(eio > 0, "no damaged frame was ever noticed");
	uf_mm_destroy(mm);
	free(orig);
	return UT_PASS;
}
