// SPDX-License-Identifier: MIT
/*
 * Objects served by another process: uf_object_attach() (the client) and
 * uf_object_serve_client() (the server, ufault-serve).  The protocol lives
 * in this file only.
 *
 * A client's mappings of an attached object map the server's cache
 * itself: the memfd, passed over the socket.  A page any client or the
 * server has cached is mapped by the kernel with no round trip, and N
 * clients hold one copy of each page.  Misses go to the server: the
 * client makes a userfaultfd for the object, registers its mappings of
 * it there (MISSING) and hands it over once; the server adopts the client
 * as an address space, as it does a fork child (as.c): its handlers read
 * that userfaultfd, a fault is served with the client's VMA (the fill
 * path, filemap.c: the page goes into the memfd through the server's
 * cache_map, then the client's thread is woken and its retry maps it).
 * Each uf_mmap(), uf_munmap() and uf_mprotect() of an attached object
 * tells the server before it returns, so its copy of the client's table
 * is the client's.  Truncate, punch and reclaim act on the memfd, and so
 * reach every client by themselves (past EOF the kernel raises SIGBUS).
 *
 * Writes.  Shared writable mappings write the memfd: every client and the
 * server see them at once.  The server cannot see a client's page tables,
 * so it takes, as for a fork child, every cached page a client's shared
 * writable mapping shows as dirty at each sync (any client's uf_msync()
 * or uf_object_sync(), or the server's own), before reclaim, and when the
 * client unmaps or goes: more writeback, no write lost.
 *
 * The server gone (killed, or upgraded): the client keeps its
 * userfaultfd, so its faults on holes wait there, unread.  Its watcher
 * thread sees the socket hang up and looks for the next server
 * (att_resume): it connects to the socket again -- ufault-serve's
 * supervisor keeps the listening socket while no server runs, so the
 * connection waits in its queue -- and sends the hello.  The next server
 * answers with its cache, which must be the memfd the client maps (the
 * supervisor kept it, and the server adopted it: uf_object_adopt_cache,
 * object.c); then the client sends its table of mappings (ATT_MAP, before
 * any fd: the server keeps them for the address space it makes), then
 * the userfaultfd (ATT_UFFD: the address space starts with that table,
 * so no fault waiting on the fd is read before its VMA is known), and
 * wakes every mapping: a thread asleep in a fault the dead server had
 * read faults again.  Meanwhile a map, unmap or mprotect changes only
 * the client's table (the next server gets it whole); any other request
 * waits for the next server and is sent again, so a request the dead
 * server read and may have done is done twice: each may be (the same
 * bytes to the same place, the same size, a punch, a sync, a read).
 *
 * No server for good: nobody listens, the socket is gone (a server that
 * exits on purpose removes it), the supervisor gave up (--orphan-timeout:
 * closing the listening socket resets the queued connection), or a
 * server with another cache answers.  Then the watcher puts the kernel's
 * poison marker on every page of the mappings the cache does not hold
 * and wakes them (SIGBUS, never zeros: with no userfaultfd registered,
 * the kernel would fill a hole with zeros into the cache the other
 * clients share), answers each later fault on the userfaultfd the same
 * way, and calls fail with -ENOTCONN.  A client gone costs the server
 * nothing: the socket's end frees its address space (its writes marked
 * dirty, its fd closed) and its thread.
 *
 * Served by copy.  A client the server cannot trust with its cache (an
 * O_RDONLY one whose uid is neither root nor the server's: srv_trusted)
 * would otherwise hold a file of the memfd it can map: reading a hole
 * through a mapping no userfaultfd watches makes shmem put a zero page
 * into the cache, which every other client maps and VMMs are copied
 * from.  So it is given no such file (an O_PATH fd: fstat, for its size
 * and for a resumed server's identity), its mappings are private
 * anonymous memory registered on its userfaultfd, and each of its
 * mappings is a region of serve.c's on the server (uf_serve_vma_init):
 * a fault is answered with a copy of the cache's page, as a VMM's is.
 *
 * Wire format, version 1 (one host: native byte order, fixed sizes).
 *
 *   client -> server, hello, 16 bytes:
 *	0  "UFATTACH"		magic; its first byte, 'U', is never the
 *				first of Firecracker's JSON handshake ('['
 *				or white space): uf_object_serve_client()
 *				peeks at it, and ufault-serve passes any
 *				other connection to its JSON parser
 *	8  u8 version		1
 *	9  u8 pad[3]
 *	12 u32 oflags		O_RDONLY or O_RDWR
 *   server -> client, answer, 24 bytes, with the memfd as SCM_RIGHTS
 *   when status is 0 (read-only for an O_RDONLY client; O_PATH for one
 *   served by copy, ATT_COPY):
 *	0  "UFSERVED"
 *	8  u8 version		the server's
 *	9  u8 pad[3]
 *	12 s32 status		0, or -errno: -EACCES (the peer's uid is not
 *				allowed: sent at once, before the hello is
 *				read), -EROFS (O_RDWR, the object read-only),
 *				-EPROTONOSUPPORT (another version)
 *	16 u32 flags		ATT_READONLY: the object is read-only;
 *				ATT_COPY: served by copy (below)
 *	20 u32 pad
 *   then requests, client -> server, each answered before the next:
 *	0  u32 op, u32 pad, u64 a, b, c, d	(40 bytes)
 *	ATT_UFFD	the client's userfaultfd as SCM_RIGHTS (once; first,
 *			but for the ATT_MAPs of a client resuming, which
 *			the address space then starts with)
 *	ATT_MAP		a start, b length, c first page, d prot | ATT_SHARED
 *			(-ENOMEM past ATT_MAX_MAPS, 4096, in the client's table)
 *	ATT_UNMAP	a start, b length
 *	ATT_PROTECT	a start, b length, c prot
 *	ATT_PREAD	a offset, b length (at most ATT_MAX_IO)
 *	ATT_PWRITE	a offset, b length (at most ATT_MAX_IO), then the bytes
 *	ATT_TRUNCATE	a size
 *	ATT_PUNCH	a offset, b length
 *	ATT_SYNC	-
 *   an O_RDONLY client's ATT_PWRITE, ATT_TRUNCATE, ATT_PUNCH and ATT_SYNC
 *   are refused with -EROFS (its cache fd is read-only, and its inode's
 *   mode, object.c, keeps it so through /proc/self/fd);
 *   answer, server -> client: s64 ret (0, bytes, or -errno), u64 pad;
 *   after ATT_PREAD's, ret bytes.  An op the server does not know is
 *   answered -EOPNOTSUPP; a request it cannot read (ATT_PREAD or
 *   ATT_PWRITE past ATT_MAX_IO, a stream cut short) ends the connection.
 *
 * Locking: mm->attach_lock (the lists) and an attached object's a->lock
 * (its socket and table of mappings) are each taken with no other ufault
 * lock held, and never one under the other (lockorder.h).
 */
#define _GNU_SOURCE
#include "as/as.h"
#include "lib/scm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define ATT_VERSION	1
#define ATT_MAGIC	"UFATTACH"
#define ATT_MAGIC_SRV	"UFSERVED"
#define ATT_MAGIC_LEN	8
#define ATT_READONLY	0x1
#define ATT_COPY	0x2
#define ATT_SHARED	0x100
#define ATT_MAX_IO	(1U << 20)
/* how long a client waits for the server's answer to its hello */
#define ATT_HELLO_TIMEOUT_S	10

enum att_op {
	ATT_UFFD = 1, ATT_MAP, ATT_UNMAP, ATT_PROTECT, ATT_PREAD, ATT_PWRITE,
	ATT_TRUNCATE, ATT_PUNCH, ATT_SYNC,
};

struct att_hello {
	char magic[ATT_MAGIC_LEN];
	uint8_t version, pad[3];
	uint32_t oflags;
};

struct att_answer {
	char magic[ATT_MAGIC_LEN];
	uint8_t version, pad[3];
	int32_t status;
	uint32_t flags, pad2;
};

struct att_req {
	uint32_t op, pad;
	uint64_t a, b, c, d;
};

struct att_rep {
	int64_t ret;
	uint64_t pad;
};

_Static_assert(sizeof(struct att_hello) == 16, "hello: 16 bytes");
_Static_assert(sizeof(struct att_answer) == 24, "answer: 24 bytes");
_Static_assert(sizeof(struct att_req) == 40, "request: 40 bytes");
_Static_assert(sizeof(struct att_rep) == 16, "reply: 16 bytes");

/* ------------------------------------------------------------------ */
/* Both ends                                                           */
/* ------------------------------------------------------------------ */

/* All of @len bytes, or -errno (-ECONNRESET at the end of the stream). */
static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(fd, (char *)buf + done, len - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* Send @len bytes with @pass (>= 0) as SCM_RIGHTS. */
static int send_fd(int sock, const void *buf, size_t len, int pass)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t n = uf_scm_send(sock, &iov, 1, &pass, pass >= 0);

	if (n < 0)
		return (int)n;
	/* (the rest without the fd, should the kernel take a part) */
	return (size_t)n < len ? write_full(sock, (const char *)buf + n, len - (size_t)n) : 0;
}

/* Receive @len bytes and at most one fd (*fdp, -1 if none came; any
 * other is closed).  -ECONNRESET at the end of the stream. */
static int recv_fd(int sock, void *buf, size_t len, int *fdp)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int nfds, ret;
	ssize_t n = uf_scm_recv(sock, &iov, 1, 0, fdp, 1, &nfds, NULL);

	if (n < 0 || !nfds)
		*fdp = -1;
	if (n < 0)
		return (int)n;
	if (n == 0 || (size_t)n < len) {
		ret = n ? read_full(sock, (char *)buf + n, len - (size_t)n) : -ECONNRESET;
		if (ret && *fdp >= 0) {
			close(*fdp);
			*fdp = -1;
		}
		return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The server                                                          */
/* ------------------------------------------------------------------ */

struct uf_attach_srv {
	struct uf_object *obj;
	int sock;
	bool readonly;			/* the client attached O_RDONLY */
	bool copy;			/* served by copy (srv_trusted) */
	struct uf_as *as;		/* its address space, once it sent its fd */
	/* mappings told before the fd (a client resuming after its server
	 * died): the address space starts with them */
	struct uf_vma *pend;
	size_t npend;
	struct uf_attach_srv *next;	/* mm->served, under attach_lock */
};

/* How many mappings a client's table may hold (told before its fd, or
 * after): what each costs the server is bounded, whatever it sends.
 * Past it, ATT_MAP and a splitting ATT_PROTECT fail with -ENOMEM, as
 * mmap(2) does past vm.max_map_count. */
#define ATT_MAX_MAPS	4096

/* A client's object mappings: served as a fork child's are (filemap.c). */
static const struct uf_remote_ops att_remote_ops;
static struct uf_object *att_find_object(struct uf_mm *mm, unsigned long s, unsigned long e);

static const struct uf_vm_operations attach_vm_ops = {
	.fault	= uf_filemap_fault,
};

static bool range_ok(uint64_t start, uint64_t len)
{
	return len && PAGE_ALIGNED(start) && PAGE_ALIGNED(len) && start + len > start &&
	       start + len <= (1ULL << 63);
}

/* The mappings told before the fd, and what their templates hold. */
static void srv_pend_free(struct uf_attach_srv *c)
{
	size_t i;

	for (i = 0; i < c->npend; i++)
		if (c->pend[i].vm_ops && c->pend[i].vm_ops->close)
			c->pend[i].vm_ops->close(&c->pend[i]);
	free(c->pend);
	c->pend = NULL;
	c->npend = 0;
}

/* The client's fd: its address space is served from now on. */
static int srv_uffd(struct uf_attach_srv *c, int fd)
{
	int fl;

	if (c->as)
		return -EEXIST;
	if (fd < 0 || !uf_uffd_fd_is_uffd(fd))
		return -EBADF;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -EBADF;
	if (c->npend) {
		struct uf_vma **tmpl = calloc(c->npend, sizeof(*tmpl));
		size_t i;
		int ret;

		if (!tmpl)
			return -ENOMEM;
		for (i = 0; i < c->npend; i++)
			tmpl[i] = &c->pend[i];
		/* its faults are read from here on: the table is there first */
		ret = uf_as_adopt(c->obj->mm, fd, tmpl, c->npend, &uf_as_uffd_ops, NULL, &c->as);
		free(tmpl);
		if (!ret)
			srv_pend_free(c);
		return ret;
	}
	/* (-ECANCELED: the fd was taken, and closed) */
	return uf_as_adopt(c->obj->mm, fd, NULL, 0, &uf_as_uffd_ops, NULL, &c->as);
}

/* A mapping told before the fd: kept for uf_as_adopt(), which wants them
 * apart. */
static int srv_pend(struct uf_attach_srv *c, const struct uf_vma *t)
{
	struct uf_vma *p;
	size_t i;

	for (i = 0; i < c->npend; i++)
		if (t->start < c->pend[i].end && c->pend[i].start < t->end)
			return -EINVAL;
	if (c->npend == ATT_MAX_MAPS)
		return -ENOMEM;
	p = realloc(c->pend, (c->npend + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->pend = p;
	c->pend[c->npend++] = *t;
	return 0;
}

/* Would @more mappings take the client's table past ATT_MAX_MAPS?
 * Locking: takes c->as->vma_lock shared. */
static bool srv_table_full(struct uf_attach_srv *c, size_t more)
{
	size_t n;

	pthread_rwlock_rdlock(c->as->vma_lock);
	n = c->as->vt.n;
	pthread_rwlock_unlock(c->as->vma_lock);
	return n + more > ATT_MAX_MAPS;
}

/* A mapping of a client served by copy (serve.c): private anonymous
 * memory there, whatever it asked for; one region each. */
static int srv_map_copy(struct uf_attach_srv *c, struct uf_vma *t)
{
	int ret;

	if (c->as && srv_table_full(c, 1))
		return -ENOMEM;
	ret = uf_serve_vma_init(c->obj, t);
	if (ret)
		return ret;
	if (!c->as)
		ret = srv_pend(c, t);		/* (the region's reference kept) */
	else
		ret = uf_as_map(c->as, t);
	if (ret || c->as)
		t->vm_ops->close(t);
	return ret;
}

static int srv_map(struct uf_attach_srv *c, const struct att_req *r)
{
	struct uf_object *obj = c->obj;
	struct uf_vma t;
	int prot = (int)(r->d & 0xff);

	if (!range_ok(r->a, r->b) || r->c > (UINT64_MAX >> PAGE_SHIFT) - (r->b >> PAGE_SHIFT))
		return -EINVAL;
	memset(&t, 0, sizeof(t));
	t.start = (unsigned long)r->a;
	t.end = (unsigned long)(r->a + r->b);
	t.pgoff = r->c;
	t.prot = prot;
	if (c->copy)
		return srv_map_copy(c, &t);
	if (r->d & ATT_SHARED) {
		t.flags = VMA_SHARED;
		if (c->readonly || obj->readonly)
			t.flags |= VMA_PRIV_MAP;
	} else {
		t.flags = VMA_PRIVATE;
	}
	t.vm_ops = &attach_vm_ops;
	t.obj = obj;
	if (c->as && srv_table_full(c, 1))
		return -ENOMEM;
	return c->as ? uf_as_map(c->as, &t) : srv_pend(c, &t);
}

/* One request; its answer is sent.  An error to send ends the client. */
static int srv_request(struct uf_attach_srv *c, const struct att_req *r, int fd)
{
	struct uf_object *obj = c->obj;
	struct att_rep rep = { 0 };
	void *buf = NULL;
	int ret;

	if (fd >= 0 && r->op != ATT_UFFD) {
		close(fd);
		fd = -1;
	}
	switch (r->op) {
	case ATT_UFFD:
		rep.ret = srv_uffd(c, fd);
		if (rep.ret && rep.ret != -ECANCELED && fd >= 0)
			close(fd);
		break;
	case ATT_MAP:
		rep.ret = srv_map(c, r);
		break;
	case ATT_UNMAP:
		if (!c->as || !range_ok(r->a, r->b))
			rep.ret = -EINVAL;
		else
			uf_as_unmap(c->as, (unsigned long)r->a, (unsigned long)(r->a + r->b));
		break;
	case ATT_PROTECT:
		if (!c->as || !range_ok(r->a, r->b))
			rep.ret = -EINVAL;
		else if (srv_table_full(c, 2))		/* (a split each end) */
			rep.ret = -ENOMEM;
		else
			rep.ret = uf_as_protect(c->as, (unsigned long)r->a,
						(unsigned long)(r->a + r->b), (int)r->c);
		break;
	case ATT_PREAD:
	case ATT_PWRITE:
		if (r->b > ATT_MAX_IO)
			return -EPROTO;
		buf = malloc(r->b ? r->b : 1);
		if (!buf)
			return -ENOMEM;
		if (r->op == ATT_PWRITE) {
			ret = read_full(c->sock, buf, r->b);
			if (ret) {
				free(buf);
				return ret;
			}
			rep.ret = c->readonly ? -EROFS : uf_object_pwrite(obj, buf, r->b, r->a);
		} else {
			rep.ret = uf_object_pread(obj, buf, r->b, r->a);
		}
		break;
	case ATT_TRUNCATE:
		rep.ret = c->readonly ? -EROFS : uf_object_truncate(obj, r->a);
		break;
	case ATT_PUNCH:
		rep.ret = c->readonly ? -EROFS : uf_object_punch_hole(obj, r->a, r->b);
		break;
	case ATT_SYNC:
		/* (a read-only client makes nothing dirty: writers sync) */
		rep.ret = c->readonly ? -EROFS : uf_object_sync(obj);
		break;
	default:
		/* (a newer client's: it is told, and goes on) */
		rep.ret = -EOPNOTSUPP;
		break;
	}
	ret = write_full(c->sock, &rep, sizeof(rep));
	if (!ret && r->op == ATT_PREAD && rep.ret > 0)
		ret = write_full(c->sock, buf, (size_t)rep.ret);
	free(buf);
	return ret;
}

/*
 * May the peer on @sock be given the cache's memfd?  Root and the
 * server's own uid can do anything to the server anyway; any other uid
 * is a tenant, which a file of the cache it can map would let fill holes
 * of the cache with zeros that everyone then reads (shmem allocates a
 * page on a read of a hole: no userfaultfd of the server's sees it).
 */
static bool srv_trusted(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

/* The hello and its answer (with the memfd). */
static int srv_hello(struct uf_attach_srv *c)
{
	struct att_hello h;
	struct att_answer a = { .magic = ATT_MAGIC_SRV, .version = ATT_VERSION };
	int acc, fd = -1, ret;

	ret = read_full(c->sock, &h, sizeof(h));
	if (ret)
		return ret;
	if (memcmp(h.magic, ATT_MAGIC, ATT_MAGIC_LEN))
		return -EPROTO;
	acc = (int)(h.oflags & O_ACCMODE);
	if (h.version != ATT_VERSION)
		a.status = -EPROTONOSUPPORT;
	else if ((h.oflags & ~(uint32_t)O_ACCMODE) || (acc != O_RDONLY && acc != O_RDWR))
		a.status = -EINVAL;
	else if (acc == O_RDWR && c->obj->readonly)
		a.status = -EROFS;
	c->readonly = acc == O_RDONLY;
	c->copy = c->readonly && !srv_trusted(c->sock);
	a.flags = (c->obj->readonly ? ATT_READONLY : 0) | (c->copy ? ATT_COPY : 0);
	if (!a.status) {
		char path[64];

		/* a read-only client gets a read-only file of the cache; one
		 * served by copy a file it can only fstat() (O_PATH: no read,
		 * no mmap; a reopen through /proc is checked against the
		 * inode's mode, 0400 and the server's, object.c) */
		if (c->readonly) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", c->obj->memfd);
			fd = open(path, (c->copy ? O_PATH : O_RDONLY) | O_CLOEXEC);
			if (fd < 0)
				a.status = -errno;
		} else {
			fd = c->obj->memfd;
		}
	}
	ret = send_fd(c->sock, &a, sizeof(a), a.status ? -1 : fd);
	if (c->readonly && fd >= 0)
		close(fd);
	return ret ? ret : a.status;
}

static void *srv_thread(void *arg)
{
	struct uf_attach_srv *c = arg, **pp;
	struct uf_object *obj = c->obj;
	struct uf_mm *mm = obj->mm;
	struct att_req r;
	int fd;

	if (srv_hello(c) == 0) {
		while (recv_fd(c->sock, &r, sizeof(r), &fd) == 0)
			if (srv_request(c, &r, fd))
				break;
	}
	/* gone, or stopped: nobody serves its faults from now on */
	if (c->as)
		uf_as_release(c->as);
	srv_pend_free(c);
	pthread_mutex_lock(&mm->attach_lock);
	for (pp = &mm->served; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	/* the connection itself ends (ufault-serve holds another fd of it):
	 * a client that broke the protocol is not left waiting */
	shutdown(c->sock, SHUT_RDWR);
	close(c->sock);		/* (under the lock: uf_attach_destroy_all()) */
	pthread_cond_broadcast(&mm->attach_cond);
	pthread_mutex_unlock(&mm->attach_lock);
	free(c);
	uf_object_put(obj);
	return NULL;
}

UF_EXPORT int uf_object_serve_client(struct uf_object *obj, int sock, int error)
{
	struct uf_attach_srv *c;
	char peek[ATT_MAGIC_LEN];
	pthread_attr_t at;
	pthread_t t;
	ssize_t n;
	int fl, ret;

	if (!obj || sock < 0 || error > 0 || obj->attach || uf_object_orphaned(obj))
		return -EINVAL;
	if (uf_object_forked(obj))
		return -ECHILD;
	if (error) {
		struct att_answer a = { .magic = ATT_MAGIC_SRV, .version = ATT_VERSION,
					.status = error };

		/* (a peer that does not read it, Firecracker, loses nothing) */
		if (send(sock, &a, sizeof(a), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			return -errno;
		return error;
	}
	n = recv(sock, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
	if (n == 0 || memcmp(peek, ATT_MAGIC, (size_t)n))
		return -EPROTO;
	if ((size_t)n < sizeof(peek)) {
		struct pollfd pf = { .fd = sock, .events = POLLRDHUP };

		/* the rest may come; unless the peer has closed its end */
		if (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return -EPROTO;
		return -EAGAIN;
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->obj = obj;
	c->sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
	if (c->sock < 0) {
		ret = -errno;
		free(c);
		return ret;
	}
	/* the thread reads and writes blocking (the caller only polls) */
	fl = fcntl(c->sock, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		fcntl(c->sock, F_SETFL, fl & ~O_NONBLOCK);
	uf_object_get(obj);
	pthread_mutex_lock(&obj->mm->attach_lock);
	if (__atomic_load_n(&obj->mm->dead, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&obj->mm->attach_lock);
		ret = -EINVAL;
		goto fail;
	}
	c->next = obj->mm->served;
	obj->mm->served = c;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&t, &at, srv_thread, c);
	pthread_attr_destroy(&at);
	if (ret)
		obj->mm->served = c->next;
	pthread_mutex_unlock(&obj->mm->attach_lock);
	if (!ret)
		return 0;
fail:
	close(c->sock);
	free(c);
	uf_object_put(obj);
	return ret;
}

/* ------------------------------------------------------------------ */
/* The client                                                          */
/* ------------------------------------------------------------------ */

struct att_map {
	unsigned long start, end;
	uint64_t pgoff;
	int prot;
	bool shared;
};

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

/* One request and its answer on @sock; -errno when the stream broke. */
static int att_exchange(int sock, const struct att_req *r, const void *in, void *out,
			int64_t *retp)
{
	struct att_rep rep;
	int ret;

	ret = write_full(sock, r, sizeof(*r));
	if (!ret && r->op == ATT_PWRITE)
		ret = write_full(sock, in, r->b);
	if (!ret)
		ret = read_full(sock, &rep, sizeof(rep));
	if (!ret && r->op == ATT_PREAD && rep.ret > 0) {
		if ((uint64_t)rep.ret > r->b)
			ret = -EPROTO;
		else
			ret = read_full(sock, out, (size_t)rep.ret);
	}
	*retp = rep.ret;
	return ret;
}

/* Does the server keep a copy of the table of mappings (a map, unmap or
 * protect): then with no server there is nothing to send, the next one
 * gets the whole table (att_resume). */
static bool att_table_op(uint32_t op)
{
	return op == ATT_MAP || op == ATT_UNMAP || op == ATT_PROTECT;
}

/*
 * One request and its answer (with @out for ATT_PREAD, @in for
 * ATT_PWRITE).  The server gone (killed, or restarting): a change of the
 * table returns 0 at once, any other call waits for the next server
 * (the watcher) and is sent again -- each is one a server may do twice
 * (the same bytes to the same place, the same size, a sync) -- or fails
 * with -ENOTCONN when none comes.  Locking: a->lock held (released while
 * waiting).
 */
static int64_t att_call(struct uf_attach *a, const struct att_req *r, const void *in,
			void *out)
{
	int64_t rep;

	for (;;) {
		while (a->down && !att_table_op(r->op) &&
		       !__atomic_load_n(&a->dead, __ATOMIC_ACQUIRE))
			pthread_cond_wait(&a->cond, &a->lock);
		if (__atomic_load_n(&a->dead, __ATOMIC_ACQUIRE))
			return -ENOTCONN;
		if (a->down)
			return 0;
		if (att_exchange(a->sock, r, in, out, &rep) == 0)
			return rep;
		/* gone, or the stream out of step: the watcher sees the
		 * hang-up and looks for the next server */
		shutdown(a->sock, SHUT_RDWR);
		a->down = true;
	}
}

static int64_t att_call_simple(struct uf_attach *a, uint32_t op, uint64_t x, uint64_t y,
			       uint64_t z, uint64_t w)
{
	struct att_req r = { .op = op, .a = x, .b = y, .c = z, .d = w };
	int64_t ret;

	pthread_mutex_lock(&a->lock);
	ret = att_call(a, &r, NULL, NULL);
	pthread_mutex_unlock(&a->lock);
	return ret;
}

/* Poison the pages of [s, e) the cache does not hold, then wake them.
 * Not uf_uffd_fd_poison_holes(): the ioctl sees this process's page
 * table only, and a page the shared cache holds but this process has not
 * mapped yet must stay readable, so mincore() of the cache decides. */
static void att_poison_holes(struct uf_attach *a, unsigned long s, unsigned long e)
{
	unsigned char vec[64];
	unsigned long x;

	for (x = s; x < e; x += 64 * PAGE_SIZE) {
		unsigned long n = (e - x) / PAGE_SIZE < 64 ? (e - x) / PAGE_SIZE : 64, k;

		if (mincore((void *)x, n * PAGE_SIZE, vec) < 0)
			memset(vec, 0, sizeof(vec));
		for (k = 0; k < n; k++)
			if (!(vec[k] & 1))
				uf_uffd_fd_poison(a->uffd, x + k * PAGE_SIZE, PAGE_SIZE);
	}
	uf_uffd_fd_wake(a->uffd, s, e - s);
}

static int att_answer(int sock, int *memfdp, uint32_t *flagsp);

/*
 * The hello on @sock, and the server's answer: 0 with *memfdp the cache
 * (and *flagsp the answer's flags), or -errno: the server's refusal,
 * -EPROTO (not a ufault server, or it closed), -ETIMEDOUT.
 */
static int att_hello(int sock, uint32_t oflags, int *memfdp, uint32_t *flagsp)
{
	struct att_hello h = { .magic = ATT_MAGIC, .version = ATT_VERSION, .oflags = oflags };

	/* refused at once (uid), the server may have closed already: its
	 * answer is still there to read */
	(void)write_full(sock, &h, sizeof(h));
	return att_answer(sock, memfdp, flagsp);
}

/* The server's answer to the hello: see att_hello(). */
static int att_answer(int sock, int *memfdp, uint32_t *flagsp)
{
	struct att_answer ans;
	int ret, memfd = -1;

	*memfdp = -1;
	ret = recv_fd(sock, &ans, sizeof(ans), &memfd);
	if (ret == -EAGAIN || ret == -EWOULDBLOCK)
		return -ETIMEDOUT;
	if (ret)
		return -EPROTO;		/* closed, or broken */
	if (memcmp(ans.magic, ATT_MAGIC_SRV, ATT_MAGIC_LEN))
		ret = -EPROTO;
	if (!ret && ans.status)
		ret = ans.status < 0 && ans.status > -4096 ? ans.status : -EPROTO;
	if (!ret && memfd < 0)
		ret = -EPROTO;
	if (ret) {
		if (memfd >= 0)
			close(memfd);
		return ret < 0 ? ret : -EPROTO;
	}
	*memfdp = memfd;
	*flagsp = ans.flags;
	return 0;
}

/* Hand @sock's server the userfaultfd; 0 or -errno (its refusal, or
 * -EPROTO when the stream broke: the server gone). */
static int att_send_uffd(struct uf_attach *a, int sock, uint64_t features)
{
	struct att_req r = { .op = ATT_UFFD, .a = features };
	struct att_rep rep;
	int ret = send_fd(sock, &r, sizeof(r), a->uffd);

	if (!ret)
		ret = read_full(sock, &rep, sizeof(rep));
	if (ret)
		return -EPROTO;
	if (!rep.ret)
		return 0;
	/* (-EPROTO is the broken stream's alone: att_resume tries again) */
	return rep.ret < 0 && rep.ret > -4096 && rep.ret != -EPROTO ? (int)rep.ret : -EINVAL;
}

/* Wait up to @timeout_ms (-1: for ever) for @events on @fd (-1: none):
 * false when att_free() stops the watcher meanwhile. */
static bool att_wait(struct uf_attach *a, int fd, short events, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = a->stopfd, .events = POLLIN },
		{ .fd = fd, .events = events },
	};
	int n;

	do
		n = poll(p, fd >= 0 ? 2 : 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return !p[0].revents;
}

/*
 * The server has gone: find the next one on the same socket, where a
 * supervisor (ufault-serve's) keeps the listening socket while no server
 * runs, and resume there.  The connection then waits in the socket's
 * queue until a server takes it, which answers with its cache: it must be
 * the one the mappings here map (the next server adopted the dead one's,
 * uf_object_adopt_cache()).  Then the table of mappings, and only then
 * the userfaultfd (the faults waiting there are read from that moment),
 * and a wake of every mapping: a thread asleep in a fault the dead server
 * had read faults again.  Return 0 (resumed), 1 (stopped), or -errno: no
 * server will come -- nobody listens on the socket, or it is gone, or the
 * supervisor gave up (--orphan-timeout: it closes the socket, which
 * resets the queued connection), or a server with another cache.
 * Locking: none held; takes a->lock.
 */
static int att_resume(struct uf_attach *a)
{
	for (;;) {
		int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int memfd, ret, fl;
		uint32_t flags = 0;
		struct stat st;
		size_t i;

		if (sock < 0)
			return -errno;
		if (connect(sock, (struct sockaddr *)&a->sa, sizeof(a->sa)) < 0) {
			ret = -errno;
			close(sock);
			if (ret == -EAGAIN || ret == -EINTR) {
				/* the queue is full: a server is not taking them yet */
				if (!att_wait(a, -1, 0, 50))
					return 1;
				continue;
			}
			return ret;
		}
		fl = fcntl(sock, F_GETFL);
		if (fl >= 0)
			fcntl(sock, F_SETFL, fl & ~O_NONBLOCK);
		{
			struct att_hello h = { .magic = ATT_MAGIC, .version = ATT_VERSION,
					       .oflags = a->oflags };

			/* (into the queued connection's buffer) */
			ret = write_full(sock, &h, sizeof(h));
		}
		/* a server takes the connection and answers, or the socket
		 * is closed (the queued connection reset) */
		if (!ret && !att_wait(a, sock, POLLIN | POLLRDHUP, -1)) {
			close(sock);
			return 1;
		}
		if (!ret)
			ret = att_answer(sock, &memfd, &flags);
		if (ret) {
			close(sock);
			return ret;
		}
		ret = fstat(memfd, &st) < 0 ? -errno : 0;
		close(memfd);
		if (!ret && (st.st_dev != a->cache_dev || st.st_ino != a->cache_ino ||
			     !(flags & ATT_COPY) != !a->copy))
			ret = -ESTALE;		/* a server with a cache of its own */
		if (ret) {
			close(sock);
			return ret;
		}
		/* -EPROTO from here: the stream broke (that server went
		 * too: the next one); another error is the server's answer */
		pthread_mutex_lock(&a->lock);
		for (i = 0; !ret && i < a->nmaps; i++) {
			const struct att_map *m = &a->maps[i];
			struct att_req r = { .op = ATT_MAP, .a = m->start, .b = m->end - m->start,
					     .c = m->pgoff,
					     .d = (uint64_t)m->prot | (m->shared ? ATT_SHARED : 0) };
			int64_t rep;

			if (att_exchange(sock, &r, NULL, NULL, &rep))
				ret = -EPROTO;
			else if (rep)
				ret = rep < 0 && rep > -4096 && rep != -EPROTO ? (int)rep : -EINVAL;
		}
		if (!ret)
			ret = att_send_uffd(a, sock, 0);
		if (!ret) {
			close(a->sock);
			a->sock = sock;
			a->down = false;
			pthread_cond_broadcast(&a->cond);
			for (i = 0; i < a->nmaps; i++)
				uf_uffd_fd_wake(a->uffd, a->maps[i].start,
						a->maps[i].end - a->maps[i].start);
		}
		pthread_mutex_unlock(&a->lock);
		if (!ret)
			return 0;
		close(sock);
		if (ret != -EPROTO)
			return ret;
		/* that server went too: the next one */
	}
}

/*
 * The watcher: waits for the server to hang up, then for the next one
 * (att_resume).  When none comes, every hole of the object's mappings
 * here takes SIGBUS, and each fault the fd still reports is answered so
 * (events are read and dropped: their threads go on).  Until att_free()
 * stops it.
 */
static void *att_watcher(void *arg)
{
	struct uf_attach *a = arg;
	struct pollfd p[2] = {
		{ .fd = a->sock, .events = POLLRDHUP },
		{ .fd = a->stopfd, .events = POLLIN },
	};
	size_t i;
	int ret;

	for (;;) {
		p[0].fd = a->sock;	/* (changed by this thread alone) */
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		if (!p[0].revents)
			continue;
		pthread_mutex_lock(&a->lock);
		a->down = true;
		pthread_mutex_unlock(&a->lock);
		ret = att_resume(a);
		if (ret == 1)
			return NULL;
		if (ret)
			break;
	}
	pthread_mutex_lock(&a->lock);
	__atomic_store_n(&a->dead, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&a->cond);
	for (i = 0; i < a->nmaps; i++)
		att_poison_holes(a, a->maps[i].start, a->maps[i].end);
	pthread_mutex_unlock(&a->lock);
	p[0] = (struct pollfd){ .fd = a->uffd, .events = POLLIN };
	for (;;) {
		struct uffd_msg m[16];
		ssize_t n;
		int k;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		n = read(a->uffd, m, sizeof(m));
		for (k = 0; n > 0 && k < (int)(n / (ssize_t)sizeof(m[0])); k++) {
			unsigned long pa;

			if (m[k].event != UFFD_EVENT_PAGEFAULT)
				continue;
			pa = (unsigned long)m[k].arg.pagefault.address & PAGE_MASK;
			att_poison_holes(a, pa, pa + PAGE_SIZE);
		}
	}
}

/* Locking: a->lock held.  The first map entry whose end is above @addr. */
static size_t __att_index(struct uf_attach *a, unsigned long addr)
{
	size_t i = 0;

	while (i < a->nmaps && a->maps[i].end <= addr)
		i++;
	return i;
}

static int __att_insert(struct uf_attach *a, size_t i, const struct att_map *m)
{
	if (a->nmaps == a->maps_cap) {
		size_t cap = a->maps_cap ? 2 * a->maps_cap : 8;
		struct att_map *p = realloc(a->maps, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->maps = p;
		a->maps_cap = cap;
	}
	memmove(&a->maps[i + 1], &a->maps[i], (a->nmaps - i) * sizeof(*a->maps));
	a->maps[i] = *m;
	a->nmaps++;
	return 0;
}

/* Is [s, e) all mappings of @a?  Locking: a->lock held. */
static bool __att_covers(struct uf_attach *a, unsigned long s, unsigned long e)
{
	size_t i = __att_index(a, s);
	unsigned long at = s;

	for (; i < a->nmaps && at < e; i++) {
		if (a->maps[i].start > at)
			return false;
		at = a->maps[i].end;
	}
	return at >= e;
}

/* Split the entry across @addr, if one is.  Locking: a->lock held. */
static int __att_split(struct uf_attach *a, unsigned long addr)
{
	size_t i = __att_index(a, addr);
	struct att_map m;

	if (i >= a->nmaps || a->maps[i].start >= addr)
		return 0;
	m = a->maps[i];
	m.pgoff += (addr - m.start) >> PAGE_SHIFT;
	m.start = addr;
	if (__att_insert(a, i + 1, &m))
		return -ENOMEM;
	a->maps[i].end = addr;
	uf_object_get(a->obj);		/* each entry holds one */
	return 0;
}

/*
 * The attached objects of @mm, each with a reference, in *listp (NULL
 * when none): how many.  An object in its last put is left out.
 * Locking: takes mm->attach_lock.
 */
static size_t att_snapshot(struct uf_mm *mm, struct uf_attach ***listp)
{
	struct uf_attach *a, **list = NULL;
	size_t n = 0, cap = 0;

	*listp = NULL;
	if (!__atomic_load_n(&mm->attached, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&mm->attach_lock);
	for (a = mm->attached; a; a = a->next)
		cap++;
	list = calloc(cap ? cap : 1, sizeof(*list));
	/* (its free takes it off the list first: under the lock, @a and
	 * its object are still there) */
	for (a = mm->attached; list && a; a = a->next)
		if (uf_object_tryget(a->obj))
			list[n++] = a;
	pthread_mutex_unlock(&mm->attach_lock);
	*listp = list;
	return n;
}

/* The attached object with a mapping in [s, e), with a reference. */
static struct uf_attach *att_find(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	struct uf_attach **list, *found = NULL;
	size_t n = att_snapshot(mm, &list), i, k;

	for (k = 0; k < n; k++) {
		struct uf_attach *a = list[k];

		if (!found) {
			pthread_mutex_lock(&a->lock);
			i = __att_index(a, s);
			if (i < a->nmaps && a->maps[i].start < e)
				found = a;
			pthread_mutex_unlock(&a->lock);
			if (found == a)
				continue;
		}
		uf_object_put(a->obj);
	}
	free(list);
	return found;
}

UF_EXPORT int uf_object_attach(struct uf_mm *mm, const char *socket_path, int oflags,
			       struct uf_object **objp)
{
	struct timeval tv = { .tv_sec = ATT_HELLO_TIMEOUT_S };
	struct uf_attach *a;
	struct uf_object *obj;
	struct stat st;
	uint32_t flags = 0;
	uint64_t got;
	int acc = oflags & O_ACCMODE, ret, memfd = -1;

	if (!mm || !socket_path || !objp || (oflags & ~O_ACCMODE) ||
	    (acc != O_RDONLY && acc != O_RDWR))
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	obj = calloc(1, sizeof(*obj));
	if (!a || !obj) {
		free(a);
		free(obj);
		return -ENOMEM;
	}
	a->sa.sun_family = AF_UNIX;
	if (strlen(socket_path) >= sizeof(a->sa.sun_path)) {
		free(a);
		free(obj);
		return -ENAMETOOLONG;
	}
	strcpy(a->sa.sun_path, socket_path);
	a->oflags = (uint32_t)acc;
	a->uffd = a->stopfd = -1;
	pthread_mutex_init(&a->lock, NULL);
	uf_lockdep_class(&a->lock, UF_LK_ATTACH);
	pthread_cond_init(&a->cond, NULL);
	a->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (a->sock < 0) {
		ret = -errno;
		goto fail;
	}
	if (connect(a->sock, (struct sockaddr *)&a->sa, sizeof(a->sa)) < 0) {
		ret = -errno;
		goto fail;
	}
	/* a socket that never answers is not a server: bounded wait */
	setsockopt(a->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ret = att_hello(a->sock, a->oflags, &memfd, &flags);
	if (ret)
		goto fail;
	tv.tv_sec = 0;
	setsockopt(a->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	a->server_readonly = flags & ATT_READONLY;
	a->copy = flags & ATT_COPY;
	if (fstat(memfd, &st) < 0) {
		ret = -errno;
		goto fail;
	}
	a->cache_dev = st.st_dev;
	a->cache_ino = st.st_ino;

	/* the fd the server reads our faults from */
	ret = uf_uffd_new_fd(UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_EVENT_UNMAP |
			     UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE |
			     UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_POISON, &got);
	if (ret < 0)
		goto fail;
	a->uffd = ret;
	if (!(got & UFFD_FEATURE_MISSING_SHMEM)) {
		ret = -EOPNOTSUPP;
		goto fail;
	}
	ret = att_send_uffd(a, a->sock, got);
	if (ret)
		goto fail;

	a->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a->stopfd < 0) {
		ret = -errno;
		goto fail;
	}
	obj->mm = mm;
	obj->pid = mm->pid;
	obj->refs = 1;
	obj->readonly = acc == O_RDONLY || a->server_readonly;
	obj->memfd = memfd;
	obj->cache_map = MAP_FAILED;
	obj->attach = a;
	obj->remote = &att_remote_ops;
	a->obj = obj;
	ret = -pthread_create(&a->watcher, NULL, att_watcher, a);
	if (ret)
		goto fail;
	memfd = -1;
	__atomic_add_fetch(&mm->refs, 1, __ATOMIC_RELAXED);	/* the object's */
	pthread_mutex_lock(&mm->attach_lock);
	a->next = mm->attached;
	__atomic_store_n(&mm->attached, a, __ATOMIC_RELEASE);
	__atomic_store_n(&mm->remote_find, att_find_object, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mm->attach_lock);
	*objp = obj;
	return 0;
fail:
	if (a->stopfd >= 0)
		close(a->stopfd);
	if (a->uffd >= 0)
		close(a->uffd);
	if (a->sock >= 0)
		close(a->sock);
	if (memfd >= 0)
		close(memfd);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
	free(obj);
	return ret;
}

/* The last put (uf_object_put): no mapping is left (each held one). */
static void att_free(struct uf_object *obj)
{
	struct uf_attach *a = obj->attach, **pp;
	struct uf_mm *mm = obj->mm;
	uint64_t one = 1;

	pthread_mutex_lock(&mm->attach_lock);
	for (pp = &mm->attached; *pp; pp = &(*pp)->next) {
		if (*pp == a) {
			/* (mm->attached is read unlocked: att_snapshot) */
			__atomic_store_n(pp, a->next, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&mm->attach_lock);
	if (write(a->stopfd, &one, sizeof(one)) != sizeof(one)) {
		/* (an eventfd write of 1 does not fail) */
	}
	pthread_join(a->watcher, NULL);
	/* the server sees the end, and frees what it held for us */
	close(a->sock);
	close(a->uffd);
	close(a->stopfd);
	close(obj->memfd);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a->maps);
	free(a);
	free(obj);
	uf_mm_put(mm);
}

static uint64_t att_size(const struct uf_object *obj)
{
	struct stat st;

	/* the cache's size is i_size (truncate.c keeps them equal) */
	return fstat(obj->memfd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* A pread (@out) or pwrite (@in) as requests of at most ATT_MAX_IO bytes:
 * the bytes done, or the first error when none were. */
static ssize_t att_io(struct uf_object *obj, uint32_t op, const void *in, void *out, size_t len,
		      uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < ATT_MAX_IO ? len - done : ATT_MAX_IO;
		struct att_req r = { .op = op, .a = off + done, .b = n };
		int64_t ret;

		pthread_mutex_lock(&obj->attach->lock);
		ret = att_call(obj->attach, &r, in ? (const char *)in + done : NULL,
			       out ? (char *)out + done : NULL);
		pthread_mutex_unlock(&obj->attach->lock);
		if (ret < 0)
			return done ? (ssize_t)done : (ssize_t)ret;
		done += (size_t)ret;
		if ((size_t)ret < n)
			break;
	}
	return (ssize_t)done;
}

static ssize_t att_pread(struct uf_object *obj, void *buf, size_t len, uint64_t off)
{
	return att_io(obj, ATT_PREAD, NULL, buf, len, off);
}

static ssize_t att_pwrite(struct uf_object *obj, const void *buf, size_t len, uint64_t off)
{
	if (obj->readonly)
		return -EROFS;
	return att_io(obj, ATT_PWRITE, buf, NULL, len, off);
}

static int att_truncate(struct uf_object *obj, uint64_t size)
{
	if (obj->readonly)
		return -EROFS;
	return (int)att_call_simple(obj->attach, ATT_TRUNCATE, size, 0, 0, 0);
}

static int att_punch_hole(struct uf_object *obj, uint64_t off, uint64_t len)
{
	if (obj->readonly)
		return -EROFS;
	return (int)att_call_simple(obj->attach, ATT_PUNCH, off, len, 0, 0);
}

static int att_sync(struct uf_object *obj)
{
	if (obj->readonly)
		return 0;
	return (int)att_call_simple(obj->attach, ATT_SYNC, 0, 0, 0, 0);
}


/* ->mmap: uf_mmap() of an attached object. */
static int att_mmap(struct uf_object *obj, size_t len, int prot, int flags, uint64_t offset,
		    void **addrp)
{
	struct uf_attach *a = obj->attach;
	bool shared = flags == UF_MAP_SHARED;
	int mflags = shared && !obj->readonly ? MAP_SHARED : MAP_PRIVATE;
	struct att_req r = { .op = ATT_MAP };
	struct att_map m;
	void *p;
	int ret;

	if (obj->readonly && shared && (prot & PROT_WRITE))
		return -EACCES;
	if (__atomic_load_n(&a->dead, __ATOMIC_ACQUIRE))
		return -ENOTCONN;
	/* at the file offset modulo 2 MiB: the server's huge extents map
	 * with one PMD here too; served by copy, private anonymous memory
	 * that the server copies the cache's pages into */
	if (a->copy)
		p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	else
		p = uf_mmap_aligned(len, prot, mflags | MAP_NORESERVE, obj->memfd, offset);
	if (p == MAP_FAILED)
		return -errno;
	/* a fork child would not be served: it must not have them (its
	 * kernel would fill holes with zeros, into the shared cache) */
	if (madvise(p, len, MADV_DONTFORK) < 0) {
		ret = -errno;
		munmap(p, len);
		return ret;
	}
	ret = uf_uffd_fd_register(a->uffd, (unsigned long)p, len);
	if (ret) {
		munmap(p, len);
		return ret;
	}
	m.start = (unsigned long)p;
	m.end = m.start + len;
	m.pgoff = offset >> PAGE_SHIFT;
	m.prot = prot;
	m.shared = shared;
	r.a = m.start;
	r.b = len;
	r.c = m.pgoff;
	r.d = (uint64_t)prot | (shared ? ATT_SHARED : 0);
	pthread_mutex_lock(&a->lock);
	ret = (int)att_call(a, &r, NULL, NULL);
	if (!ret)
		ret = __att_insert(a, __att_index(a, m.start), &m);
	pthread_mutex_unlock(&a->lock);
	if (ret) {
		/* (nobody has the address yet: unregistered, nothing faults) */
		uf_uffd_fd_unregister(a->uffd, m.start, len);
		munmap(p, len);
		if (ret != -ENOTCONN)
			att_call_simple(a, ATT_UNMAP, m.start, len, 0, 0);
		return ret;
	}
	uf_object_get(obj);		/* the mapping's */
	*addrp = p;
	return 0;
}

/* ->munmap: uf_munmap() of [s, e), where a mapping of @obj is. */
static int att_munmap(struct uf_object *obj, unsigned long s, unsigned long e)
{
	struct uf_attach *a = obj->attach;
	size_t i, puts = 0;
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	if (!__att_covers(a, s, e) || __att_split(a, s) || __att_split(a, e)) {
		ret = -EINVAL;
		goto out;
	}
	/* no access from here (SIGSEGV, as after the unmap); then
	 * unregistered (waiters wake into PROT_NONE), unmapped with no
	 * event to wait for, and the server told */
	mprotect((void *)s, e - s, PROT_NONE);
	uf_uffd_fd_unregister(a->uffd, s, e - s);
	munmap((void *)s, e - s);
	{
		struct att_req r = { .op = ATT_UNMAP, .a = s, .b = e - s };

		att_call(a, &r, NULL, NULL);
	}
	i = __att_index(a, s);
	while (i < a->nmaps && a->maps[i].start < e) {
		memmove(&a->maps[i], &a->maps[i + 1], (a->nmaps - i - 1) * sizeof(*a->maps));
		a->nmaps--;
		puts++;
	}
out:
	pthread_mutex_unlock(&a->lock);
	while (puts--)
		uf_object_put(a->obj);
	return ret;
}

/* ->mprotect: uf_mprotect() of [s, e), where a mapping of @obj is. */
static int att_mprotect(struct uf_object *obj, unsigned long s, unsigned long e, int prot)
{
	struct uf_attach *a = obj->attach;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	if (!__att_covers(a, s, e)) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = __att_index(a, s); (prot & PROT_WRITE) && i < a->nmaps && a->maps[i].start < e;
	     i++)
		if (a->maps[i].shared && a->obj->readonly) {
			ret = -EACCES;
			goto out;
		}
	if (__att_split(a, s) || __att_split(a, e)) {
		ret = -ENOMEM;
		goto out;
	}
	if (mprotect((void *)s, e - s, prot) < 0) {
		ret = -errno;
		goto out;
	}
	for (i = __att_index(a, s); i < a->nmaps && a->maps[i].start < e; i++)
		a->maps[i].prot = prot;
	{
		struct att_req r = { .op = ATT_PROTECT, .a = s, .b = e - s, .c = (uint64_t)prot };
		int64_t r64 = att_call(a, &r, NULL, NULL);

		if (r64 && r64 != -ENOTCONN)
			ret = (int)r64;
	}
out:
	pthread_mutex_unlock(&a->lock);
	return ret;
}

/* ->msync: uf_msync() of [s, e), where a mapping of @obj is. */
static int att_msync(struct uf_object *obj, unsigned long s, unsigned long e)
{
	struct uf_attach *a = obj->attach;
	bool covered;
	int ret;

	pthread_mutex_lock(&a->lock);
	covered = __att_covers(a, s, e);
	pthread_mutex_unlock(&a->lock);
	/* (the server writes back every page of the object it takes as
	 * dirty: this range's among them) */
	ret = !covered ? -ENOMEM : att_sync(a->obj);
	return ret;
}

/* ->remote_find of the mm (vma.c): the attached object with a mapping in
 * [s, e), with a reference, or NULL. */
static struct uf_object *att_find_object(struct uf_mm *mm, unsigned long s, unsigned long e)
{
	struct uf_attach *a = att_find(mm, s, e);

	return a ? a->obj : NULL;
}

/* What the page cache's entry points and the mapping calls (vma.c) hand
 * an attached object to. */
static const struct uf_remote_ops att_remote_ops = {
	.free		= att_free,
	.size		= att_size,
	.pread		= att_pread,
	.pwrite		= att_pwrite,
	.truncate	= att_truncate,
	.punch_hole	= att_punch_hole,
	.sync		= att_sync,
	.mmap		= att_mmap,
	.munmap		= att_munmap,
	.mprotect	= att_mprotect,
	.msync		= att_msync,
};

/*
 * uf_attach_destroy_all - uf_mm_destroy(): the clients this mm serves are
 * let go (their threads end: every page a client has not received takes
 * SIGBUS there), and the mappings of objects attached here are unmapped.
 * Locking: takes mm->attach_lock, a->lock; none held.
 */
void uf_attach_destroy_all(struct uf_mm *mm)
{
	struct uf_attach_srv *c;

	pthread_mutex_lock(&mm->attach_lock);
	for (c = mm->served; c; c = c->next)
		shutdown(c->sock, SHUT_RDWR);
	while (mm->served)
		pthread_cond_wait(&mm->attach_cond, &mm->attach_lock);
	pthread_mutex_unlock(&mm->attach_lock);

	for (;;) {
		struct uf_object *obj;
		int ret;
		struct uf_attach **list;
		size_t n = att_snapshot(mm, &list), k;
		unsigned long s = 0, e = 0;

		for (k = 0; k < n; k++) {
			struct uf_attach *a = list[k];

			pthread_mutex_lock(&a->lock);
			if (!e && a->nmaps) {
				s = a->maps[0].start;
				e = a->maps[0].end;
			}
			pthread_mutex_unlock(&a->lock);
			uf_object_put(a->obj);
		}
		free(list);
		if (!e || !(obj = att_find_object(mm, s, e)))
			return;
		ret = att_munmap(obj, s, e);
		uf_object_put(obj);
		if (ret)
			return;
	}
}
