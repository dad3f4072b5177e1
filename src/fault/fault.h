/* SPDX-License-Identifier: MIT */
/*
 * The fault path's private header (src/fault/): fault.c's calls for the
 * address spaces above it.
 */
#ifndef UF_FAULT_H
#define UF_FAULT_H

#include "cache/cache.h"
#include "cache/reclaim.h"

/* fault.c: ->fault of the mm's engine and of a child's (as.c); between
 * faults, lifting poison markers (uf_fault_idle, uf_fault_idle_ms) */
void uf_fault_handle(void *owner, unsigned int slot, const struct uffd_msg *msg);
void uf_fault_as(void *owner, unsigned int slot, const struct uffd_msg *msg);
int uf_fault_idle_ms(struct uf_mm *mm);
void uf_fault_sigbus(struct uf_vma *vma, unsigned long addr, pid_t tid);
int uf_fault_poison_page(struct uf_vma *vma, unsigned long page_addr);
void uf_fault_idle(struct uf_mm *mm);
struct uf_vma *uf_fault_vma(void);
void uf_fault_settle(struct uf_mm *mm);

#endif /* UF_FAULT_H */
