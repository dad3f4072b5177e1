/* Description: ufault-cp copies an object served over HTTP into a file,
 * byte for byte (an unaligned size, holes as zeros); a missing object
 * fails (exit 1) saying so, and an http:// DST is refused (exit 2). */
#define _GNU_SOURCE
#include "http-test.h"

#define SIZE	(5 * 1024 * 1024 + 777)

/* Run "ufault-cp -q ARGS", its stderr into @err; its exit status. */
static int cp(const char *src, const char *dst, char *err, size_t errlen)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	char cmd[1024];
	FILE *f;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s/ufault-cp' -q '%s' '%s' 2>&1", b, src, dst);
	f = popen(cmd, "r");
	CHECK(f, "popen: %s", strerror(errno));
	n = fread(err, 1, errlen - 1, f);
	err[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	struct ht_server s;
	unsigned char *want = ht_pattern(SIZE, 7), *got = malloc(SIZE + 1);
	char url[256], path[256], err[4096];
	FILE *f;
	size_t n;
	int st;

	ht_start(&s, NULL);
	alarm(120);
	CHECK(got, "malloc");
	memset(want + 1024 * 1024, 0, 2 * 1024 * 1024);	/* zero pages too */
	ht_put(&s, "snap", want, SIZE, 0);
	ht_url(&s, url, sizeof(url), "snap");
	snprintf(path, sizeof(path), "%s/copy", s.dir);

	st = cp(url, path, err, sizeof(err));
	CHECK(st == 0, "ufault-cp %s %s: exit %d: %s", url, path, st, err);
	f = fopen(path, "r");
	CHECK(f, "%s: %s", path, strerror(errno));
	n = fread(got, 1, SIZE + 1, f);
	fclose(f);
	CHECK(n == SIZE, "the copy has %zu bytes, want %d", n, SIZE);
	CHECK(!memcmp(got, want, SIZE), "the copy's bytes differ");

	ht_url(&s, url, sizeof(url), "missing?X-Signature=secret");
	st = cp(url, path, err, sizeof(err));
	CHECK(st == 1 && strstr(err, "404") && !strstr(err, "secret"),
	      "a missing object: exit %d: %s", st, err);
	st = cp(path, url, err, sizeof(err));
	CHECK(st == 2 && strstr(err, "read-only"), "an http DST: exit %d: %s", st, err);
	free(want);
	free(got);
	printf("ok: ufault-cp from a URL into a file\n");
	return UT_PASS;
}
