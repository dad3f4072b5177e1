// SPDX-License-Identifier: MIT
/*
 * ufault-bench --only attach: ufault clients of one served object
 * (uf_object_attach).  Linked into ufault-bench.
 *
 *  - A second client's warm reads: one client reads the whole object
 *    (the server's cache fills); then, again and again, a new client
 *    process maps it and reads one byte of every page.  Its reference:
 *    the kernel's own shared mapping of the same bytes in a tmpfs file,
 *    in the page cache, read the same way.  Both take only the kernel's
 *    minor faults (the client maps the server's cache memfd); goal: the
 *    client at least as fast (speedup >= 1.0x; 2 MiB extents the server
 *    collapsed are mapped with one PMD there; a row for information maps
 *    4 KiB PTEs only, as the kernel's tmpfs mapping does).
 *  - 16 clients of one object, each holding its mapping read through:
 *    the server's cache stays the object's size (one copy of each page).
 *
 * The server is a process of this program's (uf_object_serve_client on
 * each connection), the clients are processes.  Ratios of one run only:
 * nothing here asserts a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ufault.h>

#define PGSZ		4096
#define NCLIENTS	16

int bench_attach(const char *dir, size_t size, unsigned int repeat, bool quick, bool check);

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec;
}

/* One byte of each page: the sum keeps the reads. */
static uint64_t touch(const volatile unsigned char *p, size_t size)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < size; i += PGSZ)
		sum += p[i];
	return sum;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The server: serves @src on @sock until its control pipe closes;
 * each byte read there is answered with its cache's pages. */
static void server(const char *sock, const char *src, int ctl_in, int ctl_out)
{
	struct uf_mm_config cfg = { .handler_threads = 2 };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct uf_object *obj;
	struct uf_mm *mm;
	int lfd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (uf_mm_create(&cfg, &mm) || uf_object_open(mm, src, O_RDWR, &obj))
		_exit(1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%.*s", (int)sizeof(a.sun_path) - 1, sock);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 64))
		_exit(1);
	if (write(ctl_out, "r", 1) != 1)
		_exit(1);
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = ctl_in, .events = POLLIN } };
		char c;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents) {
			struct uf_stats st;

			if (read(ctl_in, &c, 1) != 1)
				break;
			if (uf_mm_stats(mm, &st))
				st.cache_pages = 0;
			if (write(ctl_out, &st.cache_pages, sizeof(st.cache_pages)) < 0)
				break;
		}
		if (p[0].revents) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			struct pollfd q = { .fd = fd, .events = POLLIN };

			/* the hello comes at once; the library takes the rest */
			if (fd >= 0 && poll(&q, 1, 5000) == 1)
				uf_object_serve_client(obj, fd, 0);
			if (fd >= 0)
				close(fd);
		}
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	_exit(0);
}

/* The uid of a tenant client: a server serves it by copy. */
#define TENANT_UID	65534

/* A client: maps the object, reads it, says how long that took (ns),
 * then waits for a byte (or EOF) on @hold before it goes.  @small: its
 * mapping takes no huge page (MADV_NOHUGEPAGE): 4 KiB PTEs only.
 * @tenant: it runs as TENANT_UID and attaches O_RDONLY, so the server
 * serves it by copy (uf_object_serve_client(3)). */
static pid_t client(const char *sock, size_t size, bool small, bool tenant, int *res_fd,
		    int *hold_fd)
{
	int r[2], h[2];
	pid_t pid;

	if (pipe(r) || pipe(h))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct uf_mm *mm;
		struct uf_object *obj;
		unsigned char *p;
		uint64_t t0, ns = 0;
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(r[0]);
		close(h[1]);
		if (tenant && (setgid(TENANT_UID) || setuid(TENANT_UID)))
			_exit(1);
		prctl(PR_SET_DUMPABLE, 1);	/* (/proc/self for uf_mm_create) */
		if (uf_mm_create(NULL, &mm) ||
		    uf_object_attach(mm, sock, tenant ? O_RDONLY : O_RDWR, &obj) ||
		    uf_mmap(mm, size, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&p))
			_exit(1);
		if (small)
			madvise(p, size, MADV_NOHUGEPAGE);
		t0 = now_ns();
		if (touch(p, size) == 1)
			ns = 1;		/* (never: keeps the sum) */
		ns += now_ns() - t0;
		if (write(r[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(1);
		if (read(h[0], &c, 1) < 0)
			_exit(1);
		uf_munmap(mm, p, size);
		uf_object_put(obj);
		uf_mm_destroy(mm);
		_exit(0);
	}
	close(r[1]);
	close(h[0]);
	*res_fd = r[0];
	*hold_fd = h[1];
	return pid;
}

/* A client's time (ns), or 0 if it failed. */
static uint64_t client_ns(int res_fd)
{
	uint64_t ns;

	return read(res_fd, &ns, sizeof(ns)) == sizeof(ns) ? ns : 0;
}

static void client_end(pid_t pid, int res_fd, int hold_fd)
{
	/* a byte, not EOF: the other clients hold copies of this end */
	if (write(hold_fd, "x", 1) != 1) {
		/* (gone already) */
	}
	close(hold_fd);
	close(res_fd);
	waitpid(pid, NULL, 0);
}

/* Return: 0, 1 (a goal missed, with @check), 2 (an error). */
int bench_attach(const char *dir, size_t size, unsigned int repeat, bool quick, bool check)
{
	char tdir[] = "/tmp/ufault-bench-attach-XXXXXX", sock[96], src[256];
	int c2s[2], s2c[2], fd, ret = 2;
	bool miss = false;
	uint64_t *mine = NULL, *small = NULL, *ref = NULL, *copy = NULL, cache = 0;
	bool tenant = geteuid() == 0;
	pid_t spid;
	unsigned int i;
	size_t off;
	char *buf;

	if (!repeat)
		repeat = 5;
	snprintf(src, sizeof(src), "%s/ufault-bench-attach-XXXXXX", dir ? dir : "/dev/shm");
	fd = mkstemp(src);
	if (fd < 0 || !mkdtemp(tdir)) {
		perror("ufault-bench: attach");
		return 2;
	}
	snprintf(sock, sizeof(sock), "%s/sock", tdir);
	buf = malloc(1 << 20);
	for (off = 0; buf && off < size; off += 1 << 20) {
		memset(buf, (int)(off >> 20) | 1, 1 << 20);
		if (pwrite(fd, buf, 1 << 20, (off_t)off) != 1 << 20)
			break;
	}
	free(buf);
	if (off < size || pipe(c2s) || pipe(s2c)) {
		perror("ufault-bench: attach: SOURCE");
		goto out_src;
	}
	spid = fork();
	if (spid == 0) {
		close(c2s[1]);
		close(s2c[0]);
		server(sock, src, c2s[0], s2c[1]);
	}
	close(c2s[0]);
	close(s2c[1]);
	{
		char r;

		if (spid < 0 || read(s2c[0], &r, 1) != 1) {
			fprintf(stderr, "ufault-bench: attach: the server did not start\n");
			goto out;
		}
	}
	mine = calloc(repeat, sizeof(*mine));
	ref = calloc(repeat, sizeof(*ref));
	small = calloc(repeat, sizeof(*small));
	copy = calloc(repeat, sizeof(*copy));
	if (!mine || !ref || !small || !copy)
		goto out;
	/* a tenant's way in */
	if (tenant && (chmod(tdir, 0755) || chmod(sock, 0777)))
		tenant = false;

	/* the first client fills the server's cache */
	{
		int rf, hf;
		pid_t p = client(sock, size, false, false, &rf, &hf);

		if (p < 0 || !client_ns(rf)) {
			fprintf(stderr, "ufault-bench: attach: a client failed (userfaultfd?)\n");
			if (p > 0)
				client_end(p, rf, hf);
			goto out;
		}
		client_end(p, rf, hf);
	}
	/* then each new client, and the kernel's tmpfs mapping, in turns */
	for (i = 0; i < repeat; i++) {
		int rf, hf;
		pid_t p = client(sock, size, false, false, &rf, &hf);
		void *m;
		uint64_t t0;

		mine[i] = p > 0 ? client_ns(rf) : 0;
		if (p > 0)
			client_end(p, rf, hf);
		p = client(sock, size, true, false, &rf, &hf);
		small[i] = p > 0 ? client_ns(rf) : 0;
		if (p > 0)
			client_end(p, rf, hf);
		if (tenant) {
			p = client(sock, size, false, true, &rf, &hf);
			copy[i] = p > 0 ? client_ns(rf) : 0;
			if (p > 0)
				client_end(p, rf, hf);
			if (!copy[i])
				goto out;
		}
		m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED || !mine[i] || !small[i])
			goto out;
		t0 = now_ns();
		if (touch(m, size) == 1)
			t0--;
		ref[i] = now_ns() - t0;
		munmap(m, size);
	}
	qsort(mine, repeat, sizeof(*mine), cmp_u64);
	qsort(ref, repeat, sizeof(*ref), cmp_u64);
	qsort(small, repeat, sizeof(*small), cmp_u64);
	qsort(copy, repeat, sizeof(*copy), cmp_u64);
	{
		double me = (double)mine[repeat / 2] / (double)(size / PGSZ);
		double kr = (double)ref[repeat / 2] / (double)(size / PGSZ);
		double speedup = kr / me;

		printf("attach: a second ufault client's warm reads, %zu MiB, medians of %u\n",
		       size >> 20, repeat);
		printf("  %-34s %8.1f ns/page\n", "kernel/tmpfs (MAP_SHARED, cached)", kr);
		double sm = (double)small[repeat / 2] / (double)(size / PGSZ);

		printf("  %-34s %8.1f ns/page\n", "ufault client (attached, warm)", me);
		printf("  %-34s %8.1f ns/page  (info: %.2fx; MADV_NOHUGEPAGE)\n",
		       "ufault client, 4 KiB PTEs only", sm, kr / sm);
		if (tenant) {
			double cp = (double)copy[repeat / 2] / (double)(size / PGSZ);

			printf("  %-34s %8.1f ns/page  (info: %.2fx of the client above; "
			       "uid %d, O_RDONLY: served by copy)\n", "ufault client of a tenant uid",
			       cp, me / cp, TENANT_UID);
		} else {
			printf("  %-34s skipped: a tenant is another uid (run as root)\n",
			       "ufault client of a tenant uid");
		}
		miss = !quick && speedup < 1.0;
		printf("  speedup %.2fx (goal >= 1.00x): %s\n", speedup,
		       quick ? "smoke only (--quick)" : miss ? "MISS" : "ok");
	}

	/* 16 clients at once, each with the object mapped and read */
	{
		pid_t pids[NCLIENTS];
		int rfs[NCLIENTS], hfs[NCLIENTS], n = 0, k;
		char q = 'q';
		bool ok = true;

		for (k = 0; k < NCLIENTS; k++) {
			pids[k] = client(sock, size, false, false, &rfs[k], &hfs[k]);
			if (pids[k] < 0)
				break;
			n++;
		}
		for (k = 0; k < n; k++)
			ok = client_ns(rfs[k]) && ok;
		if (write(c2s[1], &q, 1) != 1 ||
		    read(s2c[0], &cache, sizeof(cache)) != sizeof(cache))
			ok = false;
		for (k = 0; k < n; k++)
			client_end(pids[k], rfs[k], hfs[k]);
		printf("attach: %d ufault clients of one %zu MiB object, each mapped and read:\n"
		       "  server cache %.1f MiB (goal: %zu MiB, one copy): %s\n",
		       n, size >> 20, (double)cache * PGSZ / (1 << 20), size >> 20,
		       !ok || n != NCLIENTS ? "FAILED" :
		       cache * PGSZ <= size ? "ok" : "MISS");
		miss = miss || cache * PGSZ > size;
		ret = !ok || n != NCLIENTS ? 2 : miss && check ? 1 : 0;
	}
out:
	close(c2s[1]);
	waitpid(spid, NULL, 0);
	close(s2c[0]);
	free(mine);
	free(ref);
	free(small);
	free(copy);
out_src:
	close(fd);
	unlink(src);
	unlink(sock);
	rmdir(tdir);
	return ret;
}
