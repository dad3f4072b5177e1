// SPDX-License-Identifier: MIT
/* Description: a program built before struct uf_serve_opts had @tenant (UFAULT_0.4's uf_object_serve_uffd_opts, its four-member struct ending right before an unreadable page) still serves a process: SOURCE's bytes reach it, and nothing past its struct is read */
#define _GNU_SOURCE
#include "serve-test.h"

#define SIZE	(1UL << 20)

/* struct uf_serve_opts as UFAULT_0.4 to 0.8 had it */
struct serve_opts_0_4 {
	const struct uf_serve_range *removed;
	size_t nremoved;
	void (*on_remove)(void *arg, uint64_t start, uint64_t len);
	void *arg;
};

/* UFAULT_0.4's uf_object_serve_uffd_opts, as a program linked against it
 * calls it */
int uf_object_serve_uffd_opts_0_4(struct uf_object *obj, int uffd,
				  const struct uf_serve_region *regions, unsigned int n,
				  const struct serve_opts_0_4 *opts);
__asm__(".symver uf_object_serve_uffd_opts_0_4, uf_object_serve_uffd_opts@UFAULT_0.4");

static unsigned int removals;

static void on_remove(void *arg, uint64_t start, uint64_t len)
{
	(void)arg;
	(void)start;
	(void)len;
	__atomic_add_fetch(&removals, 1, __ATOMIC_RELAXED);
}

/* The served process: SIZE of anonymous memory on a userfaultfd, handed
 * over with its address; reads every page when told, and says how many
 * were right. */
static void __attribute__((noreturn)) vmm(int sock)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char cbuf[CMSG_SPACE(sizeof(int))], go;
	uint64_t addr;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int uffd, right = 0;
	size_t pg;
	char *base;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1 /* user mode only */);
	base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (uffd < 0 || base == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) < 0)
		_exit(1);
	reg.range = (struct uffdio_range){ (unsigned long)base, SIZE };
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		_exit(1);
	addr = (uint64_t)(uintptr_t)base;
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &uffd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != sizeof(addr) || read(sock, &go, 1) != 1)
		_exit(1);
	for (pg = 0; pg < SIZE / 4096; pg++)
		right += (unsigned char)base[pg * 4096 + 3] == ut_pattern(pg * 4096 + 3);
	madvise(base, 4096, MADV_DONTNEED);	/* the opts' on_remove is called */
	if (write(sock, &right, sizeof(right)) != sizeof(right))
		_exit(1);
	_exit(0);
}

int main(void)
{
	char path[128], cbuf[CMSG_SPACE(sizeof(int))];
	uint64_t addr;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct serve_opts_0_4 *old;
	struct uf_serve_region r;
	struct uf_object *obj;
	struct cmsghdr *cm;
	struct uf_mm *mm;
	int sv[2], uffd = -1, fd, right, status;
	char *pages;
	pid_t pid;

	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(sv[0]);
		vmm(sv[1]);
	}
	close(sv[1]);
	ut_watchdog(60);
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK(recvmsg(sv[0], &mh, 0) == sizeof(addr), "recvmsg");
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no fd");
	memcpy(&uffd, CMSG_DATA(cm), sizeof(int));
	/* the old struct, its end at an unreadable page */
	pages = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(pages != MAP_FAILED && mprotect(pages + 4096, 4096, PROT_NONE) == 0, "mmap");
	old = (struct serve_opts_0_4 *)(pages + 4096 - sizeof(*old));
	*old = (struct serve_opts_0_4){ .on_remove = on_remove };
	r = (struct uf_serve_region){ .start = addr, .len = SIZE, .offset = 0 };
	CHECK_RET(uf_object_serve_uffd_opts_0_4(obj, uffd, &r, 1, old), 0);
	CHECK(write(sv[0], "g", 1) == 1, "write");
	CHECK(read(sv[0], &right, sizeof(right)) == sizeof(right), "the served process died");
	CHECK(right == (int)(SIZE / 4096), "%d of %lu pages right", right, SIZE / 4096);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the served process: status %#x", status);
	/* the removal reaches on_remove (the watchdog bounds the wait) */
	while (!__atomic_load_n(&removals, __ATOMIC_RELAXED))
		usleep(1000);
	close(sv[0]);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	unlink(path);
	printf("pass: UFAULT_0.4's uf_object_serve_uffd_opts serves with its old struct\n");
	return 0;
}
