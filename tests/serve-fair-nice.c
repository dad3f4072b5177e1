// SPDX-License-Identifier: MIT
/* Description: ufault-serve serves a tenant over its share at nice 19: uid 65534's VMMs faulting alone never lower a server thread (0 of 3000 looks at the server's threads), and beside a root VMM faulting slowly, a server thread is seen at nice 19; so is one answering a ufault client of uid 65534 that maps and unmaps without pause beside the root VMM (its requests count as its tenant's), and one serving uid 65534's VMMs of hugetlbfs memory (when huge pages can be had); the root VMM reads SOURCE's bytes throughout */
#include "attach-test.h"	/* (a client forked after the watchdog thread: ThreadSanitizer) */

#include <grp.h>
#include <sys/stat.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define LEN	(16u << 20)
#define LOOKS	3000

/* The VMMs' page size: 4096, or 2 MiB (hugetlbfs memory). */
static size_t vmm_page = 4096;

/* VMMs one after another, each touching every page of LEN in order
 * (@pace_us between pages) and checking the bytes; never returns. */
static void __attribute__((noreturn)) vmms(const char *sock, unsigned int pace_us)
{
	pid_t self = getpid();

	for (;;) {
		pid_t pid = fork();

		if (pid == 0) {
			struct uffdio_api api = { .api = UFFD_API };
			struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
			int uffd = (int)syscall(SYS_userfaultfd,
						O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
			char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE |
				       MAP_ANONYMOUS | (vmm_page > 4096 ? MAP_HUGETLB : 0), -1, 0);
			char json[256];
			size_t i;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != self)
				_exit(0);	/* (its parent died before the prctl) */
			if (uffd < 0 || p == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api))
				_exit(3);
			reg.range = (struct uffdio_range){ (unsigned long)p, LEN };
			if (ioctl(uffd, UFFDIO_REGISTER, &reg))
				_exit(3);
			snprintf(json, sizeof(json),
				 "[{\"base_host_virt_addr\":%lu,\"size\":%u,\"offset\":0,"
				 "\"page_size\":%zu}]", (unsigned long)p, LEN, vmm_page);
			ut_send_handshake(sock, json, strlen(json), uffd);
			for (i = 0; i < LEN; i += 4096) {
				if ((unsigned char)p[i] != ut_pattern(i))
					_exit(4);
				if (pace_us)
					usleep(pace_us);
			}
			_exit(0);
		}
		if (pid > 0) {
			int st;

			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				_exit(WIFEXITED(st) ? 10 + WEXITSTATUS(st) : 5);	/* wrong bytes, or SIGBUS */
		}
	}
}

/* A child of the test as @uid (0 if the parent). */
static pid_t start_as(uid_t uid)
{
	pid_t test = getpid(), pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
		_exit(2);
	prctl(PR_SET_DUMPABLE, 1);
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* (a new uid cleared it) */
	if (getppid() != test)
		_exit(0);	/* (the test died before that) */
	return 0;
}

/* A child running vmms(), as @uid. */
static pid_t start(const char *sock, uid_t uid, unsigned int pace_us)
{
	pid_t pid = start_as(uid);

	if (pid)
		return pid;
	vmms(sock, pace_us);
}

/* VMMs of @uid with hugetlbfs memory, one after another, or 0 when no
 * huge pages can be had for them. */
static pid_t start_huge(const char *sock, uid_t uid)
{
	pid_t pid;

	if (!ut_huge_pool_grow(2 * (long)(LEN >> 21)))
		return 0;
	pid = start_as(uid);
	if (pid)
		return pid;
	vmm_page = 2UL << 20;
	vmms(sock, 0);
}

/* A ufault client of @uid mapping and unmapping without pause (a request
 * each to the server). */
static pid_t start_mapper(const char *sock, uid_t uid)
{
	struct uf_object *obj;
	struct uf_mm *mm;
	void *p;
	pid_t pid = start_as(uid);

	if (pid)
		return pid;
	if (uf_mm_create(NULL, &mm) || uf_object_attach(mm, sock, O_RDONLY, &obj))
		_exit(3);
	for (;;) {
		if (uf_mmap(mm, 4096, PROT_READ, UF_MAP_SHARED, obj, 0, &p) ||
		    uf_munmap(mm, p, 4096))
			_exit(4);
	}
}

/* Is a thread of @pid at nice 19 now? */
static bool lowered(pid_t pid)
{
	char path[320], buf[512], *p;
	struct dirent *e;
	bool low = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	CHECK(d, "%s: %s", path, strerror(errno));
	while (!low && (e = readdir(d))) {
		int fd, nice = 0;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		/* after the comm's ')': state is field 3, nice field 19 */
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
					"%*d %d", &nice) == 1 && nice == 19)
			low = true;
	}
	closedir(d);
	return low;
}

static void alive(pid_t pid, const char *who)
{
	int st;

	CHECK(waitpid(pid, &st, WNOHANG) == 0, "%s's VMMs: status %#x", who, st);
}

/* Looks at the server's threads till one is at nice 19 (50 * LOOKS at
 * most), both tenants alive: how many looks it took. */
static int look_for_lowered(pid_t server, pid_t hostile, pid_t honest)
{
	int i;

	for (i = 0; i < 50 * LOOKS && !lowered(server); i++) {
		if (i % 100 == 0) {
			alive(hostile, "uid 65534");
			alive(honest, "root");
		}
	}
	return i;
}

int main(void)
{
	static const char *const opts[] = { "--allow-uid", "65534", "--threads", "2", NULL };
	struct ut_server srv;
	pid_t hostile, honest;
	int i, seen = 0;

	ut_watchdog(120);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: the tenant is another uid\n");
		return UT_SKIP;
	}
	ut_server_start(&srv, LEN, opts);
	CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
	hostile = start(srv.sock, 65534, 0);
	ut_server_log_wait(&srv, "served, 1 region");
	for (i = 0; i < LOOKS; i++) {
		seen += lowered(srv.pid);
		if (i % 100 == 0)
			alive(hostile, "uid 65534");
	}
	fprintf(stderr, "one tenant: lowered in %d of %d looks\n", seen, LOOKS);
	CHECK(seen == 0, "a thread at nice 19 with one tenant (%d looks of %d)", seen, LOOKS);

	honest = start(srv.sock, 0, 200);
	i = look_for_lowered(srv.pid, hostile, honest);
	seen = i < 50 * LOOKS;
	fprintf(stderr, "two tenants: lowered after %d looks\n", i);
	CHECK(seen, "no server thread at nice 19 in %d looks with two tenants", i);
	alive(honest, "root");
	kill(hostile, SIGKILL);
	waitpid(hostile, NULL, 0);

	/* the other tenant a ufault client now: its requests */
	hostile = start_mapper(srv.sock, 65534);
	ut_server_log_wait(&srv, "a ufault client, served");
	i = look_for_lowered(srv.pid, hostile, honest);
	seen = i < 50 * LOOKS;
	fprintf(stderr, "a mapping client beside root's VMMs: lowered after %d looks\n", i);
	CHECK(seen, "no server thread at nice 19 in %d looks beside a mapping client", i);
	alive(honest, "root");
	kill(hostile, SIGKILL);
	waitpid(hostile, NULL, 0);

	/* the other tenant's VMMs in hugetlbfs memory now (once no thread
	 * is low for the client gone: 100 looks in a row) */
	for (i = 0; i < 100; i++)
		if (lowered(srv.pid))
			i = 0;
	hostile = start_huge(srv.sock, 65534);
	if (hostile) {
		ut_server_log_wait(&srv, "of 2 MiB pages (hugetlbfs)");
		i = look_for_lowered(srv.pid, hostile, honest);
		fprintf(stderr, "hugetlbfs VMMs beside root's: lowered after %d looks\n", i);
		CHECK(i < 50 * LOOKS, "no server thread at nice 19 in %d looks beside hugetlbfs "
		      "VMMs", i);
		alive(honest, "root");
		kill(hostile, SIGKILL);
		waitpid(hostile, NULL, 0);
	} else {
		fprintf(stderr, "no huge pages to be had here: hugetlbfs VMMs not tried\n");
	}
	kill(honest, SIGKILL);
	waitpid(honest, NULL, 0);
	printf("pass: a server thread lowered beside another tenant only\n");
	return UT_PASS;
}
