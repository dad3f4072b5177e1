// SPDX-License-Identifier: MIT
/*
 * Objects served by another process: uf_object_attach() (the client: this
 * file, its object ops, the watcher that finds the next server, and
 * attach_map.c, its mappings) and uf_object_serve_client() (the server,
 * ufault-serve: attach_srv.c).  The protocol lives in attach_proto.h and
 * attach_wire.c only.
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
 * way, and calls fail with -ENOTCONN.
 *
 * Locking: mm->attach_lock (the lists) and an attached object's a->lock
 * (its socket and table of mappings) are each taken with no other ufault
 * lock held, and never one under the other (lockorder.h).
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
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A client's object ops (below) and mapping ops (attach_map.c). */
static const struct uf_remote_ops att_remote_ops;

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
int64_t att_call(struct uf_attach *a, const struct att_req *r, const void *in, void *out)
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

int64_t att_call_simple(struct uf_attach *a, uint32_t op, uint64_t x, uint64_t y, uint64_t z,
			uint64_t w)
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

/* att_resume(), first step: a connection to the server's socket, in
 * *sockp (blocking), 0; or 1 (stopped), or -errno (nobody listens). */
static int att_resume_connect(struct uf_attach *a, int *sockp)
{
	for (;;) {
		int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int ret, fl;

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
		*sockp = sock;
		return 0;
	}
}

/* att_resume(), second step: the hello on @sock, and the answer of the
 * server that takes it, whose cache must be the one mapped here.  0, or
 * 1 (stopped), or -errno (@sock is left to the caller). */
static int att_resume_hello(struct uf_attach *a, int sock)
{
	int memfd, ret;
	uint32_t flags = 0;
	struct stat st;

	{
		struct att_hello h = { .magic = ATT_MAGIC, .version = ATT_VERSION,
				       .oflags = a->oflags };

		/* (into the queued connection's buffer) */
		ret = write_full(sock, &h, sizeof(h));
	}
	/* a server takes the connection and answers, or the socket
	 * is closed (the queued connection reset) */
	if (!ret && !att_wait(a, sock, POLLIN | POLLRDHUP, -1))
		return 1;
	if (!ret)
		ret = att_answer(sock, &memfd, &flags);
	if (ret)
		return ret;
	ret = fstat(memfd, &st) < 0 ? -errno : 0;
	close(memfd);
	if (!ret && (st.st_dev != a->cache_dev || st.st_ino != a->cache_ino ||
		     !(flags & ATT_COPY) != !a->copy))
		ret = -ESTALE;		/* a server with a cache of its own */
	return ret;
}

/* att_resume(), last step: the table of mappings, then the userfaultfd,
 * to the server on @sock; then it is the server, and every mapping is
 * woken.  0, or -EPROTO (the stream broke: that server went too), or
 * another -errno (the server's answer).  Locking: takes a->lock. */
static int att_resume_table(struct uf_attach *a, int sock)
{
	int ret = 0;
	size_t i;

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
	return ret;
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
		int sock = -1, ret;

		ret = att_resume_connect(a, &sock);
		if (ret)
			return ret;
		ret = att_resume_hello(a, sock);
		if (ret) {
			close(sock);
			return ret;
		}
		ret = att_resume_table(a, sock);
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

/* A new client state for @socket_path, not connected; NULL without
 * memory (*err -ENOMEM) or for a path too long (*err -ENAMETOOLONG). */
static struct uf_attach *att_alloc(const char *socket_path, int acc, int *err)
{
	struct uf_attach *a;

	*err = -ENAMETOOLONG;
	if (strlen(socket_path) >= sizeof(a->sa.sun_path))
		return NULL;
	*err = -ENOMEM;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->sa.sun_family = AF_UNIX;
	strcpy(a->sa.sun_path, socket_path);
	a->oflags = (uint32_t)acc;
	a->sock = a->uffd = a->stopfd = -1;
	pthread_mutex_init(&a->lock, NULL);
	uf_lockdep_class(&a->lock, UF_LK_ATTACH);
	pthread_cond_init(&a->cond, NULL);
	return a;
}

/* Give back what att_alloc() and the steps after it made. */
static void att_free_state(struct uf_attach *a)
{
	if (a->stopfd >= 0)
		close(a->stopfd);
	if (a->uffd >= 0)
		close(a->uffd);
	if (a->sock >= 0)
		close(a->sock);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* Connect, say hello, and take the cache's memfd (*memfdp): 0 or -errno. */
static int att_connect(struct uf_attach *a, int *memfdp)
{
	struct timeval tv = { .tv_sec = ATT_HELLO_TIMEOUT_S };
	uint32_t flags = 0;
	struct stat st;
	int ret;

	a->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (a->sock < 0)
		return -errno;
	if (connect(a->sock, (struct sockaddr *)&a->sa, sizeof(a->sa)) < 0)
		return -errno;
	/* a socket that never answers is not a server: bounded wait */
	setsockopt(a->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ret = att_hello(a->sock, a->oflags, memfdp, &flags);
	if (ret)
		return ret;
	tv.tv_sec = 0;
	setsockopt(a->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	a->server_readonly = flags & ATT_READONLY;
	a->copy = flags & ATT_COPY;
	if (fstat(*memfdp, &st) < 0)
		return -errno;
	a->cache_dev = st.st_dev;
	a->cache_ino = st.st_ino;
	return 0;
}

/* The fd the server reads our faults from, handed to it, and the
 * watcher's stop fd: 0 or -errno. */
static int att_uffd(struct uf_attach *a)
{
	uint64_t got;
	int ret;

	ret = uf_uffd_new_fd(UFFD_FEATURE_THREAD_ID | UFFD_FEATURE_EVENT_UNMAP |
			     UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE |
			     UFFD_FEATURE_MISSING_SHMEM | UFFD_FEATURE_POISON, &got);
	if (ret < 0)
		return ret;
	a->uffd = ret;
	if (!(got & UFFD_FEATURE_MISSING_SHMEM))
		return -EOPNOTSUPP;
	ret = att_send_uffd(a, a->sock, got);
	if (ret)
		return ret;
	a->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return a->stopfd < 0 ? -errno : 0;
}

UF_EXPORT int uf_object_attach(struct uf_mm *mm, const char *socket_path, int oflags,
			       struct uf_object **objp)
{
	int acc = oflags & O_ACCMODE, ret, memfd = -1;
	struct uf_object *obj;
	struct uf_attach *a;

	if (!mm || !socket_path || !objp || (oflags & ~O_ACCMODE) ||
	    (acc != O_RDONLY && acc != O_RDWR))
		return -EINVAL;
	if (uf_forked(mm))
		return -ECHILD;
	if (__atomic_load_n(&mm->dead, __ATOMIC_ACQUIRE))
		return -EINVAL;
	a = att_alloc(socket_path, acc, &ret);
	if (!a)
		return ret;
	obj = calloc(1, sizeof(*obj));
	ret = obj ? att_connect(a, &memfd) : -ENOMEM;
	if (!ret)
		ret = att_uffd(a);
	if (ret)
		goto fail;
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
	__atomic_add_fetch(&mm->refs, 1, __ATOMIC_RELAXED);	/* the object's */
	pthread_mutex_lock(&mm->attach_lock);
	a->next = mm->attached;
	__atomic_store_n(&mm->attached, a, __ATOMIC_RELEASE);
	__atomic_store_n(&mm->remote_find, att_find_object, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mm->attach_lock);
	*objp = obj;
	return 0;
fail:
	if (memfd >= 0)
		close(memfd);
	att_free_state(a);
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

int att_sync(struct uf_object *obj)
{
	if (obj->readonly)
		return 0;
	return (int)att_call_simple(obj->attach, ATT_SYNC, 0, 0, 0, 0);
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
