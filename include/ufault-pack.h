/* SPDX-License-Identifier: MIT */
/*
 * ufault-pack - packed snapshots: an object's bytes kept as independently
 * zstd-compressed frames with an index (the format: docs/packed.md), served
 * through ufault as the original bytes.
 *
 * A separate library (libufault-pack, which links libzstd) so the core
 * keeps no dependency:  cc prog.c $(pkg-config --cflags --libs ufault-pack)
 *
 * Any store can hold a packed snapshot: a file (uf_pack_open()), or the
 * raw bytes of an object behind a URL or elsewhere, given as a store's
 * methods (uf_pack_probe() to recognise it, uf_pack_create() to serve it).
 * A packed object is read-only.
 */
#ifndef UFAULT_PACK_H
#define UFAULT_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <ufault.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The first 8 bytes of a packed snapshot (PNG-style: a byte with the high
 * bit set, then CR LF, ^Z, LF, so that a text-mode copy is noticed). */
#define UF_PACK_MAGIC		"\x89UFP\r\n\x1a\n"
#define UF_PACK_MAGIC_LEN	8
/* The format version this library writes and reads (docs/packed.md). */
#define UF_PACK_VERSION		1

/**
 * uf_pack_probe - does the store @store hold a packed snapshot?
 * @ops: the store's methods (->read is used, once, for 8 bytes at 0).
 * @store: passed to @ops.
 *
 * Only the magic number is checked: uf_pack_create() checks the rest.
 *
 * Return: 1 (it begins with UF_PACK_MAGIC), 0 (it does not, or it is
 * shorter), or the negative errno of ->read; -EINVAL (NULL @ops, no ->read).
 */
int uf_pack_probe(const struct uf_store_ops *ops, void *store);

/**
 * uf_pack_create - an object serving the original bytes of the packed
 * snapshot held by a raw store.
 * @mm: the mm whose cache holds the object's pages.
 * @raw_ops: the raw store's methods: ->read is required; ->release, if
 *	any, is called when the object goes.  Nothing else is called.
 * @raw_store: passed to @raw_ops.
 * @raw_size: the raw store's size in bytes (the packed snapshot's size).
 * @objp: on success, the object with one reference; its size is the
 *	original size.
 *
 * Reads the header, the trailer and the index and checks their checksums
 * and every frame's bounds; frames are read when first touched.  A frame
 * is read (one ->read of its compressed bytes, or one for a run of frames
 * a read needs) and decompressed once into a small cache of recent
 * frames, from which the pages of a readahead window, and the faults
 * after it in the same frame, are copied.  All-zero pages are never read.
 * A frame that fails its checksum, has bad lengths or does not decompress
 * is -EIO for the pages it covers (the access gets SIGBUS), never bytes.
 * The object is read-only: a write, truncate, punch or uf_object_sync() is
 * -EROFS.  The
 * object has a batched read (uf_object_set_readv()).
 *
 * On success the object owns @raw_store (@raw_ops->release is called at
 * its last put); on failure the caller keeps it.  So a store that may hold
 * a packed snapshot or a plain one is served by this, and on -ENOEXEC by
 * uf_object_create() with the same store.
 *
 * Return: 0, or -EINVAL (NULL argument, no ->read), -ENOEXEC (not a
 * packed snapshot: no magic number), -EPROTONOSUPPORT (a format version
 * this library does not read), -EIO (a damaged header, trailer or index:
 * a checksum or a length that does not hold), -ENOMEM, an error of
 * ->read, or of uf_object_create().
 */
int uf_pack_create(struct uf_mm *mm, const struct uf_store_ops *raw_ops, void *raw_store,
		   uint64_t raw_size, struct uf_object **objp);

/**
 * uf_pack_create_readv - uf_pack_create() over a raw store that can also
 * read many extents in one call.
 * @raw_readv: reads each of the @n extents of @iov (byte ranges of the
 *	raw store, of any length and alignment, not overlapping) in full,
 *	and returns 0 or a negative errno; or NULL (then as uf_pack_create()).
 *	uf_http_store_readv() of libufault-http is one.
 *
 * The object's batched read (a working-set prefetch, uf_object_prefetch())
 * then reads the frames its batch needs with one @raw_readv: a remote
 * store fetches them all at once, not one round trip per frame.
 *
 * Return: as uf_pack_create().
 */
int uf_pack_create_readv(struct uf_mm *mm, const struct uf_store_ops *raw_ops,
			 int (*raw_readv)(void *raw, const struct uf_store_iov *iov, size_t n),
			 void *raw_store, uint64_t raw_size, struct uf_object **objp);

/**
 * uf_pack_create_any - an object of a raw store's bytes, packed or not:
 * the original bytes when the store holds a packed snapshot
 * (uf_pack_create_readv()), else its bytes as they are (uf_object_create(),
 * with @raw_readv as the object's batched read, uf_object_set_readv()).
 * @raw_ops, @raw_readv, @raw_store, @raw_size, @objp: as for
 *	uf_pack_create_readv() (@raw_readv may be NULL).
 *
 * The one call a program needs to serve a store that may hold either,
 * such as an object behind a URL.  Either way the object owns @raw_store
 * on success, and the caller keeps it on failure.
 *
 * Return: as uf_pack_create() (never -ENOEXEC), or an error of
 * uf_object_create().
 */
int uf_pack_create_any(struct uf_mm *mm, const struct uf_store_ops *raw_ops,
		       int (*raw_readv)(void *raw, const struct uf_store_iov *iov, size_t n),
		       void *raw_store, uint64_t raw_size, struct uf_object **objp);

/**
 * uf_pack_open - an object serving the original bytes of the packed
 * snapshot in the file at @path (opened read-only).
 * @mm, @objp: as for uf_pack_create().
 *
 * Return: as uf_pack_create() (-ENOEXEC: the file is not a packed
 * snapshot, and can be opened as a plain one), or an error of open(2) or
 * fstat(2); -EINVAL also when @path is not a regular file.
 */
int uf_pack_open(struct uf_mm *mm, const char *path, struct uf_object **objp);

/**
 * struct uf_pack_write_opts - how uf_pack_write() packs; zero means default.
 * @frame_size: bytes of the original per frame: a power of two from
 *	64 KiB to 16 MiB (default UF_PACK_FRAME_DEFAULT).
 * @level: zstd compression level, 1 to 19 (default 3).
 * @threads: frames compressed at once, each by a thread of its own, 1 to
 *	64 (default 1).  The output is the same bytes whatever the count.
 */
struct uf_pack_write_opts {
	uint32_t frame_size;
	int level;
	unsigned int threads;
};

#define UF_PACK_FRAME_DEFAULT	(256u << 10)

/**
 * struct uf_pack_write_stats - what uf_pack_write() wrote.
 * @size: bytes of the original.
 * @packed_size: bytes of the packed snapshot.
 * @frames: frames in all.
 * @zero_frames: frames that hold only zero pages (no bytes stored).
 * @zero_pages: all-zero pages (no bytes stored).
 */
struct uf_pack_write_stats {
	uint64_t size;
	uint64_t packed_size;
	uint64_t frames;
	uint64_t zero_frames;
	uint64_t zero_pages;
};

/**
 * uf_pack_write - pack the bytes read from @src_fd until its end into a
 * packed snapshot written to @dst_fd.
 * @src_fd: read sequentially with read(2) (a pipe will do).
 * @dst_fd: written sequentially with write(2) (a pipe will do).
 * @opts: NULL for defaults.
 * @st: NULL, or where to put what was written.
 *
 * Return: 0, or -EINVAL (bad @opts, a negative fd), -ENOMEM, -EIO (zstd
 * failed), or an error of read(2) or write(2) (-EPIPE, -ENOSPC, ...).
 * Context: with @opts->threads above 1, starts that many threads less one
 * and ends them before it returns.
 * What was written to @dst_fd before an error is not a packed snapshot.
 */
int uf_pack_write(int src_fd, int dst_fd, const struct uf_pack_write_opts *opts,
		  struct uf_pack_write_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* UFAULT_PACK_H */
