// SPDX-License-Identifier: MIT
/*
 * The packed store: uf_store_ops that serve the original bytes of a packed
 * snapshot held by any raw store (a file, an object behind a URL), like
 * squashfs serves a file from compressed blocks.
 *
 * A read finds each frame it covers in a small cache of decompressed
 * frames (the squashfs "read cache"); a frame not there is read from the
 * raw store and decompressed once, into a slot, and every page of it is
 * then a copy: the pages of a readahead window, and later faults in the
 * same frame while it stays cached.  Frames a read needs that follow each
 * other in the raw store are read with one raw ->read (one request to a
 * remote store), then decompressed one by one.  All-zero pages are in no
 * frame: a read of them is a memset.
 *
 * Errors fail closed: a frame whose checksum, lengths or zstd decode do
 * not hold is -EIO, and so is every read that needs it, so ufault gives
 * the faulting access SIGBUS; bytes of a damaged frame are never copied
 * out.  A failed frame is not kept: the next read tries the raw store
 * again (a remote store's error may pass).
 *
 * Locking: st->lock guards the slots (state, refs, frame) and the decoder
 * pool; it is never held across a raw read or a decompression.  A slot
 * being loaded is owned by its loader; readers of a slot hold a reference
 * and the slot is not reused while they do.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "ufault-pack.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define PK_CACHE_BYTES	(32u << 20)	/* decompressed frames kept, at most */
#define PK_CACHE_MIN	4		/* slots, whatever the frame size */
#define PK_RUN_MAX	16		/* frames per raw read */
#define PK_NONE		UINT64_MAX

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY };

struct pk_slot {
	uint64_t frame;			/* PK_NONE: empty */
	unsigned int state;
	unsigned int refs;
	int err;			/* SLOT_READY: the load failed (kept while referenced) */
	uint64_t used;			/* LRU clock */
	unsigned char *buf;		/* frame_size bytes, the frame laid out in full */
};

struct pk_dec {
	ZSTD_DCtx *dctx;
	unsigned char *cbuf;
	size_t ccap;
	struct pk_dec *next;
};

struct pk_store {
	const struct uf_store_ops *raw_ops;
	int (*raw_readv)(void *raw, const struct uf_store_iov *iov, size_t n);	/* or NULL */
	void *raw;
	uint64_t size, npages, nframes, index_off;
	uint32_t frame_size, fpages;
	struct pk_entry *ents;
	uint64_t *zmap;

	pthread_mutex_t lock;		/* the fields below */
	pthread_cond_t cond;		/* a slot loaded or freed */
	struct pk_slot *slots;
	unsigned int nslots;
	uint64_t clock;
	struct pk_dec *decs;		/* idle decoders */
};

static bool page_is_zero(const struct pk_store *st, uint64_t pg)
{
	return st->zmap[pg / 64] >> (pg % 64) & 1;
}

/* Pages in frame @f (the last one may be short). */
static uint32_t frame_pages(const struct pk_store *st, uint64_t f)
{
	uint64_t left = st->npages - f * st->fpages;

	return left < st->fpages ? (uint32_t)left : st->fpages;
}

/* [@len bytes at @off) of the raw store, in full: a short store is -EIO. */
static int raw_read(const struct uf_store_ops *ops, void *raw, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = ops->read(raw, (char *)buf + done, len - done, off + done);

		if (n < 0)
			return (int)n;
		if (n == 0 || (size_t)n > len - done)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Decoding one frame                                                  */
/* ------------------------------------------------------------------ */

static struct pk_dec *dec_get(struct pk_store *st, size_t clen)
{
	struct pk_dec *d;

	pthread_mutex_lock(&st->lock);
	d = st->decs;
	if (d)
		st->decs = d->next;
	pthread_mutex_unlock(&st->lock);
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		d->dctx = ZSTD_createDCtx();
		if (!d->dctx) {
			free(d);
			return NULL;
		}
	}
	if (d->ccap < clen) {
		unsigned char *b = realloc(d->cbuf, clen);

		if (!b) {
			pthread_mutex_lock(&st->lock);
			d->next = st->decs;
			st->decs = d;
			pthread_mutex_unlock(&st->lock);
			return NULL;
		}
		d->cbuf = b;
		d->ccap = clen;
	}
	return d;
}

static void dec_put(struct pk_store *st, struct pk_dec *d)
{
	pthread_mutex_lock(&st->lock);
	d->next = st->decs;
	st->decs = d;
	pthread_mutex_unlock(&st->lock);
}

/*
 * Check and decompress frame @f from @src into @out, and lay its pages out
 * in full: the non-zero pages are packed at the front, each moves up to
 * its place (last first, so none is overwritten before it moved), and the
 * zero pages are cleared.
 */
static int frame_decode(struct pk_store *st, ZSTD_DCtx *dctx, const unsigned char *src,
			uint64_t f, unsigned char *out)
{
	const struct pk_entry *e = &st->ents[f];
	uint64_t first = f * st->fpages;
	size_t n;
	int64_t k;

	if (pk_xxh64(src, e->clen, 0) != e->sum)
		return -EIO;
	n = ZSTD_decompressDCtx(dctx, out, st->frame_size, src, e->clen);
	if (ZSTD_isError(n) || n != e->ulen)
		return -EIO;
	k = (int64_t)(e->ulen / PK_PAGE) - 1;
	for (int64_t p = (int64_t)frame_pages(st, f) - 1; p >= 0; p--) {
		unsigned char *dst = out + (size_t)p * PK_PAGE;

		if (page_is_zero(st, first + (uint64_t)p)) {
			memset(dst, 0, PK_PAGE);
		} else {
			if (k != p)
				memmove(dst, out + (size_t)k * PK_PAGE, PK_PAGE);
			k--;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The frame cache                                                     */
/* ------------------------------------------------------------------ */

static struct pk_slot *__slot_find(struct pk_store *st, uint64_t f)
{
	for (unsigned int i = 0; i < st->nslots; i++)
		if (st->slots[i].frame == f)
			return &st->slots[i];
	return NULL;
}

/* The least recently used slot nobody holds, or NULL.  Locking: st->lock. */
static struct pk_slot *__slot_victim(struct pk_store *st)
{
	struct pk_slot *v = NULL;

	for (unsigned int i = 0; i < st->nslots; i++) {
		struct pk_slot *s = &st->slots[i];

		if (s->state == SLOT_LOADING || s->refs)
			continue;
		if (s->state == SLOT_EMPTY)
			return s;
		if (!v || s->used < v->used)
			v = s;
	}
	return v;
}

static void __slot_claim(struct pk_store *st, struct pk_slot *s, uint64_t f, unsigned int refs)
{
	s->frame = f;
	s->state = SLOT_LOADING;
	s->refs = refs;
	s->err = 0;
	s->used = ++st->clock;
}

/* Drop a reference; a failed load leaves the cache with its last holder.
 * Locking: st->lock. */
static void __slot_put(struct pk_slot *s)
{
	if (--s->refs == 0 && s->err) {
		s->frame = PK_NONE;
		s->state = SLOT_EMPTY;
		s->err = 0;
	}
}

/*
 * Frames after @f that this read needs too (up to @last), that follow it
 * in the raw store and are neither zero nor cached, claimed while slots
 * are free: loaded by the same raw read.  Locking: st->lock.
 */
static size_t __claim_run(struct pk_store *st, uint64_t f, uint64_t last, struct pk_slot **run)
{
	size_t n = 1;

	for (uint64_t g = f + 1; g <= last && n < PK_RUN_MAX; g++) {
		const struct pk_entry *p = &st->ents[g - 1], *e = &st->ents[g];
		struct pk_slot *s;

		if (!e->clen || e->off != p->off + p->clen || __slot_find(st, g))
			break;
		s = __slot_victim(st);
		if (!s)
			break;
		__slot_claim(st, s, g, 0);
		run[n++] = s;
	}
	return n;
}

/* The @n slots of @run loaded (@err[i] 0) or failed: wake their waiters. */
static void slots_publish(struct pk_store *st, struct pk_slot **run, const int *err, size_t n)
{
	pthread_mutex_lock(&st->lock);
	for (size_t i = 0; i < n; i++) {
		run[i]->state = SLOT_READY;
		run[i]->err = err[i];
		if (err[i] && !run[i]->refs) {
			run[i]->frame = PK_NONE;
			run[i]->state = SLOT_EMPTY;
		}
	}
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

/* Read and decode the @n claimed frames of @run (consecutive in the raw
 * store), then publish them.  Called without st->lock. */
static void load_run(struct pk_store *st, struct pk_slot **run, size_t n)
{
	const struct pk_entry *a = &st->ents[run[0]->frame], *z = &st->ents[run[n - 1]->frame];
	size_t total = (size_t)(z->off + z->clen - a->off);
	struct pk_dec *d = dec_get(st, total);
	int err[PK_RUN_MAX], ret = d ? 0 : -ENOMEM;

	for (size_t i = 0; !ret && i < n; i++)
		if (!run[i]->buf && !(run[i]->buf = malloc(st->frame_size)))
			ret = -ENOMEM;
	if (!ret)
		ret = raw_read(st->raw_ops, st->raw, d->cbuf, total, a->off);
	for (size_t i = 0; i < n; i++) {
		const struct pk_entry *e = &st->ents[run[i]->frame];

		err[i] = ret ? ret : frame_decode(st, d->dctx, d->cbuf + (e->off - a->off),
						  run[i]->frame, run[i]->buf);
	}
	if (d)
		dec_put(st, d);
	slots_publish(st, run, err, n);
}

/*
 * Frame @f decoded, with a reference the caller drops by frame_put(); or
 * NULL with *err.  Frames up to @last are what the read needs next.
 */
static struct pk_slot *frame_get(struct pk_store *st, uint64_t f, uint64_t last, int *err)
{
	struct pk_slot *run[PK_RUN_MAX], *s;
	size_t n;

	pthread_mutex_lock(&st->lock);
	for (;;) {
		s = __slot_find(st, f);
		if (s) {
			s->refs++;
			s->used = ++st->clock;
			while (s->state == SLOT_LOADING)
				pthread_cond_wait(&st->cond, &st->lock);
			break;
		}
		s = __slot_victim(st);
		if (s) {
			__slot_claim(st, s, f, 1);
			run[0] = s;
			n = __claim_run(st, f, last, run);
			pthread_mutex_unlock(&st->lock);
			load_run(st, run, n);
			pthread_mutex_lock(&st->lock);
			break;
		}
		pthread_cond_wait(&st->cond, &st->lock);
	}
	if (s->err) {
		*err = s->err;
		__slot_put(s);
		s = NULL;
	}
	pthread_mutex_unlock(&st->lock);
	return s;
}

static void frame_put(struct pk_store *st, struct pk_slot *s)
{
	pthread_mutex_lock(&st->lock);
	__slot_put(s);
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

/* ------------------------------------------------------------------ */
/* The store's methods                                                 */
/* ------------------------------------------------------------------ */

static bool range_zero(const struct pk_store *st, uint64_t off, size_t len)
{
	for (uint64_t pg = off / PK_PAGE; pg * PK_PAGE < off + len; pg++)
		if (!page_is_zero(st, pg))
			return false;
	return true;
}

static ssize_t pk_read(void *store, void *buf, size_t len, uint64_t off)
{
	struct pk_store *st = store;
	uint64_t F = st->frame_size, last;
	size_t done = 0;

	if (off >= st->size)
		return 0;
	if (len > st->size - off)
		len = (size_t)(st->size - off);
	last = (off + len - 1) / F;
	while (done < len) {
		uint64_t o = off + done, f = o / F, fo = o % F;
		size_t n = F - fo < len - done ? (size_t)(F - fo) : len - done;
		struct pk_slot *s;
		int err;

		if (range_zero(st, o, n)) {
			memset((char *)buf + done, 0, n);
		} else {
			s = frame_get(st, f, last, &err);
			if (!s)
				return done ? (ssize_t)done : err;
			memcpy((char *)buf + done, s->buf + fo, n);
			frame_put(st, s);
		}
		done += n;
	}
	return (ssize_t)done;
}

/*
 * Claim the frames @iov needs that are neither zero nor cached, while
 * slots are free (half the cache at most).  Locking: st->lock.
 */
static size_t __claim_batch(struct pk_store *st, const struct uf_store_iov *iov, size_t niov,
			    struct pk_slot **run, size_t max)
{
	uint64_t F = st->frame_size;
	size_t n = 0;

	for (size_t i = 0; i < niov; i++) {
		uint64_t end = iov[i].off + iov[i].len < st->size ? iov[i].off + iov[i].len : st->size;

		for (uint64_t f = iov[i].off / F; f * F < end; f++) {
			uint64_t a = f * F > iov[i].off ? f * F : iov[i].off;
			uint64_t b = (f + 1) * F < end ? (f + 1) * F : end;
			struct pk_slot *s;

			if (range_zero(st, a, (size_t)(b - a)) || __slot_find(st, f))
				continue;
			if (n == max || !(s = __slot_victim(st)))
				return n;
			__slot_claim(st, s, f, 0);
			run[n++] = s;
		}
	}
	return n;
}

static int cmp_slot_off(const void *a, const void *b, void *arg)
{
	const struct pk_store *st = arg;
	uint64_t x = st->ents[(*(struct pk_slot *const *)a)->frame].off;
	uint64_t y = st->ents[(*(struct pk_slot *const *)b)->frame].off;

	return x < y ? -1 : x > y;
}

/* The raw extents of the @n claimed frames (sorted by place): one per run
 * of frames next to each other, into @cbuf.  Returns how many. */
static size_t batch_extents(struct pk_store *st, struct pk_slot **run, size_t n,
			    unsigned char *cbuf, struct uf_store_iov *riov)
{
	size_t nr = 0, pos = 0;

	for (size_t i = 0; i < n; i++) {
		const struct pk_entry *e = &st->ents[run[i]->frame];

		if (nr && riov[nr - 1].off + riov[nr - 1].len == e->off) {
			riov[nr - 1].len += e->clen;
		} else {
			riov[nr++] = (struct uf_store_iov){ .buf = cbuf + pos, .len = e->clen,
							    .off = e->off };
		}
		pos += e->clen;
	}
	return nr;
}

/*
 * With the raw store's batched read: the frames a batched read needs,
 * read with one raw readv (all the runs at once) and decoded into the
 * cache, so that the copy that follows finds them there.  Best effort:
 * whatever this does not load, the copy reads frame by frame.
 */
static void readv_frames(struct pk_store *st, const struct uf_store_iov *iov, size_t niov)
{
	size_t max = st->nslots / 2, n, nr, total = 0, pos = 0;
	struct pk_slot **run = calloc(max ? max : 1, sizeof(*run));
	struct uf_store_iov *riov = calloc(max ? max : 1, sizeof(*riov));
	int *err = calloc(max ? max : 1, sizeof(*err)), ret = 0;
	unsigned char *cbuf = NULL;
	struct pk_dec *d = NULL;

	if (!run || !riov || !err)
		goto out;
	pthread_mutex_lock(&st->lock);
	n = __claim_batch(st, iov, niov, run, max);
	pthread_mutex_unlock(&st->lock);
	if (!n)
		goto out;
	qsort_r(run, n, sizeof(*run), cmp_slot_off, st);
	for (size_t i = 0; i < n; i++)
		total += st->ents[run[i]->frame].clen;
	cbuf = malloc(total);
	d = dec_get(st, 0);
	ret = cbuf && d ? 0 : -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++)
		if (!run[i]->buf && !(run[i]->buf = malloc(st->frame_size)))
			ret = -ENOMEM;
	nr = ret ? 0 : batch_extents(st, run, n, cbuf, riov);
	if (!ret)
		ret = st->raw_readv(st->raw, riov, nr);
	for (size_t i = 0; i < n; i++) {
		const struct pk_entry *e = &st->ents[run[i]->frame];

		err[i] = ret ? ret : frame_decode(st, d->dctx, cbuf + pos, run[i]->frame, run[i]->buf);
		pos += e->clen;
	}
	if (d)
		dec_put(st, d);
	slots_publish(st, run, err, n);
out:
	free(cbuf);
	free(run);
	free(riov);
	free(err);
}

static int pk_readv(void *store, const struct uf_store_iov *iov, size_t niov)
{
	struct pk_store *st = store;

	if (st->raw_readv)
		readv_frames(st, iov, niov);
	for (size_t i = 0; i < niov; i++) {
		size_t done = 0;

		while (done < iov[i].len) {
			ssize_t n = pk_read(store, (char *)iov[i].buf + done, iov[i].len - done,
					    iov[i].off + done);

			if (n < 0)
				return (int)n;
			if (n == 0) {
				memset((char *)iov[i].buf + done, 0, iov[i].len - done);
				break;
			}
			done += (size_t)n;
		}
	}
	return 0;
}

static void pk_free(struct pk_store *st, bool release_raw)
{
	struct pk_dec *d;

	if (release_raw && st->raw_ops->release)
		st->raw_ops->release(st->raw);
	for (unsigned int i = 0; st->slots && i < st->nslots; i++)
		free(st->slots[i].buf);
	while ((d = st->decs)) {
		st->decs = d->next;
		ZSTD_freeDCtx(d->dctx);
		free(d->cbuf);
		free(d);
	}
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st->slots);
	free(st->ents);
	free(st->zmap);
	free(st);
}

static void pk_release(void *store)
{
	pk_free(store, true);
}

static const struct uf_store_ops pk_ops = {
	.read		= pk_read,
	.release	= pk_release,
};

/* ------------------------------------------------------------------ */
/* Opening: header, trailer, index                                     */
/* ------------------------------------------------------------------ */

PK_EXPORT int uf_pack_probe(const struct uf_store_ops *ops, void *store)
{
	unsigned char m[UF_PACK_MAGIC_LEN];
	size_t done = 0;

	if (!ops || !ops->read)
		return -EINVAL;
	while (done < sizeof(m)) {
		ssize_t n = ops->read(store, m + done, sizeof(m) - done, done);

		if (n < 0)
			return (int)n;
		if (n == 0 || (size_t)n > sizeof(m) - done)
			return 0;
		done += (size_t)n;
	}
	return !memcmp(m, UF_PACK_MAGIC, sizeof(m));
}

static int parse_header(struct pk_store *st, const unsigned char *h)
{
	uint32_t fs = pk_get32(h + 20);

	if (memcmp(h, UF_PACK_MAGIC, UF_PACK_MAGIC_LEN))
		return -ENOEXEC;
	if (pk_get32(h + 8) != UF_PACK_VERSION)
		return -EPROTONOSUPPORT;
	if (pk_get64(h + 56) != pk_xxh64(h, 56, 0) || pk_get32(h + 12) != PK_HEADER_SIZE ||
	    pk_get32(h + 16) != PK_PAGE || pk_get32(h + 24) != PK_COMP_ZSTD ||
	    fs < PK_FRAME_MIN || fs > PK_FRAME_MAX || (fs & (fs - 1)))
		return -EIO;
	st->frame_size = fs;
	st->fpages = fs / PK_PAGE;
	return 0;
}

/* The trailer's numbers, each checked against the others and @raw_size. */
static int parse_trailer(struct pk_store *st, const unsigned char *t, uint64_t raw_size,
			 uint64_t *index_len, uint64_t *index_sum)
{
	uint64_t size = pk_get64(t + 16), off = pk_get64(t + 24), len = pk_get64(t + 32);
	uint64_t nframes = pk_get64(t + 40), npages, words;

	if (memcmp(t, PK_TRAILER_MAGIC, 8) || pk_get64(t + 56) != pk_xxh64(t, 56, 0) ||
	    pk_get32(t + 8) != UF_PACK_VERSION || size > (UINT64_MAX >> 2))
		return -EIO;
	npages = (size + PK_PAGE - 1) / PK_PAGE;
	words = (npages + 63) / 64;
	if (nframes != (size + st->frame_size - 1) / st->frame_size ||
	    nframes > raw_size / PK_ENTRY_SIZE || words > raw_size / 8 ||
	    len != nframes * PK_ENTRY_SIZE + words * 8 ||
	    off < PK_HEADER_SIZE || off > raw_size || raw_size - off < PK_TRAILER_SIZE ||
	    raw_size - off - PK_TRAILER_SIZE != len)
		return -EIO;
	st->size = size;
	st->npages = npages;
	st->nframes = nframes;
	st->index_off = off;
	*index_len = len;
	*index_sum = pk_get64(t + 48);
	return 0;
}

/* Each entry's lengths and bounds against the bitmap and the raw store. */
static int parse_index(struct pk_store *st, const unsigned char *idx)
{
	uint64_t words = (st->npages + 63) / 64;

	st->ents = calloc(st->nframes ? st->nframes : 1, sizeof(*st->ents));
	st->zmap = calloc(words ? words : 1, 8);
	if (!st->ents || !st->zmap)
		return -ENOMEM;
	for (uint64_t i = 0; i < words; i++)
		st->zmap[i] = pk_get64(idx + st->nframes * PK_ENTRY_SIZE + i * 8);
	for (uint64_t f = 0; f < st->nframes; f++) {
		const unsigned char *p = idx + f * PK_ENTRY_SIZE;
		struct pk_entry *e = &st->ents[f];
		uint64_t kept = 0;

		e->off = pk_get64(p);
		e->clen = pk_get32(p + 8);
		e->ulen = pk_get32(p + 12);
		e->sum = pk_get64(p + 16);
		for (uint32_t i = 0; i < frame_pages(st, f); i++)
			kept += !page_is_zero(st, f * st->fpages + i);
		if (e->ulen != kept * PK_PAGE || !e->clen != !e->ulen ||
		    e->clen > ZSTD_compressBound(e->ulen))
			return -EIO;
		if (e->clen && (e->off < PK_HEADER_SIZE || e->off > st->index_off ||
				st->index_off - e->off < e->clen))
			return -EIO;
	}
	return 0;
}

static int pk_load(struct pk_store *st, uint64_t raw_size)
{
	unsigned char h[PK_HEADER_SIZE], t[PK_TRAILER_SIZE], *idx;
	uint64_t len, sum;
	int ret;

	if (raw_size < PK_HEADER_SIZE + PK_TRAILER_SIZE)
		return uf_pack_probe(st->raw_ops, st->raw) == 1 ? -EIO : -ENOEXEC;
	ret = raw_read(st->raw_ops, st->raw, h, sizeof(h), 0);
	if (!ret)
		ret = parse_header(st, h);
	if (!ret)
		ret = raw_read(st->raw_ops, st->raw, t, sizeof(t), raw_size - sizeof(t));
	if (!ret)
		ret = parse_trailer(st, t, raw_size, &len, &sum);
	if (ret)
		return ret;
	idx = malloc(len ? len : 1);
	if (!idx)
		return -ENOMEM;
	ret = raw_read(st->raw_ops, st->raw, idx, len, st->index_off);
	if (!ret && pk_xxh64(idx, len, 0) != sum)
		ret = -EIO;
	if (!ret)
		ret = parse_index(st, idx);
	free(idx);
	return ret;
}

PK_EXPORT int uf_pack_create(struct uf_mm *mm, const struct uf_store_ops *raw_ops, void *raw_store,
			     uint64_t raw_size, struct uf_object **objp)
{
	return uf_pack_create_readv(mm, raw_ops, NULL, raw_store, raw_size, objp);
}

PK_EXPORT int uf_pack_create_readv(struct uf_mm *mm, const struct uf_store_ops *raw_ops,
				   int (*raw_readv)(void *, const struct uf_store_iov *, size_t),
				   void *raw_store, uint64_t raw_size, struct uf_object **objp)
{
	struct pk_store *st;
	int ret;

	if (!mm || !raw_ops || !raw_ops->read || !objp)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->raw_ops = raw_ops;
	st->raw_readv = raw_readv;
	st->raw = raw_store;
	pthread_mutex_init(&st->lock, NULL);
	uf_lockdep_class(&st->lock, UF_LK_STORE);
	pthread_cond_init(&st->cond, NULL);
	ret = pk_load(st, raw_size);
	if (!ret) {
		st->nslots = PK_CACHE_BYTES / st->frame_size;
		if (st->nslots < PK_CACHE_MIN)
			st->nslots = PK_CACHE_MIN;
		st->slots = calloc(st->nslots, sizeof(*st->slots));
		if (!st->slots)
			ret = -ENOMEM;
		for (unsigned int i = 0; !ret && i < st->nslots; i++)
			st->slots[i].frame = PK_NONE;
	}
	if (!ret)
		ret = uf_object_create(mm, &pk_ops, st, st->size, objp);
	if (ret) {
		pk_free(st, false);
		return ret;
	}
	uf_object_set_readv(*objp, pk_readv);
	return 0;
}

PK_EXPORT int uf_pack_create_any(struct uf_mm *mm, const struct uf_store_ops *raw_ops,
				 int (*raw_readv)(void *, const struct uf_store_iov *, size_t),
				 void *raw_store, uint64_t raw_size, struct uf_object **objp)
{
	int ret = uf_pack_create_readv(mm, raw_ops, raw_readv, raw_store, raw_size, objp);

	if (ret != -ENOEXEC)
		return ret;
	ret = uf_object_create(mm, raw_ops, raw_store, raw_size, objp);
	if (!ret && raw_readv)
		uf_object_set_readv(*objp, raw_readv);
	return ret;
}
