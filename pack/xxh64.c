// SPDX-License-Identifier: MIT
/*
 * XXH64 (Yann Collet's xxHash, 64-bit): the checksum of every frame, the
 * index and the header and trailer.  The same function zstd uses for its
 * own content checksum, written out here because libzstd does not export
 * it.  Reads little-endian, so the sums are the same on every host.
 */
#include "internal.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t round64(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	return rotl(acc, 31) * P1;
}

static inline uint64_t merge(uint64_t acc, uint64_t v)
{
	acc ^= round64(0, v);
	return acc * P1 + P4;
}

uint64_t pk_xxh64(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;

		for (; end - p >= 32; p += 32) {
			v1 = round64(v1, pk_get64(p));
			v2 = round64(v2, pk_get64(p + 8));
			v3 = round64(v3, pk_get64(p + 16));
			v4 = round64(v4, pk_get64(p + 24));
		}
		h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
		h = merge(merge(merge(merge(h, v1), v2), v3), v4);
	} else {
		h = seed + P5;
	}
	h += (uint64_t)len;
	for (; end - p >= 8; p += 8)
		h = rotl(h ^ round64(0, pk_get64(p)), 27) * P1 + P4;
	if (end - p >= 4) {
		h = rotl(h ^ (uint64_t)pk_get32(p) * P1, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl(h ^ *p * P5, 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}
