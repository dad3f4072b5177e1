/* Description: uf_object_pwrite() behaves like pwrite(2): a write past the
 * end extends the object, the gap reads zero, and bytes written through a
 * mapping past the old end never reappear; at or past the size limit it
 * is -EFBIG.  An fsx-style run of random pwrite, pread, truncate and
 * mapped reads and writes on every store is checked against the kernel's
 * pwrite/ftruncate on a tmpfs file, and after a sync the file store holds
 * the oracle's bytes.
 */
#define _GNU_SOURCE
#include "object-store.h"

#include <sys/mman.h>
#include <sys/stat.h>

#define MAXP	48			/* pages the mapping covers */
#define MAXSZ	(MAXP * UF_PAGE_SIZE)
#define OPS	1500

struct run {
	struct uf_object *obj;
	unsigned char *map;
	int oracle;
	uint64_t rng;
	unsigned char *a, *b;		/* scratch, MAXSZ each */
	const char *store;
	int op;
};

static uint64_t rnd(struct run *r, uint64_t n)
{
	return n ? os_rand(&r->rng) % n : 0;
}

static uint64_t oracle_size(struct run *r)
{
	struct stat st;

	CHECK(fstat(r->oracle, &st) == 0, "fstat: %s", strerror(errno));
	return (uint64_t)st.st_size;
}

static void compare(struct run *r, uint64_t off, size_t len)
{
	ssize_t want = pread(r->oracle, r->a, len, (off_t)off);
	ssize_t got = uf_object_pread(r->obj, r->b, len, off);
	ssize_t i;

	CHECK(got == want, "%s op %d: pread [%lu, +%zu) returned %zd, want %zd", r->store, r->op,
	      (unsigned long)off, len, got, want);
	for (i = 0; i < want; i++)
		CHECK(r->a[i] == r->b[i], "%s op %d: byte %lu = %u, want %u", r->store, r->op,
		      (unsigned long)(off + (uint64_t)i), r->b[i], r->a[i]);
}

static void fill_random(struct run *r, unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(1 + rnd(r, 255));
}

static void one_op(struct run *r)
{
	uint64_t size = oracle_size(r), off;
	size_t len, i;

	CHECK(uf_object_size(r->obj) == size, "%s op %d: size %lu, want %lu", r->store, r->op,
	      (unsigned long)uf_object_size(r->obj), (unsigned long)size);
	switch (rnd(r, 7)) {
	case 0:		/* pwrite anywhere, often past the end */
	case 1:
		len = 1 + rnd(r, 3 * UF_PAGE_SIZE);
		off = rnd(r, MAXSZ - len);
		fill_random(r, r->a, len);
		CHECK(pwrite(r->oracle, r->a, len, (off_t)off) == (ssize_t)len, "oracle pwrite");
		CHECK_RET(uf_object_pwrite(r->obj, r->a, len, off), len);
		break;
	case 2:		/* truncate */
		off = rnd(r, MAXSZ);
		CHECK(ftruncate(r->oracle, (off_t)off) == 0, "oracle ftruncate");
		CHECK_RET(uf_object_truncate(r->obj, off), 0);
		break;
	case 3:		/* write through the mapping, inside the end */
		if (!size)
			break;
		off = rnd(r, size);
		len = 1 + rnd(r, size - off < 2 * UF_PAGE_SIZE ? size - off : 2 * UF_PAGE_SIZE);
		fill_random(r, r->a, len);
		CHECK(pwrite(r->oracle, r->a, len, (off_t)off) == (ssize_t)len, "oracle pwrite");
		memcpy(r->map + off, r->a, len);
		break;
	case 4:		/* write through the mapping past the end, in its last page:
			 * never to be seen again */
		if (size % UF_PAGE_SIZE)
			for (i = size; i % UF_PAGE_SIZE; i++)
				r->map[i] = 0xa5;
		break;
	case 5:		/* read through the mapping */
		for (i = 0; i < size; i++) {
			if (i % 1024 == 0)
				CHECK(pread(r->oracle, r->a, size - i < 1024 ? size - i : 1024,
					    (off_t)i) >= 0, "oracle pread");
			CHECK(r->map[i] == r->a[i % 1024], "%s op %d: mapped byte %zu = %u, want %u",
			      r->store, r->op, i, r->map[i], r->a[i % 1024]);
		}
		break;
	case 6:
		if (rnd(r, 4) == 0)
			CHECK_RET(uf_object_sync(r->obj), 0);
		off = rnd(r, MAXSZ);
		compare(r, off, (size_t)(1 + rnd(r, MAXSZ - off)));
		break;
	}
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	char opath[] = "/dev/shm/ufault-oracle-XXXXXX";
	struct run r = { .rng = 0x9e3779b97f4a7c15ULL };
	int s;

	ut_catch_signals();
	os_watchdog(150);
	r.a = malloc(MAXSZ);
	r.b = malloc(MAXSZ);
	CHECK(r.a && r.b, "out of memory");

	for (s = 0; s < UT_NSTORES; s++) {
		uint64_t size = 5 * UF_PAGE_SIZE + 123, i;
		char path[256];

		r.store = ut_store_names[s];
		r.obj = ut_object(mm, s, size, path, sizeof(path));
		r.oracle = mkstemp(opath);
		CHECK(r.oracle >= 0, "mkstemp: %s", strerror(errno));
		unlink(opath);
		strcpy(opath, "/dev/shm/ufault-oracle-XXXXXX");
		for (i = 0; i < size; i++)
			r.a[i] = ut_pattern(i);
		CHECK(pwrite(r.oracle, r.a, size, 0) == (ssize_t)size, "oracle pwrite");
		CHECK_RET(uf_mmap(mm, MAXSZ, PROT_READ | PROT_WRITE, UF_MAP_SHARED, r.obj, 0,
				  (void **)&r.map), 0);

		/* the limit */
		CHECK_RET(uf_object_pwrite(r.obj, "x", 1, 1ULL << 63), -EFBIG);
		CHECK_RET(uf_object_pwrite(r.obj, "x", 1, (1ULL << 63) - UF_PAGE_SIZE), -EFBIG);
		CHECK(uf_object_size(r.obj) == size, "a failed pwrite changed the size");

		for (r.op = 0; r.op < OPS; r.op++)
			one_op(&r);
		compare(&r, 0, MAXSZ);

		/* what reached the store */
		CHECK_RET(uf_object_sync(r.obj), 0);
		if (path[0]) {
			int fd = open(path, O_RDONLY);
			uint64_t osz = oracle_size(&r);
			struct stat st;

			CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", path);
			CHECK((uint64_t)st.st_size == osz, "%s: file size %lu, want %lu", r.store,
			      (unsigned long)st.st_size, (unsigned long)osz);
			CHECK(pread(fd, r.b, osz, 0) == (ssize_t)osz, "file pread");
			CHECK(pread(r.oracle, r.a, osz, 0) == (ssize_t)osz, "oracle pread");
			for (i = 0; i < osz; i++)
				CHECK(r.a[i] == r.b[i], "%s: file byte %lu = %u, want %u", r.store,
				      (unsigned long)i, r.b[i], r.a[i]);
			close(fd);
		}
		CHECK_RET(uf_munmap(mm, r.map, MAXSZ), 0);
		uf_object_put(r.obj);
		if (path[0])
			unlink(path);
		close(r.oracle);
		printf("%s: %d operations agree with the kernel\n", r.store, OPS);
	}
	free(r.a);
	free(r.b);
	uf_mm_destroy(mm);
	return 0;
}
