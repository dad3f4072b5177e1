// SPDX-License-Identifier: MIT
/*
 * bench-http.c - the nginx of ufault-bench's serve-restore-http row (see
 * bench-http.h): one process (master_process off) in the foreground, on
 * a free 127.0.0.1 port, with its config, pid file and logs in the
 * directory it serves, stopped by its pid.
 */
#define _GNU_SOURCE
#include "bench-http.h"
#include <ufault-http.h>
#include <ufault-pack.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t nginx_pid;

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool accepts(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

static int write_conf(const char *dir, int port, char *conf, size_t clen)
{
	FILE *f;

	snprintf(conf, clen, "%s/nginx.conf", dir);
	f = fopen(conf, "we");
	if (!f)
		return -errno;
	fprintf(f, "daemon off;\nmaster_process off;\nworker_processes 1;\n"
		"pid %1$s/nginx.pid;\nerror_log %1$s/error.log;\n"
		"events { worker_connections 256; }\n"
		"http {\n  access_log off;\n  client_body_temp_path %1$s/body;\n"
		"  server { listen 127.0.0.1:%2$d; root %1$s; }\n}\n", dir, port);
	return fclose(f) ? -errno : 0;
}

int bench_http_start(const char *dir, char *base, size_t blen, char *why, size_t wlen)
{
	char conf[512], elog[512];
	int port = free_port(), ret;

	if (system("command -v nginx >/dev/null 2>&1") != 0 && access("/usr/sbin/nginx", X_OK)) {
		snprintf(why, wlen, "no nginx (apt-get install nginx-light)");
		return -ENOENT;
	}
	if (port < 0 || (ret = write_conf(dir, port, conf, sizeof(conf)))) {
		snprintf(why, wlen, "no port or config: %s", strerror(port < 0 ? errno : -ret));
		return -EIO;
	}
	snprintf(elog, sizeof(elog), "%s/error.log", dir);
	setenv("no_proxy", "127.0.0.1", 1);	/* (libcurl follows http_proxy) */
	nginx_pid = fork();
	if (nginx_pid < 0)
		return -errno;
	if (nginx_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("nginx", "nginx", "-p", dir, "-c", conf, "-e", elog, (char *)NULL);
		/* (Debian's is in /usr/sbin, which a user's PATH may lack) */
		execl("/usr/sbin/nginx", "nginx", "-p", dir, "-c", conf, "-e", elog, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct timespec ms10 = { 0, 10 * 1000 * 1000 };

		if (accepts(port)) {
			snprintf(base, blen, "http://127.0.0.1:%d", port);
			return 0;
		}
		if (waitpid(nginx_pid, NULL, WNOHANG) == nginx_pid)
			break;
		nanosleep(&ms10, NULL);
	}
	bench_http_stop();
	snprintf(why, wlen, "nginx did not start (see %s)", elog);
	return -EIO;
}

void bench_http_stop(void)
{
	if (nginx_pid > 0) {
		kill(nginx_pid, SIGKILL);
		waitpid(nginx_pid, NULL, 0);
		nginx_pid = 0;
	}
}

int bench_http_open(struct uf_mm *mm, const char *url, struct uf_object **objp)
{
	return uf_http_open(mm, url, NULL, objp);
}

int bench_http_open_packed(struct uf_mm *mm, const char *url, struct uf_object **objp)
{
	const struct uf_store_ops *ops;
	uint64_t size;
	void *store;
	int ret = uf_http_store_open(url, NULL, &ops, &store, &size);

	if (ret)
		return ret;
	ret = uf_pack_create_readv(mm, ops, uf_http_store_readv, store, size, objp);
	if (ret)
		ops->release(store);
	return ret;
}
