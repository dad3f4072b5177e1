/* Description: an object served by nginx is read-only: uf_object_pwrite(),
 * _truncate(), _punch_hole() and uf_object_sync() fail with -EROFS; a
 * shared writable mapping is refused (-EACCES, at uf_mmap() and at
 * uf_mprotect()); bytes written through a private mapping, or through a
 * shared one the program made writable with mprotect(2), stay in that
 * mapping: a pread, another mapping and the file nginx serves keep the
 * served bytes, and no request other than GET reached nginx. */
#define _GNU_SOURCE
#include "http-test.h"

#define SIZE	(4 * UF_PAGE_SIZE)

/* The file nginx serves, byte for byte @want? */
static void check_served(const struct ht_server *s, const unsigned char *want)
{
	char path[256];
	unsigned char buf[SIZE];
	int fd;

	snprintf(path, sizeof(path), "%s/obj", s->root);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	CHECK(read(fd, buf, SIZE) == SIZE, "read %s", path);
	close(fd);
	CHECK(!memcmp(buf, want, SIZE), "the served file changed");
}

int main(void)
{
	struct ht_server s;
	struct uf_mm *mm;
	struct uf_object *obj;
	unsigned char *want, got[SIZE];
	volatile unsigned char *p, *priv, *other;
	void *q;
	char url[256];
	int ret;

	ht_start(&s, NULL);
	alarm(120);
	ut_catch_signals();
	want = ht_pattern(SIZE, 1);
	ht_put(&s, "obj", want, SIZE, 0);
	ht_url(&s, url, sizeof(url), "obj");

	mm = ut_mm_create(NULL);
	ret = uf_http_open(mm, url, NULL, &obj);
	CHECK(ret == 0, "uf_http_open %s: %s", url, strerror(-ret));

	/* the API: every write, and a sync, is -EROFS */
	CHECK_RET(uf_object_pwrite(obj, "x", 1, 0), -EROFS);
	CHECK_RET(uf_object_truncate(obj, 0), -EROFS);
	CHECK_RET(uf_object_truncate(obj, 2 * SIZE), -EROFS);
	CHECK_RET(uf_object_punch_hole(obj, 0, UF_PAGE_SIZE), -EROFS);
	CHECK_RET(uf_object_sync(obj), -EROFS);

	/* a shared writable mapping: refused at map and at uf_mprotect() */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_SHARED, obj, 0, &q), -EACCES);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &q), 0);
	p = q;
	CHECK_RET(uf_mprotect(mm, q, SIZE, PROT_READ | PROT_WRITE), -EACCES);
	CHECK(p[0] == want[0], "shared mapping byte 0: %#x, want %#x", p[0], want[0]);

	/* a private mapping may be written: copy-on-write, in it alone */
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ | PROT_WRITE, UF_MAP_PRIVATE, obj, 0, &q), 0);
	priv = q;
	priv[1] = (unsigned char)~want[1];
	CHECK(priv[1] == (unsigned char)~want[1], "private write not seen in its mapping");

	/* the system's mprotect(2) on the shared mapping: what is written
	 * stays there (the cache is mapped MAP_PRIVATE) */
	if (mprotect((void *)p, SIZE, PROT_READ | PROT_WRITE) == 0) {
		p[UF_PAGE_SIZE + 2] = (unsigned char)~want[UF_PAGE_SIZE + 2];
		CHECK_RET(uf_msync(mm, (void *)p, SIZE, UF_MS_SYNC), 0);	/* nothing dirty */
	} else {
		CHECK(errno == EACCES, "mprotect: %s", strerror(errno));
	}
	CHECK_RET(uf_object_sync(obj), -EROFS);

	/* what everyone else reads: the served bytes */
	CHECK_RET(uf_object_pread(obj, got, SIZE, 0), SIZE);
	CHECK(!memcmp(got, want, SIZE), "uf_object_pread: the bytes changed");
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, &q), 0);
	other = q;
	for (size_t i = 0; i < SIZE; i++)
		CHECK(other[i] == want[i], "another mapping, byte %zu: %#x, want %#x", i,
		      other[i], want[i]);
	CHECK_RET(uf_munmap(mm, (void *)other, SIZE), 0);
	CHECK_RET(uf_munmap(mm, (void *)priv, SIZE), 0);
	CHECK_RET(uf_munmap(mm, (void *)p, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);

	/* and what reached the server: GETs only; its file is unchanged */
	check_served(&s, want);
	CHECK(ht_not_gets(&s) == 0, "%ld requests other than GET reached nginx", ht_not_gets(&s));
	free(want);
	printf("ok: writes and sync -EROFS, shared writable maps -EACCES, private and "
	       "mprotect(2)-ed writes stay in their mapping\n");
	return UT_PASS;
}
