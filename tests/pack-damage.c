// SPDX-License-Identifier: MIT
/* Description: a damaged frame of a packed snapshot gives SIGBUS (every time) for the pages it holds and -EIO to uf_object_pread(), while its zero pages and every other frame read right; a damaged index, trailer or header, or a cut file, is -EIO at open, a newer version -EPROTONOSUPPORT; a raw store's transient error gives SIGBUS and is not kept */
#include "pack-test.h"

#include <pthread.h>
#include <sys/mman.h>

#define FRAME	(64u << 10)
#define FPAGES	(FRAME / UF_PAGE_SIZE)
#define SIZE	(2u << 20)
#define NPAGES	(SIZE / UF_PAGE_SIZE)
#define BAD	5		/* the damaged frame */

static enum pt_kind kind(uint64_t pg)
{
	return pg % 8 == 3 ? PT_ZERO : pg % 3 ? PT_TEXT : PT_RANDOM;
}

/* Read every page of @map once or twice: frame BAD's non-zero pages must
 * fault, the rest read the source's bytes. */
static void scan(const struct pt_image *im, const unsigned char *map, int times)
{
	unsigned char buf[UF_PAGE_SIZE];
	struct ut_fault f;

	for (int t = 0; t < times; t++) {
		for (uint64_t pg = 0; pg < NPAGES; pg++) {
			int sig = ut_copy_from(buf, map + pg * UF_PAGE_SIZE, UF_PAGE_SIZE, &f);

			if (pg / FPAGES == BAD && kind(pg) != PT_ZERO) {
				CHECK(sig == SIGBUS, "pass %d: page %lu of the damaged frame: signal %d",
				      t, (unsigned long)pg, sig);
				continue;
			}
			CHECK(sig == 0, "pass %d: page %lu: signal %d", t, (unsigned long)pg, sig);
			for (size_t i = 0; i < UF_PAGE_SIZE; i += 509)
				CHECK(buf[i] == pt_src_byte(im, pg * UF_PAGE_SIZE + i),
				      "pass %d: page %lu byte %zu", t, (unsigned long)pg, i);
		}
	}
}

/* uf_pack_open() of the packed file with one byte at @off damaged. */
static int open_damaged(struct uf_mm *mm, const struct pt_image *im, uint64_t off)
{
	struct uf_object *obj = NULL;
	int ret;

	pt_damage(im, off);
	ret = uf_pack_open(mm, im->packed, &obj);
	pt_damage(im, off);	/* undone */
	if (!ret)
		uf_object_put(obj);
	return ret;
}

/* A raw store over the packed file that fails while @failing is set. */
struct flaky {
	int fd;
	bool failing;
	pthread_mutex_t lock;
};

static ssize_t flaky_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct flaky *fl = store;
	bool failing;

	pthread_mutex_lock(&fl->lock);
	failing = fl->failing;
	pthread_mutex_unlock(&fl->lock);
	if (failing)
		return -ETIMEDOUT;
	return pread(fl->fd, buf, len, (off_t)off);
}

static const struct uf_store_ops flaky_ops = { .read = flaky_read };

static void set_failing(struct flaky *fl, bool on)
{
	pthread_mutex_lock(&fl->lock);
	fl->failing = on;
	pthread_mutex_unlock(&fl->lock);
}

static void transient(struct uf_mm *mm, const struct pt_image *im)
{
	struct flaky fl = { .fd = open(im->packed, O_RDONLY) };
	struct uf_object *obj;
	unsigned char v, *map;
	struct ut_fault f;
	void *a;
	uint64_t pg = 7 * FPAGES + 1;

	pthread_mutex_init(&fl.lock, NULL);
	CHECK_RET(uf_pack_create(mm, &flaky_ops, &fl, (uint64_t)lseek(fl.fd, 0, SEEK_END), &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	map = a;
	set_failing(&fl, true);
	CHECK(ut_read(map + pg * UF_PAGE_SIZE, &v, &f) == SIGBUS, "a failing raw store: no SIGBUS");
	set_failing(&fl, false);
	/* ufault lifts the poison marker once the faulting thread has
	 * retried (src/fault/fault.c): a retry soon after may fault once more */
	for (int i = 0; i < 500 && ut_read(map + pg * UF_PAGE_SIZE, &v, &f) == SIGBUS; i++)
		usleep(10000);
	CHECK(ut_read(map + pg * UF_PAGE_SIZE, &v, &f) == 0, "after the store recovered: signal");
	CHECK(v == pt_src_byte(im, pg * UF_PAGE_SIZE), "after the store recovered: byte %u", v);
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	close(fl.fd);
}

int main(void)
{
	struct pt_image im;
	struct pt_frame fr;
	struct uf_object *obj;
	struct uf_mm *mm;
	unsigned char t[64], buf[UF_PAGE_SIZE];
	uint64_t packed_size, index_off;
	void *a;
	int fd;

	ut_watchdog(120);
	ut_catch_signals();
	pt_make(&im, SIZE, kind, FRAME);
	mm = ut_mm_create(NULL);

	/* the index, the trailer, the header, a cut file, a newer version */
	fd = open(im.packed, O_RDWR);
	packed_size = (uint64_t)lseek(fd, 0, SEEK_END);
	CHECK(pread(fd, t, 64, (off_t)(packed_size - 64)) == 64, "trailer");
	index_off = pt_get64(t + 24);
	CHECK_RET(open_damaged(mm, &im, index_off + 3), -EIO);		/* an entry */
	CHECK_RET(open_damaged(mm, &im, packed_size - 64 - 5), -EIO);	/* the bitmap */
	CHECK_RET(open_damaged(mm, &im, packed_size - 40), -EIO);	/* the trailer */
	CHECK_RET(open_damaged(mm, &im, 20), -EIO);			/* frame size */
	CHECK_RET(open_damaged(mm, &im, 8), -EPROTONOSUPPORT);		/* version */
	CHECK_RET(open_damaged(mm, &im, 0), -ENOEXEC);			/* magic */
	CHECK(ftruncate(fd, (off_t)packed_size - 1) == 0, "ftruncate");
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), -EIO);
	CHECK(pwrite(fd, t + 63, 1, (off_t)packed_size - 1) == 1, "restore");
	close(fd);

	/* a frame */
	pt_frame(&im, BAD, &fr);
	CHECK(fr.clen > 100, "frame %d: %u bytes", BAD, fr.clen);
	pt_damage(&im, fr.off + fr.clen / 2);
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	scan(&im, a, 2);
	CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), (BAD * FPAGES + 1) * UF_PAGE_SIZE), -EIO);
	CHECK_RET(uf_munmap(mm, a, SIZE), 0);
	uf_object_put(obj);
	pt_damage(&im, fr.off + fr.clen / 2);

	transient(mm, &im);
	uf_mm_destroy(mm);
	return UT_PASS;
}
