/* SPDX-License-Identifier: MIT */
/*
 * ufault-serve's supervisor (supervisor.c): what the serving process
 * (ufault-serve.c) calls.  Not a tool of its own: compiled into
 * ufault-serve.
 */
#ifndef UFAULT_SERVE_SUPERVISOR_H
#define UFAULT_SERVE_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <ufault.h>

/* A line on stderr, "ufault-serve<who> HH:MM:SS.mmm: " and the message:
 * the server's own lines (@who "") and the supervisor's (" supervisor"). */
void super_log(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A listening Unix socket of @type at @path, made with @mode (set on the
 * socket before bind(), with the umask to match: no chmod() of a path
 * that could be a symlink by then).  What is at @path is replaced only
 * if it is a socket of this user's (the caller has found nobody listens
 * there); anything else is an error, logged, and left as it is.  The fd,
 * or -1 (logged). */
int super_bind(const char *path, int type, mode_t mode, int backlog);

/* A client handed over by the supervisor, served by an earlier server. */
struct super_client {
	uint64_t id;
	pid_t pid;
	uid_t uid;
	int uffd, conn;
	unsigned int n;
	struct uf_serve_region r[UF_SERVE_MAX_REGIONS];
	uint64_t page_size;		/* 4096, or 2 MiB: hugetlbfs memory */
	struct uf_serve_range *removed;	/* what it removed (malloc'ed) */
	size_t nremoved;
};

/* What super_find() or super_spawn() got from the supervisor. */
struct super_state {
	pid_t super_pid;
	int lfd;		/* SOCKET's listening socket, or -1 */
	bool stopping;		/* a SIGTERM'd server's clients: accept none */
	int cache_fd;		/* the cache the ufault clients map, or -1 */
	struct super_client *clients;
	unsigned int nclients;
};

/* Called before any thread.  1: a supervisor was there and handed its
 * clients over; 0: none is there (make SOCKET, then super_spawn()); -1:
 * refused (a live server, another SOURCE) or an error, logged. */
int super_find(const char *sock, const char *source, unsigned int orphan_s,
	       struct super_state *st);
/* Start a supervisor holding the listening socket @lfd (closed here),
 * then take over from it as super_find() does: 0 or -1. */
int super_spawn(const char *sock, const char *source, unsigned int orphan_s, int lfd,
		struct super_state *st);

/* A client's handshake is done: the supervisor keeps its fds, regions
 * and page size.  Return its id (0: no supervisor). */
uint64_t super_adopt(int conn, int uffd, pid_t pid, uid_t uid,
		     const struct uf_serve_region *r, unsigned int n, uint64_t page_size);
/* Serving client @id failed: the supervisor lets it go (@fail_closed:
 * after its holes are poisoned: a client handed over). */
void super_forget(uint64_t id, bool fail_closed);
/* A VMM the server refused, whose userfaultfd it holds and poisons
 * fault by fault (refuse.c): the supervisor keeps a copy, failed closed,
 * and answers its faults the same way once the server is gone, till the
 * process is. */
void super_refused(int conn, int uffd, pid_t pid, uid_t uid);
/* struct uf_serve_opts' ->on_remove; @arg is the client's id. */
void super_on_remove(void *arg, uint64_t start, uint64_t len);
/* Keep the object's cache (uf_object_cache_fd(), @fd stays the
 * caller's) for the next server: its ufault clients map it. */
void super_cache(int fd);
/* SOCKET was made anew (the supervisor had failed closed): keep @lfd. */
void super_listen(int lfd);
/* SIGTERM: the server takes no new clients. */
void super_stopping(void);
/* Is @pid the supervisor (a SIGTERM it passed on)? */
bool super_is(pid_t pid);
/* The server exits on purpose: its clients have gone or are poisoned.
 * Returns once the supervisor has exited (its files removed). */
void super_bye(void);

#endif
