// SPDX-License-Identifier: MIT
/* Description: a Firecracker-style client with 64 regions of 64 GiB and one page removed in each survives a restart of ufault-serve: the handover costs the pages removed, not the regions' size, the next server takes the client over, and it reads SOURCE's bytes where it did not remove and zeros where it did */
#include "serve-test.h"

#define NREG	64
#define REGION	(64UL << 30)

static char src[64] = "/dev/shm/ufault-large-XXXXXX";

static void drop_src(void)
{
	unlink(src);
}

int main(void)
{
	char json[NREG * 128], *base[NREG];
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE };
	size_t o = 0;
	struct ut_server srv;
	unsigned int i;
	int fd, uffd, sock;

	ut_watchdog(300);
	ut_catch_signals();
	/* SOURCE: 64 GiB, sparse, the pattern in its first MiB */
	fd = mkstemp(src);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	atexit(drop_src);
	{
		static unsigned char buf[1 << 20];
		size_t k;

		for (k = 0; k < sizeof(buf); k++)
			buf[k] = ut_pattern(k);
		CHECK(pwrite(fd, buf, sizeof(buf), 0) == sizeof(buf), "pwrite");
		CHECK(ftruncate(fd, (off_t)REGION) == 0, "ftruncate: %s", strerror(errno));
		close(fd);
	}
	ut_server_source = src;
	ut_server_start(&srv, 4096, NULL);

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
		printf("skip: no userfaultfd\n");
		return UT_SKIP;
	}
	o += (size_t)snprintf(json + o, sizeof(json) - o, "[");
	for (i = 0; i < NREG; i++) {
		struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };

		base[i] = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base[i] == MAP_FAILED && errno == ENOMEM) {
			/* (ThreadSanitizer's shadow leaves no 4 TiB to map) */
			printf("skip: no room for %u x 64 GiB of address space here\n", NREG);
			return UT_SKIP;
		}
		CHECK(base[i] != MAP_FAILED, "mmap: %s", strerror(errno));
		reg.range.start = (unsigned long)base[i];
		reg.range.len = REGION;
		CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0, "register: %s", strerror(errno));
		o += (size_t)snprintf(json + o, sizeof(json) - o,
				      "%s{\"base_host_virt_addr\":%lu,\"size\":%lu,\"offset\":0,"
				      "\"page_size\":4096}", i ? "," : "",
				      (unsigned long)base[i], REGION);
	}
	snprintf(json + o, sizeof(json) - o, "]");
	sock = ut_send_handshake(srv.sock, json, strlen(json), uffd);
	/* a page read, and one removed (the balloon), in each region */
	for (i = 0; i < NREG; i++) {
		CHECK((unsigned char)base[i][4096 + i] == ut_pattern(4096 + i), "region %u", i);
		CHECK(madvise(base[i] + 8192, 4096, MADV_DONTNEED) == 0, "madvise");
	}
	while (ut_super_status(&srv, "removed ") < NREG)
		;

	/* the server killed, the next one takes the client over */
	ut_server_stop(&srv);
	ut_server_restart(&srv, NULL);
	ut_server_log_wait(&srv, "taken over, 64 regions");
	for (i = 0; i < NREG; i++) {
		struct ut_fault f;
		unsigned char v;

		CHECK(!ut_read(base[i] + 12288 + i, &v, &f) && v == ut_pattern(12288 + i),
		      "region %u after the restart: signal %d, byte %u", i, f.sig, v);
		CHECK(!ut_read(base[i] + 8192, &v, &f) && v == 0,
		      "region %u removed page: signal %d, byte %u", i, f.sig, v);
	}
	close(sock);
	printf("pass: 64 regions of 64 GiB taken over, removals kept\n");
	return 0;
}
