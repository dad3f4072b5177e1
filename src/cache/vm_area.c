// SPDX-License-Identifier: MIT
/*
 * A mapping as the layers below the address space see it (the kernel's
 * vm_area_struct, with vm_area_alloc() and vm_area_free()): the VMA's
 * references and its lifetime (which object page an address shows is
 * __uf_vma_pgoff(), cache.h; which pages a mapping shows now,
 * uf_vma_present(), writeback.c).
 * A handler thread serving a fault in it, or background readahead for
 * it, holds a reference; the table (vma.c, as.c) holds one while it is
 * mapped.  The last reference to a VMA the program unmapped calls
 * ->close, drops the object and frees it.  The object's list of its
 * mappings is rmap.c's.
 *
 * Locks (the order is in lockorder.h): vma->ref_lock for the references.
 */
#define _GNU_SOURCE
#include "cache/cache.h"

#include <stdlib.h>

struct uf_vma *uf_vma_alloc(struct uf_mm *mm, size_t len, int prot)
{
	struct uf_vma *vma = calloc(1, sizeof(*vma));

	if (!vma)
		return NULL;
	vma->mm = mm;
	vma->as = &mm->self;
	vma->id = __atomic_add_fetch(&mm->next_vma_id, 1, __ATOMIC_RELAXED);
	vma->prot = prot;
	vma->refs = 1;
	vma->end = len;		/* start is added once mapped */
	pthread_mutex_init(&vma->ref_lock, NULL);
	uf_lockdep_class(&vma->ref_lock, UF_LK_VMA_REF);
	pthread_cond_init(&vma->ref_cond, NULL);
	if (uf_readahead_init(vma)) {
		free(vma);
		return NULL;
	}
	return vma;
}

void uf_vma_free(struct uf_vma *vma)
{
	pthread_mutex_destroy(&vma->ref_lock);
	pthread_cond_destroy(&vma->ref_cond);
	uf_readahead_free(vma);
	if (uf_vma_remote(vma)) {
		/* another address space's: as.c's, made by uf_nocow_alloc() */
		uf_nocow_free(vma->nl_pgoff);
		uf_nocow_free(vma);
		return;
	}
	free(vma->nl_pgoff);
	free(vma);
}

static void vma_destroy(struct uf_vma *vma)
{
	if (vma->vm_ops->close)
		vma->vm_ops->close(vma);
	if (vma->obj)
		uf_object_put(vma->obj);
	uf_vma_free(vma);
}

/* Drop a reference; the last one frees a VMA the program unmapped. */
void uf_vma_put(struct uf_vma *vma)
{
	bool last;

	pthread_mutex_lock(&vma->ref_lock);
	last = --vma->refs == 0;
	if (last)
		pthread_cond_broadcast(&vma->ref_cond);
	last = last && vma->detached;
	pthread_mutex_unlock(&vma->ref_lock);
	if (last)
		vma_destroy(vma);
}

/* Drop the reference the table held on a VMA the program unmapped. */
void uf_vma_release(struct uf_vma *vma)
{
	bool last;

	pthread_mutex_lock(&vma->ref_lock);
	vma->detached = true;
	last = --vma->refs == 0;
	if (last)
		pthread_cond_broadcast(&vma->ref_cond);
	pthread_mutex_unlock(&vma->ref_lock);
	if (last)
		vma_destroy(vma);
}
