/* SPDX-License-Identifier: MIT */
/*
 * The engine's private header (src/engine/): the userfaultfd, its
 * features and the handler threads that read it (uffd.c, handler.c,
 * monitor.c; what they share: uffd_int.h).  Below every layer but lib.
 */
#ifndef UF_ENGINE_H
#define UF_ENGINE_H

#include "lib/lib.h"
#include "uffd_holes.h"

struct uf_uffd;
struct uf_uffd_ops {
	/* a page fault; @slot is the reading handler's index */
	void (*fault)(void *owner, unsigned int slot, const struct uffd_msg *msg);
	/* any other event (unmap, remap, remove) */
	void (*event)(void *owner, const struct uffd_msg *msg);
	/* how long a handler may sleep with no event (ms, -1: forever);
	 * ->idle runs each time a handler wakes */
	int (*idle_ms)(void *owner);
	void (*idle)(void *owner);
};

/*
 * The handler threads of an engine and what they write at every event: in
 * memory fork children do not inherit (uf_nocow_alloc()), since after
 * fork() each page a handler writes costs a copy-on-write fault while the
 * child lives, and the handler that reads the fork event writes these
 * before it reads.  @nidle counts handlers waiting for an event (atomic).
 */
struct uf_uffd_threads {
	unsigned int nidle;
	bool timer_armed;		/* atomic */
	struct uf_uffd_handler {
		struct uf_uffd *uffd;
		unsigned int slot;
		uint64_t busy_since;	/* ns, 0 while idle (atomic) */
		int ep;			/* its epoll set (guest_lock), or -1 */
	} handlers[UF_MAX_HANDLERS];
	struct uf_thread threads[UF_MAX_HANDLERS];
	struct uf_thread monitor;
};

struct uf_uffd {
	int fd;
	int stopfd;			/* eventfd: handler threads exit */
	int kickfd;			/* eventfd: messages wait in pending */
	uint64_t features;		/* granted by UFFDIO_API */
	const struct uf_uffd_ops *ops;
	void *owner;

	/*
	 * Handler threads: the configured ones, plus spares the monitor
	 * starts when every handler has been busy for a while (a fault()
	 * that touches another ufault mapping waits for another handler).
	 * @nthreads grows under @lock and is read atomically.
	 */
	pthread_mutex_t lock;
	bool stopping;			/* under @lock: start no more spares */
	unsigned int nthreads;
	struct uf_uffd_threads *t;	/* (uf_uffd_start) */
	int timerfd;			/* the monitor's alarm */
	bool monitor_started;

	/*
	 * Address-space events (unmap, remap, remove) are read under
	 * ev_lock and counted; ev_done counts those handed to ->event.
	 * The kernel lets the thread that caused an event go on as soon as
	 * it is read, so uf_uffd_quiesce() is how the owner waits until its
	 * table shows every change made so far.  Faults a thread read
	 * while it waited inside an ioctl (uffd_drain) wait in pending.
	 */
	pthread_mutex_t ev_lock;
	pthread_cond_t ev_cond;
	uint64_t ev_read, ev_done;
	struct uffd_msg *evq;		/* events read, not yet applied, in order */
	size_t nevq, evq_cap;
	bool ev_applying;		/* a thread applies evq (one at a time) */
	struct uffd_msg *pending;	/* faults read by another thread */
	size_t npending, pending_cap;
	/*
	 * A copy into the program's own mappings (uf_uffd_copy_mapped)
	 * holds copy_lock shared; a read of the fd holds it exclusive
	 * (outside ev_lock).  The kernel changes a mapping before it queues
	 * the event, and copies there fail with EAGAIN only until the event
	 * is read: with no read during the copy, and every event read before
	 * applied, the owner's table is the kernel's for its length.
	 */
	pthread_rwlock_t copy_lock;

	/*
	 * Guests: the userfaultfds of other address spaces (fork children),
	 * read by this engine's handler threads, each with its own queues
	 * and copy_lock as above, and no threads of its own (@host set).
	 * The host's list and each guest's @users (handlers using it) are
	 * under the host's guest_lock, a leaf; a guest leaves the list only
	 * while no handler uses it.
	 */
	pthread_mutex_t guest_lock;
	struct uf_uffd *guests;
	unsigned int nguests;		/* atomic */
	struct uf_uffd *host, *guest_next;
	int users;
	struct uf_uffd *engine_next;	/* engines with threads (monitor.c) */
};

#define UF_UFFD_DONTWAKE	0x01	/* uf_uffd_copy: leave waiters asleep */
#define UF_UFFD_WP		0x02	/* uf_uffd_copy: map write-protected */

int uf_uffd_probe(bool user_mode_only, uint64_t *avail);
bool uf_uffd_probe_feature(bool user_mode_only, uint64_t feature);
int uf_uffd_open(struct uf_uffd *u, bool user_mode_only, uint64_t want);
int uf_uffd_new_fd(uint64_t want, uint64_t *got);
int uf_uffd_fd_register(int fd, unsigned long start, unsigned long len);
void uf_uffd_fd_unregister(int fd, unsigned long start, unsigned long len);
void uf_uffd_fd_wake(int fd, unsigned long addr, unsigned long len);
int uf_uffd_start(struct uf_uffd *u, unsigned int nthreads, const struct uf_uffd_ops *ops,
		  void *owner);
void uf_uffd_stop(struct uf_uffd *u);
void uf_uffd_close(struct uf_uffd *u);
int uf_uffd_register(struct uf_uffd *u, unsigned long start, unsigned long len, bool wp);
int uf_uffd_writeprotect(struct uf_uffd *u, unsigned long start, unsigned long len,
			 bool protect, bool dontwake);
void uf_uffd_wake(struct uf_uffd *u, unsigned long addr, size_t len);
/* Bytes this thread's copies have put into guests (other processes), ever */
extern __thread uint64_t uf_uffd_guest_copied;
int uf_uffd_copy(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
		 unsigned int flags, size_t *copied);
int uf_uffd_copy_mapped(struct uf_uffd *u, unsigned long dst, const void *src, size_t len,
			unsigned int flags, size_t *copied);
int uf_uffd_poison(struct uf_uffd *u, unsigned long addr, size_t len);
int uf_uffd_poison_mapped(struct uf_uffd *u, unsigned long addr, size_t len);
int uf_uffd_writeprotect_mapped(struct uf_uffd *u, unsigned long start, unsigned long len,
				bool protect, bool dontwake);
int uf_uffd_unregister(struct uf_uffd *u, unsigned long start, unsigned long len);
void uf_uffd_quiesce(struct uf_uffd *u);
void uf_uffd_settle(struct uf_uffd *u);
int uf_uffd_run(struct uf_uffd *u, int (*fn)(void *arg), void *arg);
int uf_uffd_zap(struct uf_uffd *u, const struct uf_range *r, size_t n);
void uf_uffd_guest_init(struct uf_uffd *g, int fd, struct uf_uffd *host,
			const struct uf_uffd_ops *ops, void *owner);
void uf_uffd_attach(struct uf_uffd *g);
int uf_uffd_detach(struct uf_uffd *g, bool wait);
void uf_uffd_guest_hold(struct uf_uffd *g);
void uf_uffd_guest_unhold(struct uf_uffd *g);
bool uf_uffd_alive(struct uf_uffd *g);
int uf_uffd_poison_holes(struct uf_uffd *u, unsigned long addr, size_t len, size_t step);
int uf_uffd_zeropage_mapped(struct uf_uffd *u, unsigned long addr, size_t len,
			    unsigned int flags);

#endif /* UF_ENGINE_H */
