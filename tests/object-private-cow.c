/* Description: a private mapping (UF_MAP_PRIVATE) is copy-on-write, as the
 * kernel's MAP_PRIVATE mmap() of a tmpfs file is (the oracle, run through
 * the same scenario): its writes are not seen by a shared mapping, by
 * uf_object_pread(), or in the file after uf_object_sync(); writes through
 * the shared mapping or uf_object_pwrite() made before the private copy of
 * a page was taken ARE seen by the private mapping, and later ones are seen
 * on every page it has not written, on every store.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	16
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define NOBS	64

struct view {
	unsigned char *s, *p;		/* shared and private mappings */
	struct uf_mm *mm;
	struct uf_object *obj;		/* ufault, or NULL: the kernel with fd */
	int fd;
	const char *path;		/* the file, or "" for the memory store */
};

static void vwrite(struct view *v, uint64_t off, unsigned char b)
{
	ssize_t n = v->obj ? uf_object_pwrite(v->obj, &b, 1, off) : pwrite(v->fd, &b, 1, (off_t)off);

	CHECK(n == 1, "pwrite at %lu: %zd", (unsigned long)off, n);
}

static unsigned char vread(struct view *v, uint64_t off)
{
	unsigned char b = 0;
	ssize_t n = v->obj ? uf_object_pread(v->obj, &b, 1, off) : pread(v->fd, &b, 1, (off_t)off);

	CHECK(n == 1, "pread at %lu: %zd", (unsigned long)off, n);
	return b;
}

static void vsync(struct view *v)
{
	if (v->obj) {
		CHECK_RET(uf_msync(v->mm, v->s, SIZE, UF_MS_SYNC), 0);
		CHECK_RET(uf_object_sync(v->obj), 0);
	} else {
		CHECK(msync(v->s, SIZE, MS_SYNC) == 0 && fsync(v->fd) == 0, "msync: %s", strerror(errno));
	}
}

/* A byte of the file itself, read with plain pread() on a new fd. */
static unsigned char file_byte(struct view *v, uint64_t off)
{
	unsigned char b = 0;
	int fd;

	if (!v->path[0])
		return vread(v, off);
	fd = open(v->path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1, "read %s", v->path);
	close(fd);
	return b;
}

#define AT(pg, b)	((uint64_t)(pg) * UF_PAGE_SIZE + (b))

static int scenario(struct view *v, unsigned char *obs)
{
	int n = 0;

	/* page 0: shared write before the private mapping touches it */
	v->s[AT(0, 10)] = 0xa0;
	obs[n++] = v->p[AT(0, 10)];
	/* page 1: private write-first fault on a page nobody touched */
	v->p[AT(1, 5)] = 0xb1;
	/* page 2: private read, then private write (copy after a read) */
	obs[n++] = v->p[AT(2, 5)];
	v->p[AT(2, 5)] = 0xb2;
	/* shared writes on the privately written pages and on others */
	v->s[AT(1, 5)] = 0xc1;
	v->s[AT(1, 6)] = 0xc2;
	v->s[AT(2, 5)] = 0xc3;
	v->s[AT(3, 7)] = 0xc4;		/* a page the private mapping never touched */
	obs[n++] = v->p[AT(1, 5)];	/* its own byte */
	obs[n++] = v->p[AT(1, 6)];	/* the copy was taken before: old byte */
	obs[n++] = v->p[AT(2, 5)];
	obs[n++] = v->p[AT(3, 7)];	/* not written privately: sees the write */
	/* page 4: private read maps the cache page; later writes show */
	obs[n++] = v->p[AT(4, 1)];
	vwrite(v, AT(4, 1), 0xd4);
	v->s[AT(4, 2)] = 0xd5;
	obs[n++] = v->p[AT(4, 1)];
	obs[n++] = v->p[AT(4, 2)];
	/* page 5: a private write is not seen by the shared mapping or pread */
	v->p[AT(5, 0)] = 0xe5;
	obs[n++] = v->s[AT(5, 0)];
	obs[n++] = vread(v, AT(5, 0));
	obs[n++] = v->p[AT(5, 0)];
	obs[n++] = vread(v, AT(1, 5));
	obs[n++] = v->s[AT(2, 5)];
	/* page 6: pwrite before the private mapping's first (write) touch */
	vwrite(v, AT(6, 3), 0xf6);
	v->p[AT(6, 4)] = 0x66;
	obs[n++] = v->p[AT(6, 3)];
	vwrite(v, AT(6, 3), 0xf7);
	obs[n++] = v->p[AT(6, 3)];	/* copied already: the old byte */
	obs[n++] = v->s[AT(6, 4)];
	/* after a sync: the file holds the shared writes, no private ones */
	vsync(v);
	obs[n++] = file_byte(v, AT(5, 0));
	obs[n++] = file_byte(v, AT(1, 5));
	obs[n++] = file_byte(v, AT(2, 5));
	obs[n++] = file_byte(v, AT(6, 4));
	obs[n++] = file_byte(v, AT(6, 3));
	obs[n++] = file_byte(v, AT(0, 10));
	CHECK(n <= NOBS, "too many observations");
	return n;
}

/* a byte written as listed, or ORIG(): the file's original byte there */
#define ORIG(pg, b)	(-(int)AT(pg, b))

static const int want[] = {
	0xa0, ORIG(2, 5), 0xb1, ORIG(1, 6), 0xb2, 0xc4, ORIG(4, 1), 0xd4, 0xd5,
	ORIG(5, 0), ORIG(5, 0), 0xe5, 0xc1, 0xc3, 0xf6, 0xf6, ORIG(6, 4),
	ORIG(5, 0), 0xc1, 0xc3, ORIG(6, 4), 0xf7, 0xa0,
};

static void map_both(struct view *v)
{
	if (v->obj) {
		CHECK_RET(uf_mmap(v->mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, v->obj, 0,
				  (void **)&v->s), 0);
		CHECK_RET(uf_mmap(v->mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, v->obj, 0,
				  (void **)&v->p), 0);
	} else {
		v->s = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
		v->p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, v->fd, 0);
		CHECK(v->s != MAP_FAILED && v->p != MAP_FAILED, "mmap: %s", strerror(errno));
	}
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	unsigned char kobs[NOBS], uobs[NOBS];
	char kpath[256];
	struct view kv = { .path = kpath };
	int s, i, n;

	ut_catch_signals();
	os_watchdog(30);

	kv.fd = ut_make_file("/dev/shm", SIZE, kpath, sizeof(kpath));
	map_both(&kv);
	n = scenario(&kv, kobs);
	munmap(kv.s, SIZE);
	munmap(kv.p, SIZE);
	close(kv.fd);
	unlink(kpath);
	CHECK(n == (int)(sizeof(want) / sizeof(want[0])), "%d observations", n);
	for (i = 0; i < n; i++)
		CHECK(kobs[i] == (want[i] < 0 ? ut_pattern((uint64_t)-want[i]) : want[i]),
		      "kernel observation %d = %#x: the scenario is wrong", i, kobs[i]);

	for (s = 0; s < UT_NSTORES; s++) {
		char path[256];
		struct view v = { .mm = mm, .fd = -1, .path = path };

		v.obj = ut_object(mm, s, SIZE, path, sizeof(path));
		map_both(&v);
		CHECK(scenario(&v, uobs) == n, "observation count");
		for (i = 0; i < n; i++)
			CHECK(uobs[i] == kobs[i], "%s: observation %d: ufault %#x, kernel %#x",
			      ut_store_names[s], i, uobs[i], kobs[i]);
		CHECK_RET(uf_munmap(mm, v.p, SIZE), 0);
		CHECK_RET(uf_munmap(mm, v.s, SIZE), 0);
		uf_object_put(v.obj);
		if (path[0]) {
			/* and after the last put, still no private byte */
			CHECK(file_byte(&v, AT(5, 0)) == ut_pattern(AT(5, 0)) &&
			      file_byte(&v, AT(6, 4)) == ut_pattern(AT(6, 4)),
			      "%s: a private write reached the file", ut_store_names[s]);
			unlink(path);
		}
	}
	uf_mm_destroy(mm);
	return 0;
}
