/* Description: uf_mmap() and uf_mmap_ops() of a length that is not a
 * multiple of the page size round it up, as mmap(2) does: a 64 MiB + 100
 * byte file mapped with its own size reads as the kernel's mmap() of the
 * same file shows it (every byte; the rest of the last page reads zero);
 * mapped one page longer, the page past EOF gets SIGBUS in both; and
 * uf_msync(), uf_mprotect() and uf_munmap() take the same unaligned length.
 */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FILE_SIZE	((64UL << 20) + 100)
#define ROUNDED(n)	(((n) + UF_PAGE_SIZE - 1) / UF_PAGE_SIZE * UF_PAGE_SIZE)

static struct uf_page *fill(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct uf_page *page = uf_page_alloc(uf_vma_private(vma));

	(void)fd;
	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	memset(uf_page_address(page), 0x33, UF_PAGE_SIZE);
	return page;
}

static const struct uf_vm_operations fill_ops = { .fault = fill };

/* Every byte of [0, ROUNDED(FILE_SIZE)) of @um equals @km's, and the file. */
static void compare_all(const unsigned char *km, const unsigned char *um)
{
	static unsigned char kb[1 << 20], ub[1 << 20];
	size_t off, n, i;
	struct ut_fault f;

	for (off = 0; off < ROUNDED(FILE_SIZE); off += n) {
		n = ROUNDED(FILE_SIZE) - off < sizeof(kb) ? ROUNDED(FILE_SIZE) - off : sizeof(kb);
		CHECK(ut_copy_from(kb, km + off, n, &f) == 0, "kernel map: signal at %lu",
		      (unsigned long)off);
		CHECK(ut_copy_from(ub, um + off, n, &f) == 0, "ufault map: signal %d at offset %ld",
		      f.sig, (long)((unsigned char *)f.addr - um));
		for (i = 0; i < n; i++) {
			unsigned char want = off + i < FILE_SIZE ? ut_pattern(off + i) : 0;

			CHECK(kb[i] == want && ub[i] == want,
			      "offset %lu: kernel %u, ufault %u, want %u",
			      (unsigned long)(off + i), kb[i], ub[i], want);
		}
	}
}

/* Mapped with the file's size: the whole of the last page is readable. */
static void own_size(struct uf_mm *mm, struct uf_object *obj, int kfd)
{
	unsigned char *km, *um;
	struct uf_vma *vma;

	km = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, kfd, 0);
	CHECK(km != MAP_FAILED, "mmap: %s", strerror(errno));
	CHECK_RET(uf_mmap(mm, FILE_SIZE, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&um), 0);
	vma = uf_find_vma(mm, um);
	CHECK(vma && uf_vma_start(vma) == um && uf_vma_len(vma) == ROUNDED(FILE_SIZE),
	      "vma length %zu, want %lu", vma ? uf_vma_len(vma) : 0, ROUNDED(FILE_SIZE));
	CHECK(uf_find_vma(mm, um + ROUNDED(FILE_SIZE)) == NULL, "mapping goes past the last page");
	compare_all(km, um);
	CHECK_RET(uf_msync(mm, um, FILE_SIZE, UF_MS_SYNC), 0);
	CHECK_RET(uf_mprotect(mm, um, FILE_SIZE, PROT_READ), 0);
	CHECK_RET(uf_munmap(mm, um, FILE_SIZE), 0);
	CHECK(uf_find_vma(mm, um + FILE_SIZE - 1) == NULL, "the last page is still mapped");
	munmap(km, FILE_SIZE);
}

/* Mapped one page and a bit longer than the file: the page past EOF gets
 * SIGBUS with si_addr the address touched, in the kernel and in ufault. */
static void past_eof(struct uf_mm *mm, struct uf_object *obj, int kfd)
{
	size_t len = FILE_SIZE + UF_PAGE_SIZE, next = ROUNDED(FILE_SIZE);
	unsigned char *maps[2], v;
	struct ut_fault f;
	int i;

	maps[0] = mmap(NULL, len, PROT_READ, MAP_SHARED, kfd, 0);
	CHECK(maps[0] != MAP_FAILED, "mmap: %s", strerror(errno));
	CHECK_RET(uf_mmap(mm, len, PROT_READ, UF_MAP_PRIVATE, obj, 0, (void **)&maps[1]), 0);
	for (i = 0; i < 2; i++) {
		const char *who = i ? "ufault" : "kernel";

		CHECK(ut_read(maps[i] + FILE_SIZE, &v, &f) == 0 && v == 0,
		      "%s: byte past EOF: signal %d, value %u", who, f.sig, v);
		CHECK(ut_read(maps[i] + next + 5, &v, &f) == SIGBUS &&
		      f.addr == maps[i] + next + 5,
		      "%s: page past EOF: signal %d at %p, want SIGBUS at %p", who, f.sig, f.addr,
		      (void *)(maps[i] + next + 5));
	}
	CHECK_RET(uf_munmap(mm, maps[1], len), 0);
	munmap(maps[0], len);
}

/* uf_mmap_ops(): a length of a page and one byte maps two pages. */
static void ops_len(struct uf_mm *mm)
{
	unsigned char *p, v;
	struct ut_fault f;
	struct uf_vma *vma;

	CHECK_RET(uf_mmap_ops(mm, UF_PAGE_SIZE + 1, PROT_READ, &fill_ops, mm, (void **)&p), 0);
	vma = uf_find_vma(mm, p);
	CHECK(vma && uf_vma_len(vma) == 2 * UF_PAGE_SIZE, "ops vma length %zu",
	      vma ? uf_vma_len(vma) : 0);
	CHECK(ut_read(p + 2 * UF_PAGE_SIZE - 1, &v, &f) == 0 && v == 0x33,
	      "last byte of the rounded length: signal %d value %u", f.sig, v);
	CHECK_RET(uf_munmap(mm, p, UF_PAGE_SIZE + 1), 0);
	CHECK_RET(uf_mmap_ops(mm, SIZE_MAX - 10, PROT_READ, &fill_ops, mm, (void **)&p), -ENOMEM);
}

int main(void)
{
	struct uf_mm *mm = ut_mm_create(NULL);
	struct uf_object *obj;
	char path[256];
	int kfd;

	ut_catch_signals();
	kfd = ut_make_file("/dev/shm", FILE_SIZE, path, sizeof(path));
	CHECK_RET(uf_object_open(mm, path, O_RDONLY, &obj), 0);
	CHECK_RET(uf_object_size(obj), FILE_SIZE);
	own_size(mm, obj, kfd);
	past_eof(mm, obj, kfd);
	ops_len(mm);
	uf_object_put(obj);
	close(kfd);
	unlink(path);
	uf_mm_destroy(mm);
	return 0;
}
