/* SPDX-License-Identifier: MIT */
/*
 * Private to the files of the program's own address space: vma.c (the
 * mapping calls), self.c (its ops and events), procmaps.c (what the
 * kernel shows).  The order of the locks named is in lockorder.h.
 */
#ifndef UF_AS_VMA_H
#define UF_AS_VMA_H

#include "as/as.h"

#include <pthread.h>

/* The first VMA of the program's own whose end is above @addr.
 * Locking: mm->vma_lock held (either mode). */
static inline size_t __vma_index(struct uf_mm *mm, unsigned long addr)
{
	return __uf_table_index(&mm->self.vt, addr);
}

/*
 * Where an object's VMA lies, and the object's list of VMAs, change under
 * obj->rmap_lock exclusive too (besides mm->vma_lock): a fill reads them
 * under rmap_lock alone (see src/lib/lockorder.h, RMAP).
 */
static inline void rmap_wrlock(struct uf_vma *v)
{
	if (v->obj)
		pthread_rwlock_wrlock(&v->obj->rmap_lock);
}

static inline void rmap_unlock(struct uf_vma *v)
{
	if (v->obj)
		pthread_rwlock_unlock(&v->obj->rmap_lock);
}

/* self.c */
void __uf_vma_busy(struct uf_mm *mm, struct uf_vma *vma, bool on);
bool __uf_vma_expected(struct uf_mm *mm, unsigned long s, unsigned long e);
void __uf_self_mark_dirty(struct uf_vma *vma, unsigned long s, unsigned long e);

/* procmaps.c: the kernel's view, opened once for many questions */
struct kview;
int uf_kview_open(struct uf_mm *mm, struct kview *kv);
void uf_kview_close(struct kview *kv);
#define UF_KVIEW_SIZE	64	/* bytes a struct kview takes at most */
void __uf_vma_unmap_event(struct uf_mm *mm, unsigned long s, unsigned long e, struct kview *kv,
			  struct uf_vma_lists *l);

#endif
