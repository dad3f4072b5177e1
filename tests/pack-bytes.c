// SPDX-License-Identifier: MIT
/* Description: a packed snapshot (zero, text, random and pattern pages, whole zero frames, a partial last page) reads as the original bytes through shared and private mappings and uf_object_pread(), from a file (uf_pack_open) and from any raw store (uf_pack_create); it is read-only; a plain file or store is -ENOEXEC and stays the caller's; uf_pack_create_any() serves a raw store packed or plain; three packing threads write the same bytes as one */
#include "pack-test.h"

#include <sys/mman.h>

#define FRAME	(64u << 10)
#define SIZE	((5u << 20) + 1234)

static enum pt_kind kind(uint64_t pg)
{
	if (pg >= 32 && pg < 80)	/* frames 2-4 all zero */
		return PT_ZERO;
	switch (pg % 7) {
	case 0: case 3:
		return PT_ZERO;
	case 1:
		return PT_RANDOM;
	case 2: case 5:
		return PT_TEXT;
	default:
		return PT_PATTERN;
	}
}

/* A raw store over memory, counting its releases. */
struct mem_raw {
	unsigned char *buf;
	size_t len;
	int released;
};

static ssize_t mem_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct mem_raw *m = store;

	if (off >= m->len)
		return 0;
	if (len > m->len - off)
		len = m->len - (size_t)off;
	/* short reads on purpose: a socket's store returns what it has */
	if (len > 3000)
		len = 3000;
	memcpy(buf, m->buf + off, len);
	return (ssize_t)len;
}

static void mem_release(void *store)
{
	((struct mem_raw *)store)->released++;
}

static const struct uf_store_ops mem_ops = { .read = mem_read, .release = mem_release };

static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat sb;
	unsigned char *b;

	CHECK(fd >= 0 && fstat(fd, &sb) == 0, "%s: %s", path, strerror(errno));
	b = malloc((size_t)sb.st_size + 1);
	CHECK(b && pread(fd, b, (size_t)sb.st_size, 0) == sb.st_size, "read %s", path);
	close(fd);
	*len = (size_t)sb.st_size;
	return b;
}

/* Every byte of @obj through a shared mapping, a private one read in a
 * scattered order, and uf_object_pread() across frame boundaries. */
static void check_object(struct uf_mm *mm, struct uf_object *obj, const unsigned char *orig,
			 const char *what)
{
	size_t maplen = (SIZE + UF_PAGE_SIZE - 1) & ~(UF_PAGE_SIZE - 1), npages = maplen / UF_PAGE_SIZE;
	unsigned char *map, *priv, buf[3 * FRAME];
	void *a;

	CHECK(uf_object_size(obj) == SIZE, "%s: size %lu", what, (unsigned long)uf_object_size(obj));
	CHECK_RET(uf_mmap(mm, maplen, PROT_READ, UF_MAP_SHARED, obj, 0, &a), 0);
	map = a;
	CHECK(!memcmp(map, orig, SIZE), "%s: shared mapping differs", what);
	for (size_t i = SIZE; i < maplen; i++)
		CHECK(map[i] == 0, "%s: byte %zu past the end", what, i);
	CHECK_RET(uf_mmap(mm, maplen, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0, &a), 0);
	priv = a;
	for (size_t k = 0; k < npages; k++) {
		size_t pg = (k * 2654435761u) % npages, n = pg == npages - 1 ? SIZE % UF_PAGE_SIZE : UF_PAGE_SIZE;

		CHECK(!memcmp(priv + pg * UF_PAGE_SIZE, orig + pg * UF_PAGE_SIZE, n),
		      "%s: private page %zu differs", what, pg);
	}
	priv[5] ^= 1;		/* private: the object does not change */
	for (uint64_t off = 0; off < SIZE; off += FRAME + 777) {
		size_t want = SIZE - off < sizeof(buf) ? SIZE - (size_t)off : sizeof(buf);

		CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), off), want);
		CHECK(!memcmp(buf, orig + off, want), "%s: pread at %lu differs", what,
		      (unsigned long)off);
	}
	CHECK_RET(uf_munmap(mm, map, maplen), 0);
	CHECK_RET(uf_munmap(mm, priv, maplen), 0);
}

int main(void)
{
	struct uf_mm *mm;
	struct uf_object *obj;
	struct pt_image im;
	struct mem_raw raw = { 0 }, plain = { 0 };
	unsigned char *orig;
	size_t len;
	void *a;

	ut_watchdog(120);
	pt_make(&im, SIZE, kind, FRAME);
	mm = ut_mm_create(NULL);
	orig = slurp(im.src, &len);
	CHECK(len == SIZE, "source %zu bytes", len);
	CHECK(im.st.size == SIZE && im.st.frames == (SIZE + FRAME - 1) / FRAME,
	      "stats: size %lu frames %lu", (unsigned long)im.st.size, (unsigned long)im.st.frames);
	CHECK(im.st.zero_frames == 3, "zero frames %lu, want 3", (unsigned long)im.st.zero_frames);

	/* packed by three threads: the same bytes */
	{
		struct uf_pack_write_opts o = { .frame_size = FRAME, .threads = 3 };
		char path[64] = "/dev/shm/ufault-pack-t3-XXXXXX";
		int in = open(im.src, O_RDONLY), out = mkstemp(path);
		unsigned char *p1, *p3;
		size_t l1, l3;

		CHECK(in >= 0 && out >= 0, "open: %s", strerror(errno));
		pt_remember(path);
		CHECK_RET(uf_pack_write(in, out, &o, NULL), 0);
		close(in);
		close(out);
		p1 = slurp(im.packed, &l1);
		p3 = slurp(path, &l3);
		CHECK(l1 == l3 && !memcmp(p1, p3, l1), "three threads packed other bytes");
		free(p1);
		free(p3);
		o.threads = 65;
		CHECK_RET(uf_pack_write(0, 1, &o, NULL), -EINVAL);
	}

	/* a file */
	CHECK_RET(uf_pack_open(mm, im.packed, &obj), 0);
	check_object(mm, obj, orig, "file");
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), -EROFS);
	CHECK_RET(uf_object_truncate(obj, 0), -EROFS);
	CHECK_RET(uf_object_punch_hole(obj, 0, UF_PAGE_SIZE), -EROFS);
	CHECK_RET(uf_object_sync(obj), -EROFS);
	CHECK_RET(uf_mmap(mm, UF_PAGE_SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, &a),
		  -EACCES);
	uf_object_put(obj);

	/* any raw store: memory, with short reads */
	raw.buf = slurp(im.packed, &raw.len);
	CHECK_RET(uf_pack_probe(&mem_ops, &raw), 1);
	CHECK_RET(uf_pack_create(mm, &mem_ops, &raw, raw.len, &obj), 0);
	check_object(mm, obj, orig, "raw store");
	CHECK(raw.released == 0, "raw store released early");
	uf_object_put(obj);
	CHECK(raw.released == 1, "raw store released %d times, want 1", raw.released);

	/* not packed: -ENOEXEC, and the raw store is still the caller's */
	plain.buf = orig;
	plain.len = len;
	CHECK_RET(uf_pack_probe(&mem_ops, &plain), 0);
	CHECK_RET(uf_pack_create(mm, &mem_ops, &plain, plain.len, &obj), -ENOEXEC);
	CHECK(plain.released == 0, "a refused raw store was released");

	/* packed or not, one call: the original bytes either way */
	CHECK_RET(uf_pack_create_any(mm, &mem_ops, NULL, &plain, plain.len, &obj), 0);
	check_object(mm, obj, orig, "any, plain");
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), -EROFS);
	uf_object_put(obj);
	CHECK(plain.released == 1, "plain raw store released %d times, want 1", plain.released);
	CHECK_RET(uf_pack_create_any(mm, &mem_ops, NULL, &raw, raw.len, &obj), 0);
	check_object(mm, obj, orig, "any, packed");
	uf_object_put(obj);
	CHECK(raw.released == 2, "packed raw store released %d times, want 2", raw.released);
	CHECK_RET(uf_pack_open(mm, im.src, &obj), -ENOEXEC);
	CHECK_RET(uf_pack_create(mm, NULL, &plain, plain.len, &obj), -EINVAL);

	free(raw.buf);
	free(orig);
	uf_mm_destroy(mm);
	return UT_PASS;
}
