// SPDX-License-Identifier: MIT
/* Description: uf_object_record() records the pages a process served by uf_object_serve_uffd() faults, beside the mm's own; uf_object_serve_record() records that process's alone, not the mm's own mappings, and writes nothing when no process was served */
#define _GNU_SOURCE
#include "ws-test.h"
#include "watchdog.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SIZE	(4UL << 20)
#define NPAGES	(SIZE / 4096)

/* The pages the served process touches, in order, and the mm's own. */
static const uint32_t child_pages[] = { 700, 12, 13, 14, 300, 901, 2 };
static const uint32_t own_pages[] = { 500, 501, 40 };
#define NCHILD	(sizeof(child_pages) / sizeof(child_pages[0]))
#define NOWN	(sizeof(own_pages) / sizeof(own_pages[0]))

/* The served process: anonymous memory on a userfaultfd of its own,
 * handed over with its address; touch the pages once told to. */
static void child(int sock)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	char cbuf[CMSG_SPACE(sizeof(int))], go;
	uint64_t addr;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	char *base;
	size_t i;
	int uffd;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		_exit(UT_SKIP);
	base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api) < 0)
		_exit(1);
	reg.range.start = (unsigned long)base;
	reg.range.len = SIZE;
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
	for (i = 0; i < NCHILD; i++)
		if ((unsigned char)base[(size_t)child_pages[i] * 4096 + 9] !=
		    ut_pattern((uint64_t)child_pages[i] * 4096 + 9))
			_exit(1);
	_exit(0);
}

/* Serve a new child process from @obj; it touches its pages; wait. */
static void serve_child(struct uf_object *obj)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint64_t addr;
	struct iovec iov = { &addr, sizeof(addr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct uf_serve_region r;
	struct cmsghdr *cm;
	int sv[2], uffd = -1, st;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(sv[0]);
		child(sv[1]);
	}
	close(sv[1]);
	CHECK(recvmsg(sv[0], &mh, 0) == sizeof(addr), "recvmsg");
	cm = CMSG_FIRSTHDR(&mh);
	CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no fd");
	memcpy(&uffd, CMSG_DATA(cm), sizeof(int));
	r = (struct uf_serve_region){ .start = addr, .len = SIZE, .offset = 0 };
	CHECK_RET(uf_object_serve_uffd(obj, uffd, &r, 1), 0);
	CHECK(write(sv[0], "g", 1) == 1, "write");
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	if (WIFEXITED(st) && WEXITSTATUS(st) == UT_SKIP)
		exit(UT_SKIP);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "served process: status %#x", st);
	close(sv[0]);
}

/* The mm's own mapping touches its pages. */
static void touch_own(char *m)
{
	size_t i;

	for (i = 0; i < NOWN; i++)
		CHECK((unsigned char)m[(size_t)own_pages[i] * 4096] ==
		      ut_pattern((uint64_t)own_pages[i] * 4096), "own page %u", own_pages[i]);
}

static void open_cold(struct uf_mm **mm, const char *path, struct uf_object **obj, char **m)
{
	CHECK_RET(uf_mm_create(NULL, mm), 0);
	CHECK_RET(uf_object_open(*mm, path, O_RDONLY, obj), 0);
	CHECK_RET(uf_mmap(*mm, SIZE, PROT_READ, UF_MAP_SHARED, *obj, 0, (void **)m), 0);
}

static void close_all(struct uf_mm *mm, struct uf_object *obj, char *m)
{
	CHECK_RET(uf_munmap(mm, m, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

int main(void)
{
	char path[128], rec[160];
	struct uf_object *obj;
	struct ws_file f;
	struct uf_mm *mm;
	struct stat st;
	size_t i;
	char *m;
	int fd;

	ut_watchdog(60);
	fd = ut_make_file("/dev/shm", SIZE, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);

	/* uf_object_record(): the mm's own pages, then the served process's */
	open_cold(&mm, path, &obj, &m);
	CHECK_RET(uf_object_record(obj, rec), 0);
	touch_own(m);
	serve_child(obj);
	CHECK_RET(uf_object_record_stop(obj), (int)(NOWN + NCHILD));
	close_all(mm, obj, m);
	ws_read_file(rec, &f);
	for (i = 0; i < NOWN + NCHILD; i++) {
		uint32_t want = i < NOWN ? own_pages[i] : child_pages[i - NOWN];

		CHECK(f.pages[i] == want, "record page %zu: %lu, want %u", i,
		      (unsigned long)f.pages[i], want);
	}
	free(f.pages);
	unlink(rec);

	/* uf_object_serve_record(): nothing served, nothing written */
	open_cold(&mm, path, &obj, &m);
	CHECK_RET(uf_object_serve_record(obj, rec), 0);
	CHECK_RET(uf_object_record(obj, rec), -EBUSY);
	touch_own(m);
	CHECK_RET(uf_object_record_stop(obj), -ESRCH);
	CHECK(stat(rec, &st) < 0 && errno == ENOENT, "a record was written");

	/* ... the served process's pages alone, the mm's own not */
	CHECK_RET(uf_object_serve_record(obj, rec), 0);
	touch_own(m);		/* faults of the mm's own: not this record's */
	CHECK((unsigned char)m[600 * 4096] == ut_pattern(600 * 4096), "own page 600");
	serve_child(obj);
	CHECK((unsigned char)m[601 * 4096] == ut_pattern(601 * 4096), "own page 601");
	CHECK_RET(uf_object_record_stop(obj), (int)NCHILD);
	close_all(mm, obj, m);
	ws_read_file(rec, &f);
	for (i = 0; i < NCHILD; i++)
		CHECK(f.pages[i] == child_pages[i], "serve record page %zu: %lu, want %u", i,
		      (unsigned long)f.pages[i], child_pages[i]);
	free(f.pages);

	/* a set armed for processes served: records wait (-EBUSY) */
	open_cold(&mm, path, &obj, &m);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), 0);
	CHECK_RET(uf_object_record(obj, rec), -EBUSY);
	CHECK_RET(uf_object_serve_record(obj, rec), -EBUSY);
	CHECK_RET(uf_object_serve_prefetch(obj, NULL), 0);
	CHECK_RET(uf_object_serve_record(obj, rec), 0);
	CHECK_RET(uf_object_serve_prefetch(obj, rec), -EBUSY);
	CHECK_RET(uf_object_record_stop(obj), -ESRCH);
	close_all(mm, obj, m);

	unlink(rec);
	unlink(path);
	return UT_PASS;
}
