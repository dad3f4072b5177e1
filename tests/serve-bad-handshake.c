// SPDX-License-Identifier: MIT
/* Description: bad Firecracker handshakes (not JSON, missing fields, unaligned, overlapping, past SOURCE's end, no fd, not a userfaultfd, 65 regions, a megabyte of garbage, a 1 GiB page size) get a log line and are refused (failed closed when a userfaultfd came), and ufault-serve still serves a good client, old handshake format included */
#include "serve-test.h"

static int base_fds;	/* the server's sockets and uffds with no client */

/* A userfaultfd of its own for each refused handshake: a refused VMM's
 * stays with the server and its supervisor, failed closed, while this
 * process lives (see serve-refused-sigbus). */
static int spare_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	CHECK(fd >= 0 && ioctl(fd, UFFDIO_API, &api) == 0, "userfaultfd: %s", strerror(errno));
	return fd;
}

/* Send @msg (with @fd), check the server's log; it never writes to the
 * client (a userfaultfd sent stays with the server, failed closed, till
 * the connection closes: see serve-refused-sigbus). */
static void bad(struct ut_server *srv, const char *msg, int fd, const char *logged)
{
	char c;
	int s = ut_send_handshake(srv->sock, msg, strlen(msg), fd);

	ut_server_log_wait(srv, logged);
	CHECK(recv(s, &c, 1, MSG_DONTWAIT) <= 0, "the server wrote to a client: %s", msg);
	close(s);
	/* let go of by the server */
	while (ut_server_fds(srv) != base_fds)
		usleep(2000);
}

int main(void)
{
	const size_t len[2] = { 64 << 10, 64 << 10 };
	const uint64_t off[2] = { 0, 1 << 20 };
	struct ut_server srv;
	struct ut_fc fc;
	unsigned long a;
	char msg[16384], *big;
	int i, s, pfd[2];
	size_t o;

	ut_watchdog(90);
	ut_server_start(&srv, 2 << 20, NULL);
	ut_server_log_wait(&srv, "closed before the handshake");	/* (ut_server_start's) */
	base_fds = ut_server_fds(&srv);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	a = (unsigned long)fc.base[0];

	bad(&srv, "hello, server", spare_uffd(), "not a JSON array");
	snprintf(msg, sizeof(msg), "[{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":0}]", a);
	bad(&srv, msg, spare_uffd(), "without base_host_virt_addr, size, offset or page_size");
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":65000,\"offset\":0,\"page_size\":4096}]", a);
	bad(&srv, msg, spare_uffd(), "not page-aligned");
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":0,\"page_size\":4096},"
		 "{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":0,\"page_size\":4096}]",
		 a, a + 4096);
	bad(&srv, msg, spare_uffd(), "overlapping regions");
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":2035712,\"page_size\":4096}]",
		 a);
	bad(&srv, msg, spare_uffd(), "past SOURCE's end");
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":0,\"page_size\":4096}]", a);
	bad(&srv, msg, -1, "no file descriptor");
	CHECK(pipe(pfd) == 0, "pipe");
	bad(&srv, msg, pfd[0], "not a userfaultfd");
	snprintf(msg, sizeof(msg),
		 "[{\"base_host_virt_addr\":%lu,\"size\":65536,\"offset\":0,\"page_size\":1073741824}]", a);
	bad(&srv, msg, spare_uffd(), "page size 1073741824 not served");
	o = (size_t)snprintf(msg, sizeof(msg), "[");
	for (i = 0; i < 65; i++)
		o += (size_t)snprintf(msg + o, sizeof(msg) - o,
				      "%s{\"base_host_virt_addr\":%lu,\"size\":4096,\"offset\":0,"
				      "\"page_size\":4096}", i ? "," : "", a + (unsigned long)i * 8192);
	snprintf(msg + o, sizeof(msg) - o, "]");
	bad(&srv, msg, spare_uffd(), "more than 64 regions");
	/* a megabyte of garbage, as fast as it goes: the server closes early */
	big = malloc(1 << 20);
	CHECK(big, "malloc");
	memset(big, '[', 1 << 20);
	s = ut_connect(srv.sock);
	CHECK(s >= 0, "connect");
	for (o = 0; o < (1 << 20);) {
		ssize_t n = send(s, big + o, (1 << 20) - o, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		o += (size_t)n;
	}
	close(s);
	free(big);
	ut_server_log_wait(&srv, "not a JSON array");
	/* a connection that sends nothing and goes */
	close(ut_connect(srv.sock));

	/* a good client, in the old format (page_size_kib, holding bytes) */
	o = (size_t)snprintf(msg, sizeof(msg), "[");
	for (i = 0; i < 2; i++)
		o += (size_t)snprintf(msg + o, sizeof(msg) - o,
				      "%s { \"base_host_virt_addr\" : %lu, \"size\": %zu, \"offset\": %lu,"
				      " \"page_size_kib\": 4096 }", i ? "," : "",
				      (unsigned long)fc.base[i], len[i], (unsigned long)off[i]);
	snprintf(msg + o, sizeof(msg) - o, " ]\n");
	fc.sock = ut_send_handshake(srv.sock, msg, strlen(msg), fc.uffd);
	ut_fc_check(&fc, 0, 1);
	ut_fc_check(&fc, 1, 1);
	ut_server_log_wait(&srv, "served, 2 regions");
	return UT_PASS;
}
