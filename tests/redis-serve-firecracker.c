/* Description: ufault-serve with a redis:// SOURCE: a Firecracker-style
 * client (anonymous regions, its own userfaultfd, the JSON handshake)
 * reads the Redis object's bytes at each region's offset, in random
 * pages and then in order, and a balloon'd range reads zeros. */
#define _GNU_SOURCE
#include "redis-test.h"
#include "serve-test.h"

#define SIZE	(12UL << 20)

int main(void)
{
	const size_t len[2] = { 4 << 20, 1 << 20 };
	const uint64_t off[2] = { 1 << 20, 8 << 20 };
	unsigned char *buf = malloc(SIZE);
	struct uf_object *obj;
	struct ut_server srv;
	struct rt_cluster c;
	struct uf_mm *mm;
	struct ut_fc fc;
	char url[512];
	size_t i, p;

	ut_watchdog(120);
	rt_cluster(&c, "serve");
	rt_url(&c, url, sizeof(url), "mem", "");
	CHECK(buf, "malloc");
	for (i = 0; i < SIZE; i++)
		buf[i] = ut_pattern(i);
	mm = ut_mm_create(NULL);
	CHECK_RET(uf_redis_open(mm, url, O_RDWR | O_CREAT, &obj), 0);
	CHECK_RET(uf_object_pwrite(obj, buf, SIZE, 0), (long)SIZE);
	CHECK_RET(uf_object_sync(obj), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	ut_server_source = url;
	ut_server_start(&srv, 4096, NULL);
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);

	for (p = 0; p < 64; p++) {
		size_t pg = (p * 2654435761u) % (len[0] / 4096);
		uint64_t so = off[0] + pg * 4096 + 100;

		CHECK((unsigned char)fc.base[0][pg * 4096 + 100] == ut_pattern(so),
		      "random page %zu", pg);
	}
	/* the balloon takes the first 64 KiB of region 1 back */
	CHECK(madvise(fc.base[1], 65536, MADV_DONTNEED) == 0, "madvise: %s", strerror(errno));
	for (i = 0; i < 65536; i += 4096)
		CHECK(fc.base[1][i] == 0 && fc.base[1][i + 4095] == 0, "balloon'd +%zu not zero", i);
	ut_fc_check(&fc, 0, 1);
	for (i = 65536; i < len[1]; i += 4096)
		CHECK((unsigned char)fc.base[1][i] == ut_pattern(off[1] + i), "region 1 +%zu", i);
	ut_server_log_wait(&srv, "served, 2 regions");
	uf_redis_remove(url);
	free(buf);
	return UT_PASS;
}
