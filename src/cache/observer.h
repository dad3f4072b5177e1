/* SPDX-License-Identifier: MIT */
/*
 * cache/observer.h - the table through which the page cache reports its
 * fills to whoever watches them (struct uf_fill_observer_ops), and the
 * inlines the fill calls it by.
 */
#ifndef UF_CACHE_OBSERVER_H
#define UF_CACHE_OBSERVER_H

#include "cache/mm_types.h"

/*
 * Who watches an object's fills: the working-set recorder and replayer
 * (ws_record.c, ws_replay.c).  The fill (filemap.c, fill.c, huge.c,
 * populate.c) and the object's lifetime (object.c) report to it through
 * obj->observer, its data being obj->ws, and never call it by name.
 * obj->observer is NULL while nothing watches: a report is then one
 * pointer test, and no code of ws_*.c runs.  It is set once, by the first
 * record or prefetch of the object, and kept to the last put.
 * ->window - the window a fault of @vma on @pgoff reads instead of
 *	readahead's; false: readahead's.  No ufault lock held.
 * ->checkpoint - before a fill whose pages ->note will take (a fault, a
 *	pread).  No ufault lock held.
 * ->watching - does a record watch readahead now (a mapping then shows
 *	only pages touched: no page but the faulting one is copied or
 *	populated into it, no extent collapses)?  Any lock held.
 * ->filled - pages [first, first + n) are about to be copied in (@fault:
 *	by a fault's fill).  Any lock above the observer's held.
 * ->note - pages [first, first + n) were touched or read (@checked:
 *	->checkpoint ran).  As ->checkpoint.
 * ->release - the object's last put.  ->free_child - a fork child frees
 *	its copy of the object.  No lock held.
 */
struct uf_ra_req;
struct uf_fill_observer_ops {
	bool (*window)(struct uf_object *obj, const struct uf_vma *vma, uint64_t pgoff,
		       struct uf_ra_req *req);
	void (*checkpoint)(struct uf_object *obj);
	bool (*watching)(struct uf_object *obj);
	void (*filled)(struct uf_object *obj, uint64_t first, uint64_t n, bool fault);
	void (*note)(struct uf_object *obj, uint64_t first, uint64_t n, bool checked);
	void (*release)(struct uf_object *obj);
	void (*free_child)(struct uf_object *obj);
};

static inline const struct uf_fill_observer_ops *uf_fill_observer(const struct uf_object *obj)
{
	return __atomic_load_n(&obj->observer, __ATOMIC_ACQUIRE);
}

static inline bool uf_fill_window(struct uf_object *obj, const struct uf_vma *vma,
				  uint64_t pgoff, struct uf_ra_req *req)
{
	const struct uf_fill_observer_ops *ob = uf_fill_observer(obj);

	return ob && ob->window(obj, vma, pgoff, req);
}

static inline void uf_fill_checkpoint(struct uf_object *obj)
{
	const struct uf_fill_observer_ops *ob = uf_fill_observer(obj);

	if (ob)
		ob->checkpoint(obj);
}

static inline bool uf_fill_watched(struct uf_object *obj)
{
	const struct uf_fill_observer_ops *ob = uf_fill_observer(obj);

	return ob && ob->watching(obj);
}

static inline void uf_fill_filled(struct uf_object *obj, uint64_t first, uint64_t n, bool fault)
{
	const struct uf_fill_observer_ops *ob = uf_fill_observer(obj);

	if (ob)
		ob->filled(obj, first, n, fault);
}

static inline void uf_fill_note(struct uf_object *obj, uint64_t first, uint64_t n, bool checked)
{
	const struct uf_fill_observer_ops *ob = uf_fill_observer(obj);

	if (ob)
		ob->note(obj, first, n, checked);
}

#endif /* UF_CACHE_OBSERVER_H */
