// SPDX-License-Identifier: MIT
/* Description: uf_object_attach says why it cannot attach: -ENOENT (no socket), -ECONNREFUSED (nobody listening), -EACCES (the server does not allow our uid: it tells us), -EPROTO (a socket that answers garbage, or closes), -EINVAL (bad arguments) */
#include "attach-test.h"

#include <pthread.h>
#include <sys/stat.h>

/* A listener that answers each connection with @arg (NULL: closes after
 * reading what comes). */
struct fake {
	int lfd;
	const char *answer;
};

static void *fake_server(void *arg)
{
	struct fake *f = arg;
	char buf[64];

	for (;;) {
		int c = accept(f->lfd, NULL, NULL);

		if (c < 0)
			return NULL;
		if (f->answer) {
			if (write(c, f->answer, strlen(f->answer)) < 0) {
			}
		} else if (read(c, buf, sizeof(buf)) < 0) {
		}
		close(c);
	}
}

static int listen_at(const char *path, bool do_listen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0, "socket: %s", strerror(errno));
	snprintf(a.sun_path, sizeof(a.sun_path), "%.*s", (int)sizeof(a.sun_path) - 1, path);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind: %s", strerror(errno));
	CHECK(!do_listen || listen(fd, 8) == 0, "listen: %s", strerror(errno));
	return fd;
}

int main(void)
{
	struct ut_server srv;
	struct uf_mm *mm;
	struct uf_object *obj = NULL;
	char dir[64] = "/tmp/ufault-attach-XXXXXX", path[128], uid[16];
	const char *extra[] = { "--allow-uid", uid, NULL };
	struct fake garbage = { -1, "HTTP/1.0 400 Bad Request\r\n\r\nnot a ufault server at all\n" };
	struct fake closer = { -1, NULL };
	pthread_t t1, t2;
	int fd;

	ut_watchdog(120);
	mm = ut_mm_create(NULL);
	CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));

	/* bad arguments */
	CHECK_RET(uf_object_attach(NULL, "x", O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_object_attach(mm, NULL, O_RDONLY, &obj), -EINVAL);
	CHECK_RET(uf_object_attach(mm, "x", O_WRONLY, &obj), -EINVAL);
	CHECK_RET(uf_object_attach(mm, "x", O_RDONLY | O_CREAT, &obj), -EINVAL);
	CHECK_RET(uf_object_attach(mm, "x", O_RDONLY, NULL), -EINVAL);

	/* no such socket */
	snprintf(path, sizeof(path), "%s/none", dir);
	CHECK_RET(uf_object_attach(mm, path, O_RDONLY, &obj), -ENOENT);

	/* a socket nobody listens on */
	snprintf(path, sizeof(path), "%s/deaf", dir);
	fd = listen_at(path, false);
	CHECK_RET(uf_object_attach(mm, path, O_RDONLY, &obj), -ECONNREFUSED);
	close(fd);
	unlink(path);

	/* a server that answers garbage, one that closes */
	snprintf(path, sizeof(path), "%s/garbage", dir);
	garbage.lfd = listen_at(path, true);
	CHECK(pthread_create(&t1, NULL, fake_server, &garbage) == 0, "pthread_create");
	CHECK_RET(uf_object_attach(mm, path, O_RDWR, &obj), -EPROTO);
	unlink(path);
	snprintf(path, sizeof(path), "%s/closer", dir);
	closer.lfd = listen_at(path, true);
	CHECK(pthread_create(&t2, NULL, fake_server, &closer) == 0, "pthread_create");
	CHECK_RET(uf_object_attach(mm, path, O_RDONLY, &obj), -EPROTO);
	unlink(path);
	shutdown(garbage.lfd, SHUT_RDWR);
	shutdown(closer.lfd, SHUT_RDWR);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	close(garbage.lfd);
	close(closer.lfd);
	rmdir(dir);

	/* a ufault-serve that does not allow our uid says so (root always
	 * is: another user, 65534, is refused where only 65533 is allowed) */
	snprintf(uid, sizeof(uid), "%u", 65533u);
	ut_server_start(&srv, 1 << 20, extra);
	if (geteuid() == 0) {
		pid_t pid;
		int st;

		CHECK(chmod(srv.dir, 0711) == 0, "chmod: %s", strerror(errno));
		pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0) {
			struct uf_mm *umm;

			CHECK(setgid(65534) == 0 && setuid(65534) == 0, "setuid: %s", strerror(errno));
			prctl(PR_SET_DUMPABLE, 1);
			umm = ut_mm_create(NULL);
			CHECK_RET(uf_object_attach(umm, srv.sock, O_RDONLY, &obj), -EACCES);
			_exit(0);
		}
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the client as uid 65534: status %#x", st);
		ut_server_log_wait(&srv, "uid 65534: refused: not allowed");
	}
	ut_server_stop(&srv);
	/* one that does (our own uid by default) attaches */
	ut_server_start(&srv, 1 << 20, NULL);
	CHECK_RET(uf_object_attach(mm, srv.sock, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_size(obj), 1 << 20);
	uf_object_put(obj);
	uf_mm_destroy(mm);
	return UT_PASS;
}
