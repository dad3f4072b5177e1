/* Description: uf_mm_destroy() leaves no thread, file descriptor or memory
 * mapping behind (same /proc/self task, fd and maps counts; the mappings'
 * pages unmapped), whether the mappings were unmapped first or left for
 * it to remove, with one handler thread and with many. */
#define _GNU_SOURCE
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#define NPAGES 16

/* Sanitizer runtimes add mappings of their own as threads come and go,
 * and reuse freed ranges at once: there only threads and fds are counted. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UT_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UT_SANITIZER 1
#endif
#endif

struct counts {
	int tasks, fds, maps;
};

struct ctx {
	struct uf_mm *mm;
};

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct ctx *c = uf_vma_private(vma);
	struct uf_page *page = uf_page_alloc(c->mm);

	if (page)
		memset(uf_page_address(page), (int)fd->pgoff + 1, UF_PAGE_SIZE);
	fd->type = page ? UF_FAULT_MINOR : UF_FAULT_OOM;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL, "opendir %s", path);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - (strcmp(path, "/proc/self/fd") == 0);	/* opendir's own fd */
}

/* Lines of /proc/self/maps, read without allocating (stdio's buffer could
 * itself add a mapping). */
static int count_maps(void)
{
	char buf[4096];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t len, i;

	CHECK(fd >= 0, "open maps");
	while ((len = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < len; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

static struct counts take_counts(void)
{
	struct counts k;

	k.tasks = count_dir("/proc/self/task");
	k.fds = count_dir("/proc/self/fd");
	k.maps = count_maps();
	return k;
}

/* No page of [p, p + len) is mapped any more. */
static void check_unmapped(const unsigned char *p, size_t len, const char *what)
{
#ifndef UT_SANITIZER
	unsigned char vec;
	size_t off;

	for (off = 0; off < len; off += UF_PAGE_SIZE) {
		int ret = mincore((void *)(p + off), UF_PAGE_SIZE, &vec);

		CHECK(ret < 0 && errno == ENOMEM, "%s: page %zu still mapped after uf_mm_destroy()",
		      what, off / UF_PAGE_SIZE);
	}
#else
	(void)p, (void)len, (void)what;
#endif
}

/* One life of an mm: map, fault, maybe unmap, destroy. */
static void cycle(unsigned int handlers, bool unmap_first)
{
	struct uf_mm_config cfg = { .handler_threads = handlers };
	struct ctx c;
	unsigned char *a, *b;
	size_t pg;

	c.mm = ut_mm_create(&cfg);
	CHECK_RET(uf_mmap_ops(c.mm, NPAGES * UF_PAGE_SIZE, PROT_READ | PROT_WRITE, &ops, &c,
			      (void **)&a), 0);
	CHECK_RET(uf_mmap_ops(c.mm, 3 * UF_PAGE_SIZE, PROT_READ, &ops, &c, (void **)&b), 0);
	for (pg = 0; pg < NPAGES; pg++)
		CHECK(a[pg * UF_PAGE_SIZE] == pg + 1, "page %zu", pg);
	CHECK(b[UF_PAGE_SIZE] == 2, "b");
	if (unmap_first) {
		CHECK_RET(uf_munmap(c.mm, a, NPAGES * UF_PAGE_SIZE), 0);
		CHECK_RET(uf_munmap(c.mm, b, 3 * UF_PAGE_SIZE), 0);
	}
	uf_mm_destroy(c.mm);
	check_unmapped(a, NPAGES * UF_PAGE_SIZE, "mapping a");
	check_unmapped(b, 3 * UF_PAGE_SIZE, "mapping b");
}

int main(void)
{
	static const unsigned int handlers[] = { 1, 8 };
	struct counts before, after;
	size_t i;
	int unmap_first;

	/*
	 * glibc creates malloc arenas for threads that meet contention, at
	 * random: one arena keeps the count of mappings ufault's alone.
	 */
	mallopt(M_ARENA_MAX, 1);
	uf_mm_destroy(NULL);		/* nothing happens */
	for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		for (unmap_first = 0; unmap_first < 2; unmap_first++) {
			/*
			 * Warm up first: glibc keeps the stacks of joined
			 * threads and its malloc arenas for reuse, which is
			 * not ufault's to free.
			 */
			cycle(handlers[i], unmap_first);
			before = take_counts();
			cycle(handlers[i], unmap_first);
			cycle(handlers[i], unmap_first);
			after = take_counts();
			CHECK(after.tasks == before.tasks, "%u handlers, unmap %d: threads %d -> %d",
			      handlers[i], unmap_first, before.tasks, after.tasks);
			CHECK(after.fds == before.fds, "%u handlers, unmap %d: fds %d -> %d",
			      handlers[i], unmap_first, before.fds, after.fds);
#ifndef UT_SANITIZER
			CHECK(after.maps == before.maps, "%u handlers, unmap %d: maps %d -> %d",
			      handlers[i], unmap_first, before.maps, after.maps);
#else
			(void)after.maps;
#endif
		}
	}
	return 0;
}
