/* Description: a store that sets ->readv in struct uf_store_ops (with
 * ->size) gets a prefetch's reads batched through it, counted, and no
 * page through ->read; a store with only the six first members (->size
 * 0) still works, through ->read; ->readv without ->size, a ->size too
 * small and a larger ->size with a nonzero member past the known ones are
 * refused; a program built against the first struct (UFAULT_0.1's
 * uf_object_create, the struct ending right before an unreadable page)
 * still gets an object that reads.
 */
#define _GNU_SOURCE
#include "ws-test.h"

#include <stddef.h>
#include <sys/mman.h>

#define SIZE	(8UL << 20)
#define PG	UF_PAGE_SIZE
#define NSET	256		/* every other page from page 2, shuffled */
#define SETPG(i)	(2 + 2 * (((i) * 97) % NSET))

struct store {
	uint64_t readv_calls, readv_pages, read_pages;	/* atomic */
};

static ssize_t st_read(void *s, void *buf, size_t len, uint64_t off)
{
	struct store *st = s;

	ut_fill_pattern(buf, len, off);
	__atomic_add_fetch(&st->read_pages, (len + PG - 1) / PG, __ATOMIC_RELAXED);
	return (ssize_t)len;
}

static int st_readv(void *s, const struct uf_store_iov *iov, size_t n)
{
	struct store *st = s;
	size_t i;

	__atomic_add_fetch(&st->readv_calls, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		ut_fill_pattern(iov[i].buf, iov[i].len, iov[i].off);
		__atomic_add_fetch(&st->readv_pages, (iov[i].len + PG - 1) / PG, __ATOMIC_RELAXED);
	}
	return 0;
}

/* the old way: the six first members, ->size 0 */
static const struct uf_store_ops old_ops = { .read = st_read };
static const struct uf_store_ops new_ops = {
	.size = sizeof(struct uf_store_ops),
	.read = st_read,
	.readv = st_readv,
};

/* UFAULT_0.1's uf_object_create, as a program linked against it calls it */
int uf_object_create_0_1(struct uf_mm *mm, const void *ops, void *store, uint64_t size,
			 struct uf_object **objp);
__asm__(".symver uf_object_create_0_1, uf_object_create@UFAULT_0.1");

static void record(const char *rec)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct store st = { 0 };
	volatile unsigned char sink;
	struct uf_object *obj;
	unsigned char *map;
	size_t i;

	CHECK_RET(uf_object_create(mm, &old_ops, &st, SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_record(obj, rec), 0);
	for (i = 0; i < NSET; i++)
		sink = map[SETPG(i) * PG];
	(void)sink;
	CHECK(uf_object_record_stop(obj) >= NSET, "record_stop");
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

/* Prefetch the set into an object of @ops, then read it: the counts of
 * the prefetch in *@st, the bytes checked. */
static void replay(const struct uf_store_ops *ops, const char *rec, const char *scratch,
		   struct store *st)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	unsigned char *map, v;
	struct ut_fault f;
	struct store after;
	size_t i;

	CHECK_RET(uf_object_create(mm, ops, st, SIZE, &obj), 0);
	CHECK_RET(uf_mmap(mm, SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map), 0);
	CHECK_RET(uf_object_prefetch(obj, rec), 0);
	ws_wait_prefetch(obj, scratch);
	after = *st;
	for (i = 0; i < NSET; i++) {
		uint64_t off = SETPG(i) * PG + (i * 37) % PG;

		CHECK(ut_read(map + off, &v, &f) == 0 && v == ut_pattern(off),
		      "page %zu: wrong byte", (size_t)SETPG(i));
	}
	*st = after;
	CHECK_RET(uf_munmap(mm, map, SIZE), 0);
	uf_object_put(obj);
	uf_mm_destroy(mm);
}

static void refused(struct uf_mm *mm)
{
	struct uf_store_ops bad = { .read = st_read, .readv = st_readv };
	struct {
		struct uf_store_ops ops;
		void *later;	/* a member of a later version */
	} big = { { .size = sizeof(big), .read = st_read }, NULL };
	struct uf_object *obj;
	struct store st = { 0 };

	CHECK_RET(uf_object_create(mm, &bad, &st, SIZE, &obj), -EINVAL);	/* no ->size */
	bad.size = offsetof(struct uf_store_ops, readv);
	CHECK_RET(uf_object_create(mm, &bad, &st, SIZE, &obj), -EINVAL);	/* too small */
	big.later = &st;
	CHECK_RET(uf_object_create(mm, &big.ops, &st, SIZE, &obj), -E2BIG);
	big.later = NULL;	/* zero past what this version knows: fine */
	CHECK_RET(uf_object_create(mm, &big.ops, &st, SIZE, &obj), 0);
	uf_object_put(obj);
}

/* The first struct: six pointers, right before a page that faults. */
static void first_abi(struct uf_mm *mm)
{
	ssize_t (*old[6])(void *, void *, size_t, uint64_t) = { st_read };
	char *two = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct store st = { 0 };
	struct uf_object *obj;
	unsigned char buf[16];
	void *at;

	CHECK(two != MAP_FAILED, "mmap");
	CHECK_RET(mprotect(two + PG, PG, PROT_NONE), 0);
	at = two + PG - sizeof(old);
	memcpy(at, old, sizeof(old));
	CHECK_RET(uf_object_create_0_1(mm, at, &st, SIZE, &obj), 0);
	CHECK_RET(uf_object_pread(obj, buf, sizeof(buf), 3 * PG + 5), (long)sizeof(buf));
	CHECK(buf[0] == ut_pattern(3 * PG + 5), "the byte read");
	CHECK(st.read_pages >= 1, "no ->read");
	uf_object_put(obj);
	munmap(two, 2 * PG);
}

int main(void)
{
	char path[256], rec[300], scratch[300];
	struct store st_old = { 0 }, st_new = { 0 };
	struct uf_mm *mm;
	int fd;

	ut_catch_signals();
	fd = ut_make_file("/dev/shm", PG, path, sizeof(path));
	close(fd);
	snprintf(rec, sizeof(rec), "%s.ws", path);
	snprintf(scratch, sizeof(scratch), "%s.scratch", path);

	mm = ut_mm_create(NULL);
	refused(mm);
	first_abi(mm);
	uf_mm_destroy(mm);

	record(rec);
	replay(&new_ops, rec, scratch, &st_new);
	printf(".readv: %lu readv calls, %lu pages by readv, %lu by read\n",
	       (unsigned long)st_new.readv_calls, (unsigned long)st_new.readv_pages,
	       (unsigned long)st_new.read_pages);
	CHECK(st_new.readv_calls > 0 && st_new.readv_calls <= NSET / 16,
	      "%lu readv calls for %d pages", (unsigned long)st_new.readv_calls, NSET);
	CHECK(st_new.readv_pages == NSET && st_new.read_pages == 0,
	      "%lu pages by readv, %lu by read; the set is %d", (unsigned long)st_new.readv_pages,
	      (unsigned long)st_new.read_pages, NSET);

	replay(&old_ops, rec, scratch, &st_old);
	printf("old fields: %lu readv calls, %lu pages by read\n",
	       (unsigned long)st_old.readv_calls, (unsigned long)st_old.read_pages);
	CHECK(st_old.readv_calls == 0 && st_old.read_pages >= NSET,
	      "%lu readv calls, %lu pages by read", (unsigned long)st_old.readv_calls,
	      (unsigned long)st_old.read_pages);
	unlink(rec);
	unlink(path);
	printf("ok\n");
	return UT_PASS;
}
