// SPDX-License-Identifier: MIT
/*
 * uf_pack_write(): the writer.  Streams: the source is read once, in
 * order, and the packed snapshot written once, in order (the size is in
 * the trailer, not the header), so both ends may be pipes -- a snapshot
 * can be packed straight into an upload.
 *
 * Each frame: its all-zero pages are marked in the bitmap and left out,
 * the rest are compressed together as one zstd frame.  A frame of zero
 * pages only has no bytes at all.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "ufault-pack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

struct pk_writer {
	int src, dst;
	uint32_t frame_size;
	ZSTD_CCtx *cctx;
	unsigned char *frame, *packed, *cbuf;
	size_t cbound;
	uint64_t off;			/* bytes written to dst */
	struct pk_entry *ents;
	uint64_t nframes, cap;
	uint64_t *zmap;			/* the zero-page bitmap */
	uint64_t zcap;			/* words */
	struct uf_pack_write_stats st;
};

static int write_all(struct pk_writer *w, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(w->dst, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
		w->off += (uint64_t)n;
	}
	return 0;
}

/* Up to @len bytes from the source, fewer only at its end. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static bool page_zero(const unsigned char *p)
{
	const uint64_t *q = (const uint64_t *)(const void *)p;

	for (size_t i = 0; i < PK_PAGE / 8; i++)
		if (q[i])
			return false;
	return true;
}

static int grow(struct pk_writer *w, uint64_t npages)
{
	if (w->nframes == w->cap) {
		uint64_t cap = w->cap ? w->cap * 2 : 256;
		struct pk_entry *e = realloc(w->ents, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		w->ents = e;
		w->cap = cap;
	}
	if ((npages + 63) / 64 > w->zcap) {
		uint64_t cap = w->zcap ? w->zcap * 2 : 64;
		uint64_t *z;

		while (cap < (npages + 63) / 64)
			cap *= 2;
		z = realloc(w->zmap, cap * 8);
		if (!z)
			return -ENOMEM;
		memset(z + w->zcap, 0, (cap - w->zcap) * 8);
		w->zmap = z;
		w->zcap = cap;
	}
	return 0;
}

/* Pack one frame of @len bytes (a partial last page is padded with zeros). */
static int pack_frame(struct pk_writer *w, size_t len)
{
	uint64_t first = w->st.size / PK_PAGE;
	size_t npages = (len + PK_PAGE - 1) / PK_PAGE, kept = 0, c;
	struct pk_entry *e;
	int ret = grow(w, first + npages);

	if (ret)
		return ret;
	memset(w->frame + len, 0, npages * PK_PAGE - len);
	for (size_t i = 0; i < npages; i++) {
		const unsigned char *pg = w->frame + i * PK_PAGE;

		if (page_zero(pg)) {
			w->zmap[(first + i) / 64] |= 1ULL << ((first + i) % 64);
			w->st.zero_pages++;
		} else {
			memcpy(w->packed + kept++ * PK_PAGE, pg, PK_PAGE);
		}
	}
	e = &w->ents[w->nframes++];
	*e = (struct pk_entry){ .off = w->off };
	w->st.size += len;
	if (!kept) {
		w->st.zero_frames++;
		return 0;
	}
	c = ZSTD_compress2(w->cctx, w->cbuf, w->cbound, w->packed, kept * PK_PAGE);
	if (ZSTD_isError(c))
		return ZSTD_getErrorCode(c) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
	e->clen = (uint32_t)c;
	e->ulen = (uint32_t)(kept * PK_PAGE);
	e->sum = pk_xxh64(w->cbuf, c, 0);
	return write_all(w, w->cbuf, c);
}

static int write_header(struct pk_writer *w)
{
	unsigned char h[PK_HEADER_SIZE] = { 0 };

	memcpy(h, UF_PACK_MAGIC, UF_PACK_MAGIC_LEN);
	pk_put32(h + 8, UF_PACK_VERSION);
	pk_put32(h + 12, PK_HEADER_SIZE);
	pk_put32(h + 16, PK_PAGE);
	pk_put32(h + 20, w->frame_size);
	pk_put32(h + 24, PK_COMP_ZSTD);
	pk_put64(h + 56, pk_xxh64(h, 56, 0));
	return write_all(w, h, sizeof(h));
}

/* The index (entries, then the bitmap) and the trailer. */
static int write_index(struct pk_writer *w)
{
	uint64_t npages = (w->st.size + PK_PAGE - 1) / PK_PAGE, words = (npages + 63) / 64;
	size_t len = (size_t)(w->nframes * PK_ENTRY_SIZE + words * 8);
	unsigned char *idx = malloc(len ? len : 1), t[PK_TRAILER_SIZE] = { 0 };
	uint64_t index_off = w->off;
	int ret;

	if (!idx)
		return -ENOMEM;
	for (uint64_t i = 0; i < w->nframes; i++) {
		unsigned char *p = idx + i * PK_ENTRY_SIZE;

		pk_put64(p, w->ents[i].off);
		pk_put32(p + 8, w->ents[i].clen);
		pk_put32(p + 12, w->ents[i].ulen);
		pk_put64(p + 16, w->ents[i].sum);
	}
	for (uint64_t i = 0; i < words; i++)
		pk_put64(idx + w->nframes * PK_ENTRY_SIZE + i * 8, w->zmap[i]);
	ret = write_all(w, idx, len);
	memcpy(t, PK_TRAILER_MAGIC, 8);
	pk_put32(t + 8, UF_PACK_VERSION);
	pk_put64(t + 16, w->st.size);
	pk_put64(t + 24, index_off);
	pk_put64(t + 32, len);
	pk_put64(t + 40, w->nframes);
	pk_put64(t + 48, pk_xxh64(idx, len, 0));
	pk_put64(t + 56, pk_xxh64(t, 56, 0));
	free(idx);
	return ret ? ret : write_all(w, t, sizeof(t));
}

static int writer_init(struct pk_writer *w, const struct uf_pack_write_opts *o)
{
	uint32_t fs = o && o->frame_size ? o->frame_size : UF_PACK_FRAME_DEFAULT;
	int level = o && o->level ? o->level : 3;

	if (fs < PK_FRAME_MIN || fs > PK_FRAME_MAX || (fs & (fs - 1)) || level < 1 || level > 19)
		return -EINVAL;
	w->frame_size = fs;
	w->cbound = ZSTD_compressBound(fs);
	w->frame = malloc(fs);
	w->packed = malloc(fs);
	w->cbuf = malloc(w->cbound);
	w->cctx = ZSTD_createCCtx();
	if (!w->frame || !w->packed || !w->cbuf || !w->cctx)
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)))
		return -EIO;
	return 0;
}

PK_EXPORT int uf_pack_write(int src_fd, int dst_fd, const struct uf_pack_write_opts *opts,
			    struct uf_pack_write_stats *st)
{
	struct pk_writer w = { .src = src_fd, .dst = dst_fd };
	int ret;

	if (src_fd < 0 || dst_fd < 0)
		return -EINVAL;
	ret = writer_init(&w, opts);
	if (!ret)
		ret = write_header(&w);
	while (!ret) {
		ssize_t n = read_full(w.src, w.frame, w.frame_size);

		if (n <= 0) {
			ret = (int)n;
			break;
		}
		ret = pack_frame(&w, (size_t)n);
	}
	if (!ret)
		ret = write_index(&w);
	w.st.frames = w.nframes;
	w.st.packed_size = w.off;
	if (!ret && st)
		*st = w.st;
	ZSTD_freeCCtx(w.cctx);
	free(w.frame);
	free(w.packed);
	free(w.cbuf);
	free(w.ents);
	free(w.zmap);
	return ret;
}
