/* SPDX-License-Identifier: MIT */
/*
 * libufault-pack internals: the on-disk format (docs/packed.md is the
 * reference; this header and it must agree), the checksum (xxh64.c), the
 * writer (write.c) and the reader (store.c).
 */
#ifndef UF_PACK_INTERNAL_H
#define UF_PACK_INTERNAL_H

#include "../src/lib/lockdep.h"	/* the lock order: src/lib/lockorder.h */

#include <stddef.h>
#include <stdint.h>

#define PK_EXPORT	__attribute__((visibility("default")))

#define PK_PAGE		4096u
#define PK_HEADER_SIZE	64u
#define PK_TRAILER_SIZE	64u
#define PK_ENTRY_SIZE	24u
#define PK_FRAME_MIN	(64u << 10)
#define PK_FRAME_MAX	(16u << 20)
#define PK_COMP_ZSTD	1u
#define PK_TRAILER_MAGIC "UFPKEND\n"

/*
 * Header, at 0 (all integers little-endian):
 *   0  magic[8]        UF_PACK_MAGIC
 *   8  u32 version     UF_PACK_VERSION
 *  12  u32 header_size 64
 *  16  u32 page_size   4096
 *  20  u32 frame_size  bytes of the original per frame
 *  24  u32 compression 1 = zstd
 *  28  u32 flags       0
 *  32  reserved[24]    zero
 *  56  u64 checksum    XXH64(bytes 0..55, seed 0)
 *
 * Frames follow, one after another in order.  Then the index:
 *   nframes entries of 24 bytes: u64 offset, u32 clen, u32 ulen,
 *     u64 XXH64(compressed bytes); clen = ulen = 0: every page zero
 *   the zero-page bitmap: ceil(npages / 64) u64 words, bit p%64 of word
 *     p/64 set when page p is all zero (its bytes are in no frame)
 * Then the trailer, the last 64 bytes:
 *   0  magic[8]        PK_TRAILER_MAGIC
 *   8  u32 version
 *  12  u32 reserved    0
 *  16  u64 size        bytes of the original
 *  24  u64 index_off
 *  32  u64 index_len
 *  40  u64 nframes
 *  48  u64 index_sum   XXH64(the index)
 *  56  u64 checksum    XXH64(bytes 0..55)
 *
 * A frame holds the frame's non-zero pages, in order, compressed as one
 * zstd frame (with zstd's content checksum): ulen = 4096 * that count.
 */
struct pk_entry {
	uint64_t off;
	uint32_t clen;
	uint32_t ulen;
	uint64_t sum;
};

uint64_t pk_xxh64(const void *buf, size_t len, uint64_t seed);

static inline void pk_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void pk_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t pk_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t pk_get64(const unsigned char *p)
{
	return (uint64_t)pk_get32(p) | (uint64_t)pk_get32(p + 4) << 32;
}

#endif /* UF_PACK_INTERNAL_H */
