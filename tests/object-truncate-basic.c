/* Description: uf_object_truncate() as users see it, on every store and
 * against the kernel's own mmap() + ftruncate() of a tmpfs file: after a
 * shrink an access past the new EOF gets SIGBUS (exact si_addr) in shared
 * and private mappings -- a privately copied page too -- while the bytes
 * of the last partial page past EOF read zero and the file has the new
 * size; after a grow the new bytes read zero through mappings and
 * uf_object_pread(), bytes written past the old EOF included.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/stat.h>

#define NPAGES	10
#define SIZE	(NPAGES * UF_PAGE_SIZE)
#define SHRUNK	(4 * UF_PAGE_SIZE + 100)
#define GROWN	(12 * UF_PAGE_SIZE)
#define MAPLEN	(12 * UF_PAGE_SIZE)
#define NOBS	256

struct view {
	unsigned char *s, *p;
	struct uf_object *obj;		/* NULL: the kernel, with fd */
	int fd;
};

static void vtruncate(struct view *v, uint64_t size)
{
	if (v->obj)
		CHECK_RET(uf_object_truncate(v->obj, size), 0);
	else
		CHECK(ftruncate(v->fd, (off_t)size) == 0, "ftruncate: %s", strerror(errno));
}

/* Probe bytes of every page of @m: value, or -signal, and si_addr. */
static int probe(unsigned char *m, int *obs, int n)
{
	static const unsigned int offs[] = { 0, 99, 100, 4095 };
	uint64_t pg;
	size_t k;

	for (pg = 0; pg < MAPLEN / UF_PAGE_SIZE; pg++) {
		for (k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			unsigned char *a = m + pg * UF_PAGE_SIZE + offs[k], v;
			struct ut_fault f;
			int sig = ut_read(a, &v, &f);

			CHECK(!sig || (unsigned char *)f.addr == a, "si_addr %p, want %p", f.addr, (void *)a);
			obs[n++] = sig ? -sig : v;
		}
	}
	return n;
}

static int scenario(struct view *v, int *obs)
{
	int n = 0;

	/* everything mapped; a private copy of page 6 */
	n = probe(v->s, obs, n);
	v->p[6 * UF_PAGE_SIZE + 1] = 0x61;
	obs[n++] = v->p[6 * UF_PAGE_SIZE + 1];
	vtruncate(v, SHRUNK);
	n = probe(v->s, obs, n);
	n = probe(v->p, obs, n);
	vtruncate(v, GROWN);
	n = probe(v->s, obs, n);
	n = probe(v->p, obs, n);
	CHECK(n <= NOBS, "too many observations");
	return n;
}

static void expect(const char *name, const int *obs, int n)
{
	static const unsigned int offs[] = { 0, 99, 100, 4095 };
	int i = 0, pass;
	uint64_t pg;
	size_t k;

	for (pass = 0; pass < 5; pass++) {
		uint64_t size = pass == 0 ? SIZE : pass < 3 ? SHRUNK : GROWN;

		for (pg = 0; pg < MAPLEN / UF_PAGE_SIZE; pg++) {
			for (k = 0; k < 4; k++, i++) {
				uint64_t off = pg * UF_PAGE_SIZE + offs[k];
				int want;

				if (off >= (size + UF_PAGE_SIZE - 1) / UF_PAGE_SIZE * UF_PAGE_SIZE)
					want = -SIGBUS;
				else if (off >= size || (pass > 2 && off >= SHRUNK))
					want = 0;
				else
					want = ut_pattern(off);
				CHECK(obs[i] == want, "%s: step %d offset %lu: %d, want %d", name, pass,
				      (unsigned long)off, obs[i], want);
			}
		}
		if (pass == 0)
			CHECK(obs[i++] == 0x61, "%s: private write", name);
	}
	CHECK(i == n, "%s: %d observations, want %d", name, n, i);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	int kobs[NOBS], uobs[NOBS], n, i, s;
	char kpath[256];
	struct view kv = { 0 };

	ut_catch_signals();
	os_watchdog(30);

	kv.fd = ut_make_file("/dev/shm", SIZE, kpath, sizeof(kpath));
	kv.s = mmap(NULL, MAPLEN, PROT_READ | PROT_WRITE, MAP_SHARED, kv.fd, 0);
	kv.p = mmap(NULL, MAPLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, kv.fd, 0);
	CHECK(kv.s != MAP_FAILED && kv.p != MAP_FAILED, "mmap: %s", strerror(errno));
	n = scenario(&kv, kobs);
	expect("kernel", kobs, n);
	munmap(kv.s, MAPLEN);
	munmap(kv.p, MAPLEN);
	close(kv.fd);
	unlink(kpath);

	for (s = 0; s < UT_NSTORES; s++) {
		char path[256];
		struct view v = { .fd = -1 };
		unsigned char buf[64];
		struct stat sb;

		v.obj = ut_object(mm, s, SIZE, path, sizeof(path));
		CHECK_RET(uf_mmap(mm, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_SHARED, v.obj, 0,
				  (void **)&v.s), 0);
		CHECK_RET(uf_mmap(mm, MAPLEN, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, v.obj, 0,
				  (void **)&v.p), 0);
		CHECK(scenario(&v, uobs) == n, "observation count");
		for (i = 0; i < n; i++)
			CHECK(uobs[i] == kobs[i], "%s: observation %d: ufault %d, kernel %d",
			      ut_store_names[s], i, uobs[i], kobs[i]);
		CHECK(uf_object_size(v.obj) == GROWN, "size %lu", (unsigned long)uf_object_size(v.obj));

		/* bytes written past EOF in the last page never come back */
		vtruncate(&v, SHRUNK);
		if (path[0]) {
			CHECK(stat(path, &sb) == 0 && sb.st_size == SHRUNK, "%s: file size %ld",
			      ut_store_names[s], (long)sb.st_size);
		}
		memset(v.s + SHRUNK, 0xab, 50);
		CHECK_RET(uf_object_sync(v.obj), 0);
		vtruncate(&v, SHRUNK + 1000);
		CHECK_RET(uf_object_pread(v.obj, buf, sizeof(buf), SHRUNK - 10), sizeof(buf));
		for (i = 0; i < (int)sizeof(buf); i++)
			CHECK(buf[i] == (i < 10 ? ut_pattern(SHRUNK - 10 + (uint64_t)i) : 0),
			      "%s: pread after grow: byte %d = %#x", ut_store_names[s], i, buf[i]);
		for (i = 0; i < 50; i++)
			CHECK(v.s[SHRUNK + (unsigned)i] == 0, "%s: old byte past EOF came back: %#x",
			      ut_store_names[s], v.s[SHRUNK + (unsigned)i]);

		CHECK_RET(uf_munmap(mm, v.s, MAPLEN), 0);
		CHECK_RET(uf_munmap(mm, v.p, MAPLEN), 0);
		uf_object_put(v.obj);
		if (path[0]) {
			int fd = open(path, O_RDONLY);

			CHECK(fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size == SHRUNK + 1000,
			      "%s: file size after put %ld", ut_store_names[s], (long)sb.st_size);
			CHECK(pread(fd, buf, sizeof(buf), SHRUNK) == sizeof(buf), "pread file");
			for (i = 0; i < (int)sizeof(buf); i++)
				CHECK(buf[i] == 0, "%s: file byte %lu = %#x", ut_store_names[s],
				      (unsigned long)SHRUNK + (unsigned)i, buf[i]);
			close(fd);
			unlink(path);
		}
	}
	uf_mm_destroy(mm);
	return 0;
}
