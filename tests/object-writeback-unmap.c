/* Description: nothing written through a shared mapping is lost when the
 * mapping is uf_munmap()'ed and the object then put (no sync called): the
 * file read with plain pread() holds every write, on the tmpfs and disk
 * stores and the recording store; the same after uf_mm_destroy() with the
 * mapping still in place; private mapping writes never reach the file.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	300
#define SIZE	(NPAGES * UF_PAGE_SIZE - 1000)
#define MAPLEN	(NPAGES * UF_PAGE_SIZE)

/* The byte written at @off (every 3rd page gets writes; page 7 all of it). */
static bool written(uint64_t off)
{
	uint64_t pg = off / UF_PAGE_SIZE;

	return pg == 7 || (pg % 3 == 0 && off % 512 == 5);
}

static unsigned char wbyte(uint64_t off, int round)
{
	return (unsigned char)(ut_pattern(off) ^ (0x5a + round));
}

static void write_all(unsigned char *s, unsigned char *p, int round)
{
	uint64_t off;

	for (off = 0; off < SIZE; off++) {
		if (written(off))
			s[off] = wbyte(off, round);
		else if (off % 1000 == 1)
			p[off] = 0xff;	/* private only */
	}
}

static void check_bytes(const char *name, const unsigned char *data, int round)
{
	uint64_t off;

	for (off = 0; off < SIZE; off++) {
		unsigned char want = written(off) ? wbyte(off, round) : ut_pattern(off);

		CHECK(data[off] == want, "%s: byte %lu = %#x, want %#x", name, (unsigned long)off,
		      data[off], want);
	}
}

static void check_file(const char *name, const char *path, unsigned char *buf, int round)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0, "open %s", path);
	CHECK(pread(fd, buf, SIZE + 10, 0) == (ssize_t)SIZE, "%s: file size", name);
	close(fd);
	check_bytes(name, buf, round);
}

/* Map shared and private, write, then end per @destroy. */
static void round_trip(struct uf_mm **mmp, struct uf_object *obj, int round, bool destroy)
{
	unsigned char *s, *p;

	CHECK_RET(uf_mmap(*mmp, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, (void **)&s), 0);
	CHECK_RET(uf_mmap(*mmp, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0, (void **)&p), 0);
	write_all(s, p, round);
	if (destroy) {
		uf_mm_destroy(*mmp);
		*mmp = NULL;
	} else {
		CHECK_RET(uf_munmap(*mmp, p, MAPLEN), 0);
		CHECK_RET(uf_munmap(*mmp, s, MAPLEN), 0);
	}
	uf_object_put(obj);
}

int main(void)
{
	unsigned char *buf = malloc(SIZE + 10);
	struct uf_mm *mm;
	int s, destroy;

	CHECK(buf, "out of memory");
	ut_catch_signals();
	os_watchdog(30);
	for (destroy = 0; destroy < 2; destroy++) {
		for (s = UT_STORE_TMPFS; s < UT_NSTORES; s++) {
			char path[256];
			struct uf_object *obj;

			mm = ut_mm_create(NULL);
			obj = ut_object(mm, s, SIZE, path, sizeof(path));
			round_trip(&mm, obj, destroy, destroy);
			check_file(ut_store_names[s], path, buf, destroy);
			uf_mm_destroy(mm);
			unlink(path);
		}
		{
			struct os_store st;

			mm = ut_mm_create(NULL);
			os_init(&st, SIZE);
			round_trip(&mm, os_object(mm, &st), destroy, destroy);
			pthread_mutex_lock(&st.lock);
			check_bytes("recording", st.data, destroy);
			pthread_mutex_unlock(&st.lock);
			uf_mm_destroy(mm);
			os_fini(&st);
		}
	}
	free(buf);
	return 0;
}
