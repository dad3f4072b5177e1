// SPDX-License-Identifier: MIT
/*
 * The server of ufault clients: uf_object_serve_client() (ufault-serve),
 * a thread per client, its requests, its table of mappings and its
 * limits, and serving by copy.  The client is attach.c; the protocol,
 * attach_proto.h.
 *
 * A client's thread adopts it as an address space, as a fork child is
 * (as.c), once it hands over its userfaultfd: its faults are served with
 * the client's VMA (the fill path, filemap.c), and each map, unmap and
 * mprotect it tells keeps the server's copy of its table.  Mappings told
 * before the fd (a client resuming after its server died) are kept, and
 * the address space starts with them.  A client gone costs the server
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
 */
#define _GNU_SOURCE
#include "as/attach.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How many mappings a client's table may hold (told before its fd, or
 * after): what each costs the server is bounded, whatever it sends.
 * Past it, ATT_MAP and a splitting ATT_PROTECT fail with -ENOMEM, as
 * mmap(2) does past vm.max_map_count. */
#define ATT_MAX_MAPS	4096

/* A client's object mappings: served as a fork child's are (filemap.c). */
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
static int srv_adopt(struct uf_attach_srv *c, int fd)
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

/* The client's fd, adopted: a lie of its ends this connection, and its
 * uid is refused a while (as.c: as_lied()). */
static int srv_uffd(struct uf_attach_srv *c, int fd)
{
	int ret = srv_adopt(c, fd);

	if (!ret) {
		c->as->peer_uid = c->uid;
		c->as->peer_pid = c->pid;
		__atomic_store_n(&c->as->hangup_fd, c->sock, __ATOMIC_RELEASE);
		uf_as_lie_billed(c->as);	/* (lied meanwhile?) */
	}
	return ret;
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
		while (recv_fd(c->sock, &r, sizeof(r), &fd) == 0) {
			struct serve_fair f;
			int stop;

			/* a tenant over its share is answered low, and
			 * late (as its VMMs' faults are: serve_fair.c); this
			 * thread is the client's own */
			serve_fair_begin((unsigned int)c->uid + 1, &f, true, UINT_MAX);
			f.trip = true;
			stop = srv_request(c, &r, fd);
			serve_fair_end(&f);
			if (stop)
				break;
		}
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
	struct ucred cred;
	socklen_t cl = sizeof(cred);
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

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return -errno;
	if (uf_attach_ban_left(obj->mm, cred.uid, NULL))
		return uf_object_serve_client(obj, sock, -EPERM);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->obj = obj;
	c->uid = cred.uid;
	c->pid = cred.pid;
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
