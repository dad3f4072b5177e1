/* SPDX-License-Identifier: MIT */
/*
 * The address spaces' private header (src/as/): the mm (mm.c), its own
 * VMA table (vma.c), other processes' address spaces (as.c), objects
 * served by another process (attach.c).
 */
#ifndef UF_AS_H
#define UF_AS_H

#include "fault/fault.h"

/* VMAs to open (made by a split) and to release, once the table lock is
 * dropped: ->open, ->close and the last object put must not run under it
 * (table.c). */
struct uf_vma_lists {
	struct uf_vma *opened, *released;
};

/* table.c: an address space's VMA table, one implementation for all */
size_t __uf_table_index(const struct uf_vma_table *t, unsigned long addr);
struct uf_vma *__uf_table_find(const struct uf_vma_table *t, unsigned long addr);
struct uf_vma *uf_table_lookup_get(struct uf_as *as, unsigned long addr, uint64_t *pgoff,
				   bool *nonlinear);
int __uf_table_insert(struct uf_vma_table *t, struct uf_vma *v);
void __uf_table_remove_at(struct uf_vma_table *t, size_t i);
void uf_table_free(struct uf_vma_table *t);
int __uf_as_link(struct uf_as *as, struct uf_vma *v);
void __uf_as_unlink(struct uf_as *as, struct uf_vma *v);
struct uf_vma *__uf_as_split(struct uf_as *as, struct uf_vma *v, unsigned long addr,
			     struct uf_vma_lists *l);
void __uf_as_unmap_range(struct uf_as *as, unsigned long s, unsigned long e,
			 struct uf_vma_lists *l);
void __uf_as_move(struct uf_as *as, unsigned long from, unsigned long to, unsigned long len,
		  struct uf_vma_lists *l);
void uf_vma_lists_finish(struct uf_vma_lists *l);

/* as.c */
extern const struct uf_as_ops uf_child_as_ops, uf_client_as_ops;
extern const struct uf_uffd_ops uf_as_uffd_ops;
void uf_as_fork(struct uf_as *parent, const struct uffd_msg *msg);
void uf_as_event(void *owner, const struct uffd_msg *msg);
void uf_as_reap(struct uf_mm *mm, bool force);
struct uf_as *uf_as_next_gone(struct uf_mm *mm);
void uf_as_collect_writes(struct uf_object *obj);
bool __uf_as_collect_writes_try(struct uf_object *obj);
int uf_as_adopt(struct uf_mm *mm, int fd, struct uf_vma *const *tmpl, size_t n,
		const struct uf_uffd_ops *ops, struct uf_as **heldp, struct uf_as **asp);
void uf_as_unhold(struct uf_as *as);
void uf_as_release(struct uf_as *as);
int uf_as_map(struct uf_as *as, const struct uf_vma *tmpl);
void uf_as_unmap(struct uf_as *as, unsigned long start, unsigned long end);
int uf_as_protect(struct uf_as *as, unsigned long start, unsigned long end, int prot);

/* attach.c, attach_map.c (uf_attach_destroy_all), attach_srv.c: objects
 * served by another process, and serving them */
struct uf_attach;
struct uf_attach_srv;
void uf_attach_destroy_all(struct uf_mm *mm);

/* attach_ban.c: the uids whose clients lied, refused a while; as.c: a
 * client's lie billed once its connection is known */
void uf_attach_ban(struct uf_mm *mm, uid_t uid, pid_t pid);
uint64_t uf_attach_ban_left(struct uf_mm *mm, uid_t uid, pid_t *pidp);
void uf_as_lie_billed(struct uf_as *as);

/* serve_fair.c: a fault (serve_fault.c) or an attach client's request
 * (attach_srv.c) of a tenant over its share is served low */
struct serve_fair {
	void *slot;			/* the tenant's, or NULL */
	uint64_t t0;			/* ns, monotonic: the fault began */
	uint64_t copied0;		/* uf_uffd_guest_copied then */
	bool low;			/* the thread was lowered for it */
	bool busy;			/* counted in service (within its share) */
	bool trip;			/* a request's round trip: FAIR_TRIP_NS more */
};
bool serve_fair_begin(unsigned int tenant, struct serve_fair *f, bool lower, unsigned int wait);
void serve_fair_end(struct serve_fair *f);

/* serve.c: an attach client's mapping served by copy, as a VMM's region */
int uf_serve_vma_init(struct uf_object *obj, struct uf_vma *t);

/* mm.c */
void uf_mm_put(struct uf_mm *mm);
void uf_mm_put_child(struct uf_mm *mm);

/* vma.c: the mappings of the program's own address space */
struct uf_vma *__uf_vma_find(struct uf_mm *mm, unsigned long addr);
int uf_vma_register(struct uf_vma *vma, unsigned long start, unsigned long len);
void uf_vma_inherit(struct uf_vma *vma, unsigned long start, unsigned long len);
void uf_unmap_all(struct uf_mm *mm);
void uf_vma_free_child(struct uf_vma *vma);

/* self.c: the program's own address space's ops, and its events */
extern const struct uf_as_ops uf_own_as_ops;
void uf_vma_event(void *owner, const struct uffd_msg *msg);
void *uf_vma_map_fixed(struct uf_vma *vma, unsigned long addr, size_t len, uint64_t off);
int uf_vma_zap(struct uf_mm *mm, const struct uf_range *r, size_t n);

/* procmaps.c: what raises no event, from /proc/self/maps */
int uf_vma_refresh(struct uf_mm *mm, unsigned long start, unsigned long end);
int uf_vma_refresh_fault(struct uf_mm *mm, unsigned long addr);
int uf_vma_refresh_object(struct uf_object *obj);

#endif /* UF_AS_H */
