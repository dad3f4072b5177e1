// SPDX-License-Identifier: MIT
/*
 * Memory budget and reclaim.
 */
#define _GNU_SOURCE
#include "internal.h"

void __uf_reclaim_note_fill(struct uf_object *obj, uint64_t pgoff)
{
	(void)obj;
	(void)pgoff;
}

void uf_reclaim(struct uf_mm *mm)
{
	(void)mm;
}
