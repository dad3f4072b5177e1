/* Description: each error of uf_object_record(), uf_object_record_stop()
 * and uf_object_prefetch(): -EINVAL for NULL or empty arguments, no
 * record running, and a file that is not a working set (garbage, empty,
 * a directory, another format version, truncated, a damaged byte);
 * -ENOENT for no file (and for a record into a missing directory);
 * -ESTALE for a record of another version of the object (the file's
 * mtime or size changed; another object's record; a store without file
 * metadata, whose size names its version); -EBUSY for a record while one
 * runs and a prefetch during a record.  A failed call changes nothing
 * (no page cached, no file left, the next call works) and nothing is
 * printed.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <sys/mman.h>

#define SIZE	(1UL << 20)
#define PG	UF_PAGE_SIZE

struct ctx {
	struct uf_mm *mm;
	char path[256], rec[300], bad[300], dir[300];
	unsigned char *good;		/* a valid record's bytes */
	size_t good_len;
};

static ssize_t mem_read(void *store, void *buf, size_t len, uint64_t off)
{
	(void)store;
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = ut_pattern(off + i);
	return (ssize_t)len;
}

static const struct uf_store_ops pattern_ops = { .read = mem_read };

static void write_file(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, p, len) == (ssize_t)len, "write %s", path);
	close(fd);
}

/* A bad file at c->bad: prefetch says -EINVAL, caches nothing. */
static void bad_file(struct ctx *c, struct uf_object *obj, const void *p, size_t len,
		     const char *what)
{
	write_file(c->bad, p, len);
	CHECK(uf_object_prefetch(obj, c->bad) == -EINVAL, "%s: not -EINVAL", what);
	CHECK(ws_cache_pages(c->mm) == 0, "%s: pages cached", what);
}

static void record_some(struct ctx *c, struct uf_object *obj)
{
	unsigned char *map;
	volatile unsigned char sink;

	CHECK_RET(uf_mmap(c->mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, c->rec), 0);
	sink = map[3 * PG];
	sink = map[4 * PG];
	sink = map[100 * PG];
	(void)sink;
	CHECK_RET(uf_object_record_stop(obj), 3);
	CHECK_RET(uf_munmap(c->mm, map, SIZE), 0);
}

static void errors(struct ctx *c)
{
	struct uf_object *obj, *obj2, *small;
	struct timespec times[2] = { { 0, UTIME_OMIT }, { 12345, 0 } };
	unsigned char *b;
	struct stat st;
	int fd;

	fd = ut_make_file("/var/tmp", SIZE, c->path, sizeof(c->path));
	close(fd);
	snprintf(c->rec, sizeof(c->rec), "%s.ws", c->path);
	snprintf(c->bad, sizeof(c->bad), "%s.bad", c->path);
	snprintf(c->dir, sizeof(c->dir), "%s.nodir/ws", c->path);

	/* the first object: its record */
	CHECK_RET(uf_object_open(c->mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_record(NULL, c->rec), -EINVAL);
	CHECK_RET(uf_object_record(obj, NULL), -EINVAL);
	CHECK_RET(uf_object_record(obj, ""), -EINVAL);
	CHECK_RET(uf_object_record(obj, c->dir), -ENOENT);
	CHECK_RET(uf_object_record_stop(NULL), -EINVAL);
	CHECK_RET(uf_object_record_stop(obj), -EINVAL);
	CHECK(access(c->rec, F_OK) != 0, "a failed call left a file");
	record_some(c, obj);
	uf_object_put(obj);
	CHECK(stat(c->rec, &st) == 0, "no record");
	c->good_len = (size_t)st.st_size;
	c->good = malloc(c->good_len);
	fd = open(c->rec, O_RDONLY);
	CHECK(read(fd, c->good, c->good_len) == (ssize_t)c->good_len, "read");
	close(fd);

	/* a fresh object of the same file */
	CHECK_RET(uf_object_open(c->mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_prefetch(NULL, c->rec), -EINVAL);
	CHECK_RET(uf_object_prefetch(obj, NULL), -EINVAL);
	CHECK_RET(uf_object_prefetch(obj, c->bad), -ENOENT);
	b = calloc(1, 64);
	memcpy(b, "hello, this is not a working set, not at all", 44);
	bad_file(c, obj, b, 64, "garbage");
	free(b);
	bad_file(c, obj, "", 0, "empty");
	b = malloc(c->good_len);
	memcpy(b, c->good, c->good_len);
	b[4] = 2;
	bad_file(c, obj, b, c->good_len, "format version 2");
	memcpy(b, c->good, c->good_len);
	bad_file(c, obj, b, c->good_len - 1, "truncated by a byte");
	bad_file(c, obj, b, 40, "truncated header");
	b[c->good_len - 1] ^= 0x01;
	bad_file(c, obj, b, c->good_len, "a damaged byte");
	memcpy(b, c->good, c->good_len);
	b[32] = 4;			/* pages in the header */
	bad_file(c, obj, b, c->good_len, "wrong page count");
	free(b);
	unlink(c->bad);
	CHECK(mkdir(c->bad, 0755) == 0, "mkdir");
	CHECK_RET(uf_object_prefetch(obj, c->bad), -EINVAL);
	rmdir(c->bad);

	/* -EBUSY: a prefetch during a record; then the record still works */
	CHECK_RET(uf_object_record(obj, c->bad), 0);
	CHECK_RET(uf_object_record(obj, c->bad), -EBUSY);
	CHECK_RET(uf_object_prefetch(obj, c->rec), -EBUSY);
	CHECK_RET(uf_object_record_stop(obj), 0);
	unlink(c->bad);
	CHECK(ws_cache_pages(c->mm) == 0, "a refused prefetch cached pages");

	/* the good record works; a second object of another size: -ESTALE */
	CHECK_RET(uf_object_prefetch(obj, c->rec), 0);
	ws_wait_prefetch(obj, c->bad);
	CHECK(ws_cache_pages(c->mm) == 3, "%lu pages", (unsigned long)ws_cache_pages(c->mm));
	uf_object_put(obj);
	fd = ut_make_file("/var/tmp", SIZE / 2, c->bad, sizeof(c->bad));
	close(fd);
	CHECK_RET(uf_object_open(c->mm, c->bad, O_RDONLY, &obj2), 0);
	CHECK_RET(uf_object_prefetch(obj2, c->rec), -ESTALE);
	uf_object_put(obj2);
	unlink(c->bad);

	/* the file changed since the record: mtime, then size */
	CHECK(utimensat(AT_FDCWD, c->path, times, 0) == 0, "utimensat");
	CHECK_RET(uf_object_open(c->mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_prefetch(obj, c->rec), -ESTALE);
	CHECK(ws_cache_pages(c->mm) == 0, "a stale prefetch cached pages");
	uf_object_put(obj);
	CHECK(truncate(c->path, SIZE + PG) == 0, "truncate");
	CHECK_RET(uf_object_open(c->mm, c->path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_prefetch(obj, c->rec), -ESTALE);
	uf_object_put(obj);

	/* a store with no file: its size is its version */
	CHECK_RET(uf_object_create(c->mm, &pattern_ops, NULL, SIZE, &obj), 0);
	record_some(c, obj);
	uf_object_put(obj);
	CHECK_RET(uf_object_create(c->mm, &pattern_ops, NULL, SIZE, &obj), 0);
	CHECK_RET(uf_object_create(c->mm, &pattern_ops, NULL, SIZE - PG, &small), 0);
	CHECK_RET(uf_object_prefetch(small, c->rec), -ESTALE);
	CHECK_RET(uf_object_prefetch(obj, c->rec), 0);
	ws_wait_prefetch(obj, c->bad);
	CHECK(ws_cache_pages(c->mm) == 3, "%lu pages", (unsigned long)ws_cache_pages(c->mm));
	uf_object_put(small);
	uf_object_put(obj);
	free(c->good);
	unlink(c->rec);
	unlink(c->path);
}

int main(void)
{
	struct ctx c = { 0 };
	char out[] = "/tmp/ws-errors-out-XXXXXX";
	int fd, save1, save2;
	struct stat st;

	c.mm = ut_mm_create(NULL);
	/* nothing prints: stdout and stderr go to a file that must stay
	 * empty (a failed CHECK prints there: the file is left behind) */
	fd = mkstemp(out);
	CHECK(fd >= 0, "mkstemp");
	fflush(stdout);
	save1 = dup(1);
	save2 = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	errors(&c);
	fflush(stdout);
	dup2(save1, 1);
	dup2(save2, 2);
	CHECK(fstat(fd, &st) == 0 && st.st_size == 0, "the library printed %ld bytes",
	      (long)st.st_size);
	close(fd);
	unlink(out);
	uf_mm_destroy(c.mm);
	return 0;
}
