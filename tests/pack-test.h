/* SPDX-License-Identifier: MIT */
/*
 * Packed-snapshot tests: make a source image of chosen page kinds (zero,
 * text-like, random, the test pattern) in /dev/shm, pack it with
 * uf_pack_write(), and read its index as docs/packed.md lays it out, to
 * find a frame's bytes.  Both files are removed at exit (also when the
 * test fails).  Without libzstd the tests link tools/pack/no-pack.c, and
 * pt_make() skips.  Not a test program itself.
 */
#ifndef UT_PACK_TEST_H
#define UT_PACK_TEST_H

#define _GNU_SOURCE
#include "helpers.h"
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ufault-pack.h>

enum pt_kind { PT_ZERO, PT_TEXT, PT_RANDOM, PT_PATTERN };

struct pt_image {
	char src[128], packed[128];
	int src_fd;
	uint64_t size;
	struct uf_pack_write_stats st;
};

/* A frame's place in the packed file, from the index. */
struct pt_frame {
	uint64_t off;
	uint32_t clen, ulen;
};

/* the files to remove at exit (atexit takes no argument) */
static char pt_files[4][128];

static void pt_cleanup(void)
{
	for (int i = 0; i < 4; i++)
		if (pt_files[i][0])
			unlink(pt_files[i]);
}

static void pt_remember(const char *path)
{
	static bool armed;

	if (!armed) {
		atexit(pt_cleanup);
		armed = true;
	}
	for (int i = 0; i < 4; i++) {
		if (!pt_files[i][0]) {
			snprintf(pt_files[i], sizeof(pt_files[i]), "%s", path);
			return;
		}
	}
}

static uint64_t pt_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Page @pg of kind @k: what its bytes are, the same every time. */
static void pt_page(unsigned char *p, uint64_t pg, enum pt_kind k)
{
	static const char *const words[] = {
		"the", "page", "fault", "handler", "reads", "a", "frame", "from", "store",
		"and", "copies", "it", "into", "cache", "kernel", "memory", "of", "snapshot",
		"restore", "guest", "virtual", "machine", "zero", "index", "compressed",
		"struct", "return", "int", "static", "void", "const", "unsigned", "char",
		"if", "for", "while", "else", "NULL", "errno", "uint64_t", "size_t",
	};
	uint64_t s = pg * 0x9E3779B97F4A7C15ULL + 1;
	size_t i = 0;

	switch (k) {
	case PT_ZERO:
		memset(p, 0, UF_PAGE_SIZE);
		break;
	case PT_TEXT:
		while (i < UF_PAGE_SIZE) {
			const char *w = words[pt_rand(&s) % (sizeof(words) / sizeof(words[0]))];

			for (; *w && i < UF_PAGE_SIZE; w++)
				p[i++] = (unsigned char)*w;
			if (i < UF_PAGE_SIZE)
				p[i++] = pt_rand(&s) % 9 ? ' ' : '\n';
		}
		break;
	case PT_RANDOM:
		for (i = 0; i < UF_PAGE_SIZE; i += 8) {
			uint64_t v = pt_rand(&s);

			memcpy(p + i, &v, 8);
		}
		break;
	case PT_PATTERN:
		for (i = 0; i < UF_PAGE_SIZE; i++)
			p[i] = ut_pattern(pg * UF_PAGE_SIZE + i);
		break;
	}
}

/* Skip (77) when the library is the stub of a build without libzstd. */
static void pt_skip_if_stub(int ret)
{
	if (ret == -ENOTSUP) {
		printf("skip: built without libzstd (PACK=no): no packed snapshots\n");
		exit(UT_SKIP);
	}
}

/* Pack the file @src (already written) into a new file: im->packed. */
static void pt_pack(struct pt_image *im, uint32_t frame_size)
{
	struct uf_pack_write_opts o = { .frame_size = frame_size };
	int in = open(im->src, O_RDONLY), out, ret;

	snprintf(im->packed, sizeof(im->packed), "/dev/shm/ufault-pack-XXXXXX");
	out = mkstemp(im->packed);
	CHECK(in >= 0 && out >= 0, "open: %s", strerror(errno));
	pt_remember(im->packed);
	ret = uf_pack_write(in, out, &o, &im->st);
	pt_skip_if_stub(ret);
	CHECK(ret == 0, "uf_pack_write: %s", strerror(-ret));
	close(in);
	close(out);
}

/* A source of @size bytes whose page p is of kind @kind(p), and its
 * packed form with frames of @frame_size bytes (0: the default). */
static void pt_make(struct pt_image *im, uint64_t size, enum pt_kind (*kind)(uint64_t),
		    uint32_t frame_size)
{
	unsigned char page[UF_PAGE_SIZE];

	memset(im, 0, sizeof(*im));
	im->size = size;
	snprintf(im->src, sizeof(im->src), "/dev/shm/ufault-pack-src-XXXXXX");
	im->src_fd = mkstemp(im->src);
	CHECK(im->src_fd >= 0, "mkstemp: %s", strerror(errno));
	pt_remember(im->src);
	for (uint64_t pg = 0; pg * UF_PAGE_SIZE < size; pg++) {
		size_t n = size - pg * UF_PAGE_SIZE < UF_PAGE_SIZE ?
			(size_t)(size - pg * UF_PAGE_SIZE) : UF_PAGE_SIZE;

		pt_page(page, pg, kind(pg));
		CHECK(pwrite(im->src_fd, page, n, (off_t)(pg * UF_PAGE_SIZE)) == (ssize_t)n,
		      "pwrite: %s", strerror(errno));
	}
	pt_pack(im, frame_size);
}

/* The byte at @off of the source. */
static __attribute__((unused)) unsigned char pt_src_byte(const struct pt_image *im, uint64_t off)
{
	unsigned char b;

	CHECK(pread(im->src_fd, &b, 1, (off_t)off) == 1, "pread: %s", strerror(errno));
	return b;
}

static uint64_t pt_get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Frame @f's place, from the packed file's trailer and index (the layout
 * of docs/packed.md); returns the number of frames. */
static __attribute__((unused)) uint64_t pt_frame(const struct pt_image *im, uint64_t f,
						 struct pt_frame *out)
{
	unsigned char t[64], e[24];
	int fd = open(im->packed, O_RDONLY);
	struct stat sb;
	uint64_t index_off, nframes;

	CHECK(fd >= 0 && fstat(fd, &sb) == 0, "open %s: %s", im->packed, strerror(errno));
	CHECK(pread(fd, t, 64, sb.st_size - 64) == 64, "pread trailer");
	index_off = pt_get64(t + 24);
	nframes = pt_get64(t + 40);
	CHECK(f < nframes, "frame %lu of %lu", (unsigned long)f, (unsigned long)nframes);
	CHECK(pread(fd, e, 24, (off_t)(index_off + f * 24)) == 24, "pread index");
	out->off = pt_get64(e);
	out->clen = (uint32_t)pt_get64(e + 8);
	out->ulen = (uint32_t)(pt_get64(e + 8) >> 32);
	close(fd);
	return nframes;
}

/* XOR one byte of the packed file at @off with 0x55. */
static __attribute__((unused)) void pt_damage(const struct pt_image *im, uint64_t off)
{
	int fd = open(im->packed, O_RDWR);
	unsigned char b;

	CHECK(fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1, "read %s", im->packed);
	b ^= 0x55;
	CHECK(pwrite(fd, &b, 1, (off_t)off) == 1, "write %s", im->packed);
	close(fd);
}

/*
 * A raw store over a packed file that counts, per frame, the reads that
 * cover its compressed bytes: each is one decompression of the frame.
 */
struct pt_counting {
	int fd;
	uint64_t nframes, size;
	struct pt_frame *fr;
	pthread_mutex_t lock;
	unsigned int *reads;		/* per frame */
	unsigned int raw_reads;		/* reads of frames (not header, index) */
	unsigned int raw_readvs;	/* calls of pt_counting_readv() */
};

/* Count the frames [@off, @off + @len) covers.  Locking: c->lock. */
static bool pt_count(struct pt_counting *c, size_t len, uint64_t off)
{
	bool frames = false;

	for (uint64_t f = 0; f < c->nframes; f++) {
		if (c->fr[f].clen && off <= c->fr[f].off && c->fr[f].off + c->fr[f].clen <= off + len) {
			c->reads[f]++;
			frames = true;
		}
	}
	return frames;
}

static ssize_t pt_counting_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct pt_counting *c = store;

	pthread_mutex_lock(&c->lock);
	c->raw_reads += pt_count(c, len, off);
	pthread_mutex_unlock(&c->lock);
	return pread(c->fd, buf, len, (off_t)off);
}

/* The raw store's batched read, for uf_pack_create_readv(). */
static __attribute__((unused)) int pt_counting_readv(void *store, const struct uf_store_iov *iov,
						     size_t n)
{
	struct pt_counting *c = store;

	pthread_mutex_lock(&c->lock);
	c->raw_readvs++;
	for (size_t i = 0; i < n; i++)
		pt_count(c, iov[i].len, iov[i].off);
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < n; i++)
		if (pread(c->fd, iov[i].buf, iov[i].len, (off_t)iov[i].off) != (ssize_t)iov[i].len)
			return -EIO;
	return 0;
}

static const struct uf_store_ops pt_counting_ops = { .read = pt_counting_read };

static __attribute__((unused)) void pt_counting_reset(struct pt_counting *c)
{
	pthread_mutex_lock(&c->lock);
	memset(c->reads, 0, c->nframes * sizeof(*c->reads));
	c->raw_reads = 0;
	c->raw_readvs = 0;
	pthread_mutex_unlock(&c->lock);
}

/* The counting store of @im's packed file (kept open for the test). */
static __attribute__((unused)) void pt_counting_init(struct pt_counting *c, const struct pt_image *im)
{
	struct pt_frame f0;

	memset(c, 0, sizeof(*c));
	c->fd = open(im->packed, O_RDONLY);
	CHECK(c->fd >= 0, "open %s: %s", im->packed, strerror(errno));
	c->size = (uint64_t)lseek(c->fd, 0, SEEK_END);
	pthread_mutex_init(&c->lock, NULL);
	c->nframes = pt_frame(im, 0, &f0);
	c->fr = calloc(c->nframes, sizeof(*c->fr));
	c->reads = calloc(c->nframes, sizeof(*c->reads));
	CHECK(c->fr && c->reads, "calloc");
	for (uint64_t f = 0; f < c->nframes; f++)
		pt_frame(im, f, &c->fr[f]);
}

/* Frame @f's reads; with @f = UINT64_MAX the ->read calls that read
 * frames, UINT64_MAX - 1 the readv calls (readahead's worker may be
 * reading). */
static __attribute__((unused)) unsigned int pt_counted(struct pt_counting *c, uint64_t f)
{
	unsigned int n;

	pthread_mutex_lock(&c->lock);
	n = f == UINT64_MAX ? c->raw_reads : f == UINT64_MAX - 1 ? c->raw_readvs : c->reads[f];
	pthread_mutex_unlock(&c->lock);
	return n;
}

static __attribute__((unused)) void pt_counting_fini(struct pt_counting *c)
{
	close(c->fd);
	free(c->fr);
	free(c->reads);
	pthread_mutex_destroy(&c->lock);
}

/* An object over the counting store (with its batched read when
 * @readv), its counts reset after the open's reads (header, trailer,
 * index). */
static __attribute__((unused)) struct uf_object *pt_counting_object(struct uf_mm *mm,
								     struct pt_counting *c,
								     bool readv)
{
	struct uf_object *obj;

	CHECK_RET(uf_pack_create_readv(mm, &pt_counting_ops, readv ? pt_counting_readv : NULL, c,
				       c->size, &obj), 0);
	pt_counting_reset(c);
	return obj;
}

#endif
