/* Description: two shared mappings of one object (at different offsets)
 * and uf_object_pread()/uf_object_pwrite() see each other's writes at
 * once, on every store, for pages already mapped and pages not yet
 * touched; the same scenario on the kernel's own mmap() of a tmpfs file
 * (two MAP_SHARED mappings, pread/pwrite on the fd) gives the same bytes.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>

#define NPAGES	32
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define OFF2	(4 * UF_PAGE_SIZE)	/* the second mapping starts at page 4 */
#define NOBS	64

/* The three ways in: two mappings and pread/pwrite (on an object or fd). */
struct view {
	unsigned char *m1, *m2;		/* m2 shows object offset OFF2 at m2[0] */
	struct uf_object *obj;		/* ufault, or NULL: the kernel with fd */
	int fd;
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

/* Run the scenario; record what each read saw in @obs. */
static void scenario(struct view *v, unsigned char *obs)
{
	int n = 0;
	uint64_t p;

	/* m1 writes a page nobody has touched: m2 and pread see it */
	v->m1[5 * UF_PAGE_SIZE + 1] = 0x11;
	obs[n++] = v->m2[5 * UF_PAGE_SIZE + 1 - OFF2];
	obs[n++] = vread(v, 5 * UF_PAGE_SIZE + 1);
	/* m2 writes: m1 and pread see it */
	v->m2[6 * UF_PAGE_SIZE + 2 - OFF2] = 0x22;
	obs[n++] = v->m1[6 * UF_PAGE_SIZE + 2];
	obs[n++] = vread(v, 6 * UF_PAGE_SIZE + 2);
	/* pwrite on a page both map already */
	vwrite(v, 5 * UF_PAGE_SIZE + 3, 0x33);
	obs[n++] = v->m1[5 * UF_PAGE_SIZE + 3];
	obs[n++] = v->m2[5 * UF_PAGE_SIZE + 3 - OFF2];
	/* pwrite on a page nobody has touched, then map reads */
	vwrite(v, 20 * UF_PAGE_SIZE + 4, 0x44);
	obs[n++] = v->m2[20 * UF_PAGE_SIZE + 4 - OFF2];
	obs[n++] = v->m1[20 * UF_PAGE_SIZE + 4];
	obs[n++] = v->m1[20 * UF_PAGE_SIZE + 5];	/* an unwritten byte of it */
	/* pread first (fills the cache), then a map write, then pread again */
	obs[n++] = vread(v, 25 * UF_PAGE_SIZE + 6);
	v->m2[25 * UF_PAGE_SIZE + 6 - OFF2] = 0x55;
	obs[n++] = vread(v, 25 * UF_PAGE_SIZE + 6);
	obs[n++] = v->m1[25 * UF_PAGE_SIZE + 6];
	/* a page of m1 only (before m2's start) and pread */
	v->m1[1 * UF_PAGE_SIZE] = 0x66;
	obs[n++] = vread(v, 1 * UF_PAGE_SIZE);
	vwrite(v, 2 * UF_PAGE_SIZE, 0x77);
	obs[n++] = v->m1[2 * UF_PAGE_SIZE];
	/* back and forth on one byte */
	for (p = 0; p < 8; p++) {
		v->m1[10 * UF_PAGE_SIZE] = (unsigned char)(0x80 + p);
		obs[n++] = v->m2[10 * UF_PAGE_SIZE - OFF2];
		vwrite(v, 10 * UF_PAGE_SIZE, (unsigned char)(0x90 + p));
		obs[n++] = v->m1[10 * UF_PAGE_SIZE];
		obs[n++] = v->m2[10 * UF_PAGE_SIZE - OFF2];
	}
	CHECK(n <= NOBS, "too many observations");
	while (n < NOBS)
		obs[n++] = 0;
}

static const unsigned char want[] = {
	0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0, 0, 0x55, 0x55, 0x66, 0x77,
};

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	unsigned char kobs[NOBS], uobs[NOBS];
	char kpath[256];
	struct view kv = { 0 };
	int s, i;

	ut_catch_signals();
	os_watchdog(30);

	kv.fd = ut_make_file("/dev/shm", SIZE, kpath, sizeof(kpath));
	kv.m1 = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, kv.fd, 0);
	kv.m2 = mmap(NULL, SIZE - OFF2, PROT_READ | PROT_WRITE, MAP_SHARED, kv.fd, OFF2);
	CHECK(kv.m1 != MAP_FAILED && kv.m2 != MAP_FAILED, "mmap: %s", strerror(errno));
	scenario(&kv, kobs);
	munmap(kv.m1, SIZE);
	munmap(kv.m2, SIZE - OFF2);
	close(kv.fd);
	unlink(kpath);
	for (i = 0; i < (int)sizeof(want); i++) {
		uint64_t off = i == 8 ? 20 * UF_PAGE_SIZE + 5 : i == 9 ? 25 * UF_PAGE_SIZE + 6 : 0;

		CHECK(kobs[i] == (off ? ut_pattern(off) : want[i]), "kernel observation %d = %#x", i, kobs[i]);
	}

	for (s = 0; s < UT_NSTORES; s++) {
		char path[256];
		struct view v = { .fd = -1 };

		v.obj = ut_object(mm, s, SIZE, path, sizeof(path));
		CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, v.obj, 0,
				  (void **)&v.m1), 0);
		CHECK_RET(uf_mmap(mm, SIZE - OFF2, PROT_READ | PROT_WRITE, UF_MAP_SHARED, v.obj, OFF2,
				  (void **)&v.m2), 0);
		scenario(&v, uobs);
		for (i = 0; i < NOBS; i++)
			CHECK(uobs[i] == kobs[i], "%s: observation %d: ufault %#x, kernel %#x",
			      ut_store_names[s], i, uobs[i], kobs[i]);
		CHECK_RET(uf_munmap(mm, v.m1, SIZE), 0);
		CHECK_RET(uf_munmap(mm, v.m2, SIZE - OFF2), 0);
		uf_object_put(v.obj);
		if (path[0])
			unlink(path);
	}
	uf_mm_destroy(mm);
	return 0;
}
