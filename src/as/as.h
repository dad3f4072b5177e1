/* SPDX-License-Identifier: MIT */
/*
 * The address spaces' private header (src/as/): the mm (mm.c), its own
 * VMA table (vma.c), other processes' address spaces (as.c), objects
 * served by another process (attach.c).
 */
#ifndef UF_AS_H
#define UF_AS_H

#include "fault/fault.h"

/* as.c */
extern const struct uf_uffd_ops uf_as_uffd_ops;
void uf_as_fork(struct uf_mm *mm, struct uf_as *parent, const struct uffd_msg *msg);
void uf_as_event(void *owner, const struct uffd_msg *msg);
struct uf_vma *uf_as_lookup_get(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				bool *nonlinear);
void uf_as_reap(struct uf_mm *mm, bool force);
void uf_as_destroy_all(struct uf_mm *mm);
void uf_as_collect_writes(struct uf_object *obj);
bool __uf_as_collect_writes_try(struct uf_object *obj);
int uf_as_adopt(struct uf_mm *mm, int fd, struct uf_vma *const *tmpl, size_t n,
		const struct uf_uffd_ops *ops, struct uf_as **heldp, struct uf_as **asp);
void uf_as_unhold(struct uf_as *as);
void uf_as_release(struct uf_as *as);
int uf_as_map(struct uf_as *as, const struct uf_vma *tmpl);
void uf_as_unmap(struct uf_as *as, unsigned long start, unsigned long end);
int uf_as_protect(struct uf_as *as, unsigned long start, unsigned long end, int prot);

/* attach.c: objects served by another process, and serving them */
struct uf_attach;
struct uf_attach_srv;
int uf_attach_mmap(struct uf_mm *mm, size_t len, int prot, int flags, struct uf_object *obj,
		   uint64_t offset, void **addrp);
/* the calls on addresses: 1 when no attached mapping is in the range
 * (the caller goes on), else 0 or -errno */
int uf_attach_munmap(struct uf_mm *mm, unsigned long start, unsigned long end);
int uf_attach_mprotect(struct uf_mm *mm, unsigned long start, unsigned long end, int prot);
int uf_attach_msync(struct uf_mm *mm, unsigned long start, unsigned long end);
void uf_attach_destroy_all(struct uf_mm *mm);

/* serve.c: an attach client's mapping served by copy, as a VMM's region */
int uf_serve_vma_init(struct uf_object *obj, struct uf_vma *t);

/* mm.c */
void uf_mm_put(struct uf_mm *mm);
void uf_mm_put_child(struct uf_mm *mm);

/* vma.c */
struct uf_vma *uf_vma_lookup_get(struct uf_mm *mm, unsigned long addr, uint64_t *pgoff,
				 bool *nonlinear);
void __uf_vma_mark_dirty(struct uf_vma *vma, unsigned long start, unsigned long end);
struct uf_vma *__uf_vma_find(struct uf_mm *mm, unsigned long addr);
int uf_vma_register(struct uf_vma *vma, unsigned long start, unsigned long len);
void uf_vma_inherit(struct uf_vma *vma, unsigned long start, unsigned long len);
void uf_unmap_all(struct uf_mm *mm);
void uf_vma_event(void *owner, const struct uffd_msg *msg);
int uf_vma_refresh(struct uf_mm *mm, unsigned long start, unsigned long end);
int uf_vma_refresh_fault(struct uf_mm *mm, unsigned long addr);
int uf_vma_refresh_object(struct uf_object *obj);
void uf_vma_free_child(struct uf_vma *vma);
void *uf_vma_map_fixed(struct uf_vma *vma, unsigned long addr, size_t len, uint64_t off);
int uf_vma_zap(struct uf_mm *mm, const struct uf_range *r, size_t n);

#endif /* UF_AS_H */
