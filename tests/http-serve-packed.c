/* Description: ufault-serve with an http:// SOURCE that holds a packed
 * snapshot (ufault-pack's output, served by nginx): recognised by its
 * magic number and served as the original bytes to a Firecracker-style
 * client, every page right, half of them zero pages. */
#define _GNU_SOURCE
#include "http-test.h"
#include "serve-test.h"

#define SIZE	(12UL << 20)

int main(void)
{
	const size_t len[2] = { 4 << 20, 1 << 20 };
	const uint64_t off[2] = { 1 << 20, 8 << 20 };
	const char *b = getenv("B") ? getenv("B") : "build";
	unsigned char *buf;
	struct ut_server srv;
	struct ht_server hs;
	struct ut_fc fc;
	char url[256], cmd[1024], plain[300];
	size_t i;

	snprintf(cmd, sizeof(cmd), "%s/ufault-pack", b);
	if (access(cmd, X_OK)) {
		printf("skip: no %s (built without libzstd)\n", cmd);
		return UT_SKIP;
	}
	ht_start(&hs, NULL);
	ut_watchdog(120);
	buf = ht_pattern(SIZE, 0);
	for (i = 0; i < SIZE; i += 8192)	/* every other page zeros */
		memset(buf + i + 4096, 0, 4096);
	ht_put(&hs, "plain", buf, SIZE, 0);
	snprintf(plain, sizeof(plain), "%s/plain", hs.root);
	snprintf(cmd, sizeof(cmd), "'%s/ufault-pack' -q '%s' '%s/mem.pack'", b, plain, hs.root);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	ht_url(&hs, url, sizeof(url), "mem.pack");

	ut_server_source = url;
	ut_server_start(&srv, 4096, NULL);
	ut_server_log_wait(&srv, "a packed snapshot");
	ut_fc_map(&fc, 2, len, off);
	UT_SERVE_SKIP_NO_UFFD(&fc);
	ut_fc_handshake(&fc, srv.sock);
	for (i = 0; i < len[0]; i += 4096)
		CHECK(!memcmp(fc.base[0] + i, buf + off[0] + i, 4096), "region 0 +%zu", i);
	for (i = 0; i < len[1]; i += 4096)
		CHECK(!memcmp(fc.base[1] + i, buf + off[1] + i, 4096), "region 1 +%zu", i);
	ut_server_log_wait(&srv, "served, 2 regions");
	free(buf);
	printf("ok: a packed snapshot behind a URL served as the original bytes\n");
	return UT_PASS;
}
