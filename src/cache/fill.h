// SPDX-License-Identifier: MIT
/*
 * cache/fill.h - private to fill.c and filemap.c: the state a fault shares
 * with its fill (this thread's), and marking a page present.
 */
#ifndef UF_CACHE_FILL_H
#define UF_CACHE_FILL_H

#include "cache/huge.h"
#include "cache/reclaim.h"

/*
 * The page of the fault this thread is filling (uf_filemap_fault()) when
 * its copy may wake the faulting thread itself: a copy straight into the
 * faulting mapping that holds the page wakes its waiters (the kernel maps
 * the page there and wakes in one call), which saves the fault path a
 * wake of its own.  Only for a one-page fill: the fill is then done once
 * the copy is, and fault.c counts the fault at once (uf_fault_settle()).
 * Not into a writable mapping: the page must be marked present before its
 * thread can write it, or a sync racing the mark would not count the
 * write (dirty marking goes by the present bit).
 */
struct fill_wake {
	struct uf_vma *vma;		/* NULL: no copy wakes */
	uint64_t pgoff;
	bool faulting;			/* pgoff is a fault's (uf_filemap_fault) */
	bool woken;
};
extern __thread struct fill_wake fill_wake;
extern __thread bool fill_insert_dirty;

void mark_present(struct uf_object *obj, uint64_t pgoff, bool page_locked);
int fill_span_insert(struct uf_object *obj, uint64_t p, uint64_t end, const char *buf,
		     uint64_t must, size_t *filled, bool *major, struct uf_vma *vma,
		     bool broken, long *charged);

#endif /* UF_CACHE_FILL_H */
