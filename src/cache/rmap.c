// SPDX-License-Identifier: MIT
/*
 * The object's list of its mappings (obj->vmas, the kernel's i_mmap: the
 * reverse map from an object's pages to the VMAs that show them), which
 * every walk goes through (uf_rmap_foreach, cache.h): reclaim, writeback
 * and truncate find the mappings of a page here.  A VMA's own lifetime is
 * vm_area.c's.
 *
 * Locks (the order is in lockorder.h): obj->vmas changes with
 * mm->vma_lock and obj->rmap_lock held exclusive, and is walked with
 * either held.
 */
#include "cache/cache.h"

/* Put @vma on its object's list of mappings.
 * Locking: mm->vma_lock and obj->rmap_lock held exclusive. */
void __uf_rmap_link(struct uf_vma *vma)
{
	vma->obj_next = vma->obj->vmas;
	vma->obj->vmas = vma;
}

/* Take @vma off its object's list.
 * Locking: mm->vma_lock and obj->rmap_lock held exclusive. */
void __uf_rmap_unlink(struct uf_vma *vma)
{
	struct uf_vma **pp;

	for (pp = &vma->obj->vmas; *pp; pp = &(*pp)->obj_next) {
		if (*pp == vma) {
			*pp = vma->obj_next;
			break;
		}
	}
}
