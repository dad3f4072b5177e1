/* SPDX-License-Identifier: MIT */
/*
 * What the files of ufault clients and their server share (src/as/):
 * the protocol (attach_proto.h), a client's state and the calls its two
 * files make of each other (attach.c: the client, its object ops and its
 * watcher; attach_map.c: its mappings), and the server's state for each
 * client (attach_srv.c; here for uf_attach_destroy_all, attach_map.c).
 */
#ifndef UF_AS_ATTACH_H
#define UF_AS_ATTACH_H

#include "as/as.h"
#include "as/attach_proto.h"

#include <sys/un.h>

/* A client: an entry of its table of mappings of the attached object. */
struct att_map {
	unsigned long start, end;
	uint64_t pgoff;
	int prot;
	bool shared;
};

/* A client: the attached object's state (obj->attach). */
struct uf_attach {
	struct uf_object *obj;
	int sock;
	int uffd;
	int stopfd;			/* eventfd: the watcher exits */
	bool dead;			/* no server, for good (atomic) */
	bool server_readonly;
	bool copy;			/* served by copy: no mapping of the
					   cache here (ATT_COPY) */
	pthread_t watcher;
	pthread_mutex_t lock;		/* the socket, the table below, @down */
	pthread_cond_t cond;		/* @down cleared, or @dead set */
	bool down;			/* no server now: the watcher looks for
					   the next (calls to it wait) */
	struct att_map *maps;		/* sorted by start */
	size_t nmaps, maps_cap;
	uint32_t oflags;		/* as attached */
	dev_t cache_dev;		/* the cache the mappings map */
	ino_t cache_ino;
	struct sockaddr_un sa;		/* the server's socket */
	struct uf_attach *next;		/* mm->attached, under attach_lock */
};

/* The server: a client it serves (mm->served). */
struct uf_attach_srv {
	struct uf_object *obj;
	int sock;
	bool readonly;			/* the client attached O_RDONLY */
	bool copy;			/* served by copy (srv_trusted) */
	uid_t uid;			/* the peer (SO_PEERCRED) */
	pid_t pid;
	struct uf_as *as;		/* its address space, once it sent its fd */
	/* mappings told before the fd (a client resuming after its server
	 * died): the address space starts with them */
	struct uf_vma *pend;
	size_t npend;
	struct uf_attach_srv *next;	/* mm->served, under attach_lock */
};

/* attach.c: the client's calls to its server */
int64_t att_call(struct uf_attach *a, const struct att_req *r, const void *in, void *out);
int64_t att_call_simple(struct uf_attach *a, uint32_t op, uint64_t x, uint64_t y, uint64_t z,
			uint64_t w);
int att_sync(struct uf_object *obj);

/* attach_map.c: the client's mapping ops, and finding its objects */
int att_mmap(struct uf_object *obj, size_t len, int prot, int flags, uint64_t offset,
	     void **addrp);
int att_munmap(struct uf_object *obj, unsigned long s, unsigned long e);
int att_mprotect(struct uf_object *obj, unsigned long s, unsigned long e, int prot);
int att_msync(struct uf_object *obj, unsigned long s, unsigned long e);
struct uf_object *att_find_object(struct uf_mm *mm, unsigned long s, unsigned long e);

#endif /* UF_AS_ATTACH_H */
