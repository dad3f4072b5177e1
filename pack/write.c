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
 *
 * With opts->threads > 1 a batch of that many frames is read, compressed
 * by as many threads at once (each with its own zstd context), then
 * written in order: the output is the same bytes whatever the count.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "ufault-pack.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define PK_THREADS_MAX	64

struct pk_writer;

/* One frame being packed: what a compressing thread owns. */
struct pk_job {
	struct pk_writer *w;
	unsigned int idx;		/* its place in a batch */
	ZSTD_CCtx *cctx;
	unsigned char *frame, *packed, *cbuf;
	size_t len;			/* bytes of the original in frame */
	size_t clen;			/* compressed bytes in cbuf; 0: all zero */
	size_t kept;			/* non-zero pages */
	uint64_t *zero;			/* its zero pages, a bit each */
	int err;
};

struct pk_writer {
	int src, dst;
	uint32_t frame_size;
	size_t cbound;
	uint64_t off;			/* bytes written to dst */
	struct pk_entry *ents;
	uint64_t nframes, cap;
	uint64_t *zmap;			/* the zero-page bitmap */
	uint64_t zcap;			/* words */
	struct uf_pack_write_stats st;

	/* the batch: job i is compressed by thread i (0: the caller) */
	struct pk_job jobs[PK_THREADS_MAX];
	unsigned int njobs;		/* 1 + the threads started */
	pthread_t tids[PK_THREADS_MAX];
	pthread_mutex_t lock;		/* the fields below */
	pthread_cond_t go, fin;
	uint64_t gen;			/* batches started */
	unsigned int nbatch;		/* frames in this batch */
	unsigned int ndone;		/* threads done with it */
	bool stop;
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

/* Compress job @j's frame (a partial last page padded with zeros): its
 * non-zero pages together, its zero pages noted.  No shared state. */
static void compress_job(struct pk_writer *w, struct pk_job *j)
{
	size_t npages = (j->len + PK_PAGE - 1) / PK_PAGE, c;

	memset(j->frame + j->len, 0, npages * PK_PAGE - j->len);
	memset(j->zero, 0, (w->frame_size / PK_PAGE + 63) / 64 * 8);
	j->kept = 0;
	j->clen = 0;
	j->err = 0;
	for (size_t i = 0; i < npages; i++) {
		const unsigned char *pg = j->frame + i * PK_PAGE;

		if (page_zero(pg))
			j->zero[i / 64] |= 1ULL << (i % 64);
		else
			memcpy(j->packed + j->kept++ * PK_PAGE, pg, PK_PAGE);
	}
	if (!j->kept)
		return;
	c = ZSTD_compress2(j->cctx, j->cbuf, w->cbound, j->packed, j->kept * PK_PAGE);
	if (ZSTD_isError(c))
		j->err = ZSTD_getErrorCode(c) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
	else
		j->clen = c;
}

/* Job @j's frame into the index, the bitmap and the output, in order. */
static int emit_job(struct pk_writer *w, const struct pk_job *j)
{
	uint64_t first = w->st.size / PK_PAGE;
	size_t npages = (j->len + PK_PAGE - 1) / PK_PAGE;
	struct pk_entry *e;
	int ret = j->err ? j->err : grow(w, first + npages);

	if (ret)
		return ret;
	for (size_t i = 0; i < npages; i++) {
		if (j->zero[i / 64] >> (i % 64) & 1) {
			w->zmap[(first + i) / 64] |= 1ULL << ((first + i) % 64);
			w->st.zero_pages++;
		}
	}
	e = &w->ents[w->nframes++];
	*e = (struct pk_entry){ .off = w->off };
	w->st.size += j->len;
	if (!j->kept) {
		w->st.zero_frames++;
		return 0;
	}
	e->clen = (uint32_t)j->clen;
	e->ulen = (uint32_t)(j->kept * PK_PAGE);
	e->sum = pk_xxh64(j->cbuf, j->clen, 0);
	return write_all(w, j->cbuf, j->clen);
}

/* A compressing thread: its job of every batch.  Locking: takes w->lock. */
static void *compress_thread(void *arg)
{
	struct pk_job *j = arg;
	struct pk_writer *w = j->w;
	uint64_t seen = 0;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->gen == seen && !w->stop)
			pthread_cond_wait(&w->go, &w->lock);
		if (w->stop)
			break;
		seen = w->gen;
		if (j->idx < w->nbatch) {
			pthread_mutex_unlock(&w->lock);
			compress_job(w, j);
			pthread_mutex_lock(&w->lock);
		}
		w->ndone++;
		pthread_cond_broadcast(&w->fin);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Compress the batch's @n jobs, one a thread, the caller's job 0 too. */
static void compress_batch(struct pk_writer *w, unsigned int n)
{
	pthread_mutex_lock(&w->lock);
	w->nbatch = n;
	w->ndone = 0;
	w->gen++;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);
	if (n)
		compress_job(w, &w->jobs[0]);
	pthread_mutex_lock(&w->lock);
	while (w->ndone < w->njobs - 1)
		pthread_cond_wait(&w->fin, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* Read, compress and write one batch; *eof once the source ended. */
static int pack_batch(struct pk_writer *w, bool *eof)
{
	unsigned int n = 0;
	int ret = 0;

	while (n < w->njobs && !*eof) {
		ssize_t r = read_full(w->src, w->jobs[n].frame, w->frame_size);

		if (r < 0)
			return (int)r;
		*eof = (size_t)r < w->frame_size;
		if (r)
			w->jobs[n++].len = (size_t)r;
	}
	compress_batch(w, n);
	for (unsigned int i = 0; !ret && i < n; i++)
		ret = emit_job(w, &w->jobs[i]);
	return ret;
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

static int job_init(struct pk_writer *w, struct pk_job *j, unsigned int idx, int level)
{
	j->w = w;
	j->idx = idx;
	j->frame = malloc(w->frame_size);
	j->packed = malloc(w->frame_size);
	j->cbuf = malloc(w->cbound);
	j->zero = malloc((w->frame_size / PK_PAGE + 63) / 64 * 8);
	j->cctx = ZSTD_createCCtx();
	if (!j->frame || !j->packed || !j->cbuf || !j->zero || !j->cctx)
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(j->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(j->cctx, ZSTD_c_checksumFlag, 1)))
		return -EIO;
	return 0;
}

static void job_free(struct pk_job *j)
{
	ZSTD_freeCCtx(j->cctx);
	free(j->frame);
	free(j->packed);
	free(j->cbuf);
	free(j->zero);
}

/* The jobs, and a thread for each but the first (fewer if the system
 * will not start them: the output is the same). */
static int writer_init(struct pk_writer *w, const struct uf_pack_write_opts *o)
{
	uint32_t fs = o && o->frame_size ? o->frame_size : UF_PACK_FRAME_DEFAULT;
	int level = o && o->level ? o->level : 3;
	unsigned int threads = o && o->threads ? o->threads : 1, i;
	int ret = 0;

	if (fs < PK_FRAME_MIN || fs > PK_FRAME_MAX || (fs & (fs - 1)) || level < 1 || level > 19 ||
	    threads > PK_THREADS_MAX)
		return -EINVAL;
	w->frame_size = fs;
	w->cbound = ZSTD_compressBound(fs);
	w->njobs = 1;
	for (i = 0; !ret && i < threads; i++)
		ret = job_init(w, &w->jobs[i], i, level);
	for (i = 1; !ret && i < threads; i++) {
		if (pthread_create(&w->tids[i], NULL, compress_thread, &w->jobs[i]))
			break;
		w->njobs++;
	}
	return ret;
}

static void writer_free(struct pk_writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);
	for (unsigned int i = 1; i < w->njobs; i++)
		pthread_join(w->tids[i], NULL);
	for (unsigned int i = 0; i < PK_THREADS_MAX; i++)
		job_free(&w->jobs[i]);
	pthread_cond_destroy(&w->go);
	pthread_cond_destroy(&w->fin);
	pthread_mutex_destroy(&w->lock);
	free(w->ents);
	free(w->zmap);
}

PK_EXPORT int uf_pack_write(int src_fd, int dst_fd, const struct uf_pack_write_opts *opts,
			    struct uf_pack_write_stats *st)
{
	struct pk_writer *w;
	bool eof = false;
	int ret;

	if (src_fd < 0 || dst_fd < 0)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->src = src_fd;
	w->dst = dst_fd;
	pthread_mutex_init(&w->lock, NULL);
	uf_lockdep_class(&w->lock, UF_LK_PACK_WRITE);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->fin, NULL);
	ret = writer_init(w, opts);
	if (!ret)
		ret = write_header(w);
	while (!ret && !eof)
		ret = pack_batch(w, &eof);
	if (!ret)
		ret = write_index(w);
	w->st.frames = w->nframes;
	w->st.packed_size = w->off;
	if (!ret && st)
		*st = w->st;
	writer_free(w);
	free(w);
	return ret;
}
