/* Description: what uf_http_open() refuses, with the documented error: a
 * missing object (404) -ENOENT, a forbidden one (403) and a missing or
 * wrong bearer token (401) -EACCES, a URL that is not http(s) -EINVAL, a
 * port where nothing listens -ECONNREFUSED after the deadline (its retries
 * counted); a bearer token and extra headers reach the server. */
#define _GNU_SOURCE
#include "http-test.h"

static const char extra[] =
	"location /auth/ { if ($http_authorization != \"Bearer sesame\") { return 401; } }\n"
	"    location /key/ { if ($http_x_key != \"k1\") { return 403; } }";

static int open_url(struct uf_mm *mm, const char *url, const struct uf_http_opts *o)
{
	struct uf_object *obj = NULL;
	int ret = uf_http_open(mm, url, o, &obj);

	if (!ret) {
		CHECK(uf_object_size(obj) == 3 * UF_PAGE_SIZE, "%s: size %llu", url,
		      (unsigned long long)uf_object_size(obj));
		uf_object_put(obj);
	}
	return ret;
}

int main(void)
{
	const char *key_ok[] = { "X-Key: k1", NULL }, *key_bad[] = { "X-Key: k2", NULL };
	const char *bad_hdr[] = { "no colon here", NULL };
	struct uf_http_opts o = { 0 };
	struct ht_server s;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *data = ht_pattern(3 * UF_PAGE_SIZE, 1);
	char url[256];
	int port;

	ht_start(&s, extra);
	alarm(120);
	unsetenv("UFAULT_HTTP_BEARER");
	unsetenv("UFAULT_HTTP_DEADLINE_MS");
	mm = ut_mm_create(NULL);
	ht_put(&s, "obj", data, 3 * UF_PAGE_SIZE, 0);
	ht_put(&s, "forbidden/obj", data, 3 * UF_PAGE_SIZE, 0);
	ht_put(&s, "auth/obj", data, 3 * UF_PAGE_SIZE, 0);
	ht_put(&s, "key/obj", data, 3 * UF_PAGE_SIZE, 0);

	ht_url(&s, url, sizeof(url), "obj");
	CHECK_RET(open_url(mm, url, NULL), 0);
	ht_url(&s, url, sizeof(url), "missing");
	CHECK_RET(open_url(mm, url, NULL), -ENOENT);
	ht_url(&s, url, sizeof(url), "forbidden/obj");
	CHECK_RET(open_url(mm, url, NULL), -EACCES);

	/* a bearer token: as an option, or from the environment */
	ht_url(&s, url, sizeof(url), "auth/obj");
	CHECK_RET(open_url(mm, url, NULL), -EACCES);
	o.bearer = "wrong";
	CHECK_RET(open_url(mm, url, &o), -EACCES);
	o.bearer = "sesame";
	CHECK_RET(open_url(mm, url, &o), 0);
	setenv("UFAULT_HTTP_BEARER", "sesame", 1);
	CHECK_RET(open_url(mm, url, NULL), 0);
	unsetenv("UFAULT_HTTP_BEARER");
	o.bearer = "bad\r\ntoken";
	CHECK_RET(open_url(mm, url, &o), -EINVAL);
	o.bearer = NULL;

	/* headers of the caller's */
	ht_url(&s, url, sizeof(url), "key/obj");
	o.headers = key_bad;
	CHECK_RET(open_url(mm, url, &o), -EACCES);
	o.headers = key_ok;
	CHECK_RET(open_url(mm, url, &o), 0);
	o.headers = bad_hdr;
	CHECK_RET(open_url(mm, url, &o), -EINVAL);
	o.headers = NULL;

	/* not an http(s) URL, bad arguments */
	CHECK_RET(open_url(mm, "ftp://127.0.0.1/obj", NULL), -EINVAL);
	CHECK_RET(open_url(mm, "redis://127.0.0.1:1/obj", NULL), -EINVAL);
	snprintf(url, sizeof(url), "%s/a b", s.base);
	CHECK_RET(open_url(mm, url, NULL), -EINVAL);
	CHECK_RET(uf_http_open(NULL, s.base, NULL, &obj), -EINVAL);
	CHECK_RET(uf_http_open(mm, NULL, NULL, &obj), -EINVAL);
	CHECK_RET(uf_http_open(mm, s.base, NULL, NULL), -EINVAL);
	o.connections = 65;
	CHECK_RET(open_url(mm, s.base, &o), -EINVAL);
	o.connections = 0;

	/* nothing listens: refused once the deadline has passed */
	port = ht_free_port();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj", port);
	o.deadline_ms = 500;
	CHECK_RET(open_url(mm, url, &o), -ECONNREFUSED);
	{
		const struct uf_store_ops *ops;
		struct uf_http_stats hs;
		uint64_t size;
		void *store;

		CHECK_RET(uf_http_store_open(url, &o, &ops, &store, &size), -ECONNREFUSED);
		CHECK_RET(uf_http_stats(NULL, &hs), -EINVAL);
	}
	uf_mm_destroy(mm);
	free(data);
	printf("ok: 404 -ENOENT, 403/401 -EACCES, bad URL -EINVAL, refused -ECONNREFUSED\n");
	return UT_PASS;
}
