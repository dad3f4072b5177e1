/* Description: uf_redis_open() and uf_redis_remove() give up at once with
 * -ECONNREFUSED when every seed node refuses the connection (nothing
 * listens on its port): one connect() per seed, not retries for
 * timeout_ms; a seed that accepts but never answers is still retried for
 * timeout_ms and ends in -ETIMEDOUT; ufault-cp to a refused port exits 1
 * saying the connection was refused.  Needs no cluster.
 */
#define _GNU_SOURCE
#include "redis-test.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* connect() calls to each port this test watches, counted on the way to
 * libc's (this definition takes the place of libc's for hiredis). */
#define NWATCH 3
static int watch_port[NWATCH];
static int connects[NWATCH];

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	int i;

	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		int port = ntohs(((const struct sockaddr_in *)sa)->sin_port);

		for (i = 0; i < NWATCH; i++)
			if (watch_port[i] == port)
				__atomic_add_fetch(&connects[i], 1, __ATOMIC_RELAXED);
	}
	return real(fd, sa, len);
}

/* A TCP socket bound to a free loopback port, listening or not. */
static int loopback_socket(bool listening, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0, "socket: %s", strerror(errno));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0, "bind: %s", strerror(errno));
	CHECK(getsockname(fd, (struct sockaddr *)&sin, &len) == 0, "getsockname: %s", strerror(errno));
	if (listening)
		CHECK(listen(fd, 16) == 0, "listen: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return fd;
}

/* ufault-cp FILE redis://127.0.0.1:@port/x: exit 1, "refused" on stderr. */
static void cp_refused(int port)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	char cmd[512], line[512];
	bool said = false;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/ufault-cp -q /proc/self/exe redis://127.0.0.1:%d/x 2>&1", b,
		 port);
	f = popen(cmd, "r");
	CHECK(f, "popen: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stdout);
		said |= strstr(line, "connection refused") != NULL;
	}
	st = pclose(f);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: status %#x, want exit 1", cmd, st);
	CHECK(said, "%s: no \"connection refused\" in its message", cmd);
}

/* A port nothing listens on: bound, then closed. */
static int refused_port(void)
{
	int port, fd = loopback_socket(false, &port);

	close(fd);
	return port;
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj = NULL;
	char url[256];
	int silent, i;

	alarm(60);	/* a hang fails, as SIGALRM, rather than waiting forever */
	for (i = 0; i < 2; i++)
		watch_port[i] = refused_port();
	silent = loopback_socket(true, &watch_port[2]);

	/* one seed, the default timeout_ms (15 s): refused at the first try */
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d/refused", watch_port[0]);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -ECONNREFUSED);
	CHECK(connects[0] == 1, "%d connect() calls to a refused port, want 1", connects[0]);

	/* every seed refuses: each is tried once */
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d,127.0.0.1:%d/refused", watch_port[0],
		 watch_port[1]);
	CHECK_RET(uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj), -ECONNREFUSED);
	CHECK(connects[0] == 2 && connects[1] == 1, "connect() calls: %d and %d, want 2 and 1",
	      connects[0], connects[1]);
	CHECK_RET(uf_redis_remove(url), -ECONNREFUSED);
	CHECK(connects[0] == 3 && connects[1] == 2, "remove: connect() calls: %d and %d, want 3 and 2",
	      connects[0], connects[1]);

	/* a seed that accepts and never answers is retried until timeout_ms,
	 * even beside a refused one */
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d,127.0.0.1:%d/silent?timeout_ms=400",
		 watch_port[0], watch_port[2]);
	CHECK_RET(uf_redis_open(mm, url, O_RDONLY, &obj), -ETIMEDOUT);
	CHECK(connects[2] >= 1, "the silent seed was never tried");
	close(silent);
	cp_refused(watch_port[0]);
	uf_mm_destroy(mm);
	printf("ok: refused seeds fail with -ECONNREFUSED after one connect() each\n");
	return UT_PASS;
}
