/* SPDX-License-Identifier: MIT */
/*
 * The lock order: the one list.  Every lock of src/, redis/, http/ and
 * pack/ has a line here (tools/serve/ has none), and nothing else writes
 * the order down: lockdep.h makes the enum of lock classes from it,
 * lockdep.c its names and its rules, and comments elsewhere (the layers'
 * headers, docs/design.md, a file's "Locking:" lines) point here.  A lock gets its class with uf_lockdep_class() after its init; in
 * a LOCKDEP=1 build a lock taken without one stops the process.
 *
 * UF_LOCK(class, name, kind, under, where, what)
 *   kind   UF_LK_ORDER   the main order, outermost first: a lock may be
 *                        taken holding those above it, never one above
 *                        while holding it, never two of one class
 *          UF_LK_INNER   innermost: taken with any ORDER or INNER lock
 *                        held; only the classes in @under under it
 *          UF_LK_ALONE   taken with no other lock held (save an outer
 *                        lock that names it in @under); only @under
 *                        under it
 *          UF_LK_LAST    taken under any lock at all, nothing under it
 *   under  classes that may be taken holding this one beyond what @kind
 *          allows (UF_LKB(X) | ...; 0 for none)
 *   where  type and file
 *   what   what it protects, and who takes it how
 *
 * "Tried": a lock taken only with a trylock against this order (the caller
 * does without it when the try fails) is not checked; the lines below say
 * where.  Handler threads call ->fault and the store methods with none of
 * these held, except that a store's ->read runs under its object's
 * invalidate_lock shared and ->write under mm->vma_lock shared and the
 * invalidate_lock: neither may call what takes mm->vma_lock (map, unmap,
 * mprotect, remap, truncate, punch, sync of the same mm).
 */
#define UF_LOCK_ORDER \
UF_LOCK(RECLAIM, "mm->reclaim_lock", UF_LK_ORDER, 0, "mutex reclaim.c", \
	"one reclaim pass; taken with no other lock held (waited for when " \
	"room is needed, else tried)") \
UF_LOCK(SYNC, "obj->sync_lock", UF_LK_ORDER, 0, "mutex writeback.c", \
	"one writeback of an object at a time") \
UF_LOCK(VMA, "mm->vma_lock", UF_LK_ORDER, 0, "rwlock vma.c", \
	"the VMA table, obj->vmas (with obj->rmap_lock), nl_pgoff, mm->expect, " \
	"mm->busy.  Shared: lookups, truncate, punch, writeback, reclaim, " \
	"copies into the program's mappings; exclusive: map, unmap, mprotect, " \
	"remap, events.  A fill under an invalidate_lock only tries it, shared") \
UF_LOCK(AS, "mm->as_lock", UF_LK_ORDER, 0, "mutex as.c", \
	"the list of other address spaces (fork children, served processes); " \
	"reclaim, holding an invalidate_lock exclusive, only tries it") \
UF_LOCK(AS_VMA, "as->vma_lock", UF_LK_ORDER, 0, "rwlock as.c", \
	"another address space's VMA table, as mm->vma_lock is the mm's own " \
	"(shared around every copy into it); reclaim only tries it") \
UF_LOCK(POISON, "mm->poison_lock", UF_LK_ORDER, 0, "mutex fault.c", \
	"poison markers to lift") \
UF_LOCK(INVALIDATE, "obj->invalidate_lock", UF_LK_ORDER, UF_LKB(INVALIDATE), \
	"rwlock filemap.c", \
	"i_size and which pages are cached.  Shared: fills (the store's " \
	"->read), pread, pwrite, writeback, populate, collapse; exclusive: " \
	"truncate, punch, reclaim, a pwrite's extension, and only then may " \
	"page-state memory be freed (pagebits.c).  Present/dirty bits are " \
	"atomic, set and read in either mode.  Another object's may be taken " \
	"under it: an overlay store's ->read of its lower object") \
UF_LOCK(RMAP, "obj->rmap_lock", UF_LK_ORDER, 0, "rwlock rmap.c", \
	"obj->vmas and where each VMA on it lies (start, end, pgoff, " \
	"nl_pgoff, flags), the kernel's i_mmap_rwsem.  They change with " \
	"mm->vma_lock and this lock exclusive (link, unlink, split, trim, " \
	"move, growth, write-protect added).  Shared: every walk of obj->vmas " \
	"(uf_rmap_foreach, checked), among them a fill's or pwrite's protect " \
	"of the holes it fills, which must not wait for vma_lock.  A dirty " \
	"scan takes it exclusive once, to let every copy in flight finish") \
UF_LOCK(PAGE, "obj->page_lock", UF_LK_ORDER, 0, "mutex writeback.c", \
	"write-protect changes against writeback and against each other (a " \
	"fill's protect and copy of holes, pwrite's protect); the FIFO ring") \
UF_LOCK(HUGE, "huge->lock", UF_LK_ORDER, 0, "mutex huge.c", \
	"the collapse queue; never held across a waiting call") \
UF_LOCK(VMA_REF, "vma->ref_lock", UF_LK_ORDER, 0, "mutex rmap.c as.c", \
	"a VMA's references (with ref_cond)") \
UF_LOCK(STORE, "a store's lock", UF_LK_ORDER, 0, \
	"mutex store/file.c redis/ http/ pack/", \
	"fs->lock (store/file.c); st->lock (redis/store.c, http/store.c, " \
	"pack/store.c), cl->map_lock, cl->pool_lock (redis/cluster.c), " \
	"objects_lock (http/store.c: its list of objects).  Inside store " \
	"methods and the store's own calls only, never two at once, never " \
	"across I/O") \
UF_LOCK(COPY, "u->copy_lock", UF_LK_ORDER, 0, "rwlock uffd.c", \
	"shared: copies, write-protect and poison of the program's mappings; " \
	"exclusive: a read of the fd") \
UF_LOCK(EV, "u->ev_lock", UF_LK_ORDER, 0, "mutex uffd.c", \
	"events read, not yet applied, and faults read by a thread that met " \
	"EAGAIN (with ev_cond)") \
UF_LOCK(CHARGE, "mm->charge_lock", UF_LK_INNER, UF_LKB(OBJ), "mutex reclaim.c", \
	"charging fills against the cache budget") \
UF_LOCK(OBJ, "mm->obj_lock", UF_LK_INNER, 0, "mutex mm.c", \
	"the list of objects; walks take references with uf_object_tryget() " \
	"and drop the lock before using them") \
UF_LOCK(ZAP, "mm->zap_lock", UF_LK_INNER, 0, "mutex vma.c", \
	"ranges ufault zaps itself, so their remove events are not taken for " \
	"the program's") \
UF_LOCK(WS, "obj->ws->lock", UF_LK_INNER, UF_LKB(PREFETCH) | UF_LKB(WORKER), \
	"mutex ws_record.c", "a record or prefetch of the object") \
UF_LOCK(PREFETCH, "a prefetch's lock", UF_LK_INNER, 0, "mutex ws_replay.c", \
	"its queue of pieces") \
UF_LOCK(WORKER, "worker->lock", UF_LK_INNER, 0, "mutex worker.c", \
	"the worker's queue (uf_worker_queue: from under any lock)") \
UF_LOCK(INSERT, "inserts->lock", UF_LK_INNER, 0, "mutex insert.c", \
	"the mm's pending cache inserts and their spare buffers") \
UF_LOCK(GUEST, "u->guest_lock", UF_LK_INNER, 0, "mutex uffd.c", \
	"an engine's list of guests and each guest's users") \
UF_LOCK(ENGINES, "engines_lock", UF_LK_INNER, 0, "mutex uffd.c", \
	"the engines a fork() wakes the monitors of") \
UF_LOCK(NOCOW, "nocow's st->lock", UF_LK_LAST, 0, "mutex nocow.c", \
	"memory a fork does not copy (uf_nocow_alloc: from under any lock)") \
UF_LOCK(INFLIGHT, "mm->inflight_lock", UF_LK_ALONE, 0, "mutex fault.c", \
	"the page each handler serves (with inflight_cond)") \
UF_LOCK(RA, "ra->lock", UF_LK_ALONE, 0, "mutex readahead.c", \
	"a mapping's stream table; a waiter sleeps on ra->cond") \
UF_LOCK(SPAWN, "spawn_lock", UF_LK_ALONE, UF_LKB(START), "rwlock uffd.c", \
	"no spare handler started while a fork() is under way: forks hold it " \
	"shared (pthread_atfork), the monitor tries it exclusive and then " \
	"starts a spare under u->lock") \
UF_LOCK(START, "u->lock", UF_LK_ALONE, 0, "mutex uffd.c", \
	"starting handler threads") \
UF_LOCK(ATTACH, "mm->attach_lock, a->lock", UF_LK_ALONE, 0, "mutex attach.c", \
	"the lists of attached objects and of clients served, the bans of " \
	"uids whose clients lied (attach_ban.c, from a handler too); an " \
	"attached object's socket and table of mappings (one at a time)") \
UF_LOCK(AHEAD, "ra->lock of a run-ahead", UF_LK_ALONE, 0, "mutex readahead.c", \
	"a run-ahead of a sequential stream (a served region's)") \
UF_LOCK(PACK_WRITE, "w->lock", UF_LK_ALONE, 0, "mutex pack/write.c", \
	"a pack writer's frames and its compressing threads (with w->go, w->fin)")
