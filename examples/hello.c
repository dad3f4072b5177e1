// SPDX-License-Identifier: MIT
/*
 * hello - the README's example: an operation mapping whose pages come from
 * fault(), then a file mapped through ufault's page cache, first line
 * printed.
 *
 *	hello [FILE]		(default: /etc/os-release)
 *
 * Keep the code below the comment the same as the README's C block
 * (tests/readme-example.sh checks it).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ufault.h>

/* every first touch of a page calls fault(), as in a kernel driver */
static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct uf_page *page = uf_page_alloc(uf_vma_private(vma));

	if (!page) {
		fd->type = UF_FAULT_OOM;	/* the access gets SIGBUS */
		return NULL;
	}
	sprintf(uf_page_address(page), "page %llu", (unsigned long long)fd->pgoff);
	fd->type = UF_FAULT_MINOR;
	return page;				/* ufault maps it */
}

static const struct uf_vm_operations ops = { .fault = fault };

static int fail(const char *what, int err, struct uf_mm *mm)
{
	fprintf(stderr, "hello: %s: %s\n", what, strerror(-err));
	if (mm)
		uf_mm_destroy(mm);
	return 1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/etc/os-release";
	struct uf_object *obj;
	struct uf_mm *mm;
	char *p, *f, *nl;
	size_t size;
	int ret;

	ret = uf_mm_create(NULL, &mm);
	if (ret)
		return fail("uf_mm_create (ufault-info says why)", ret, NULL);
	ret = uf_mmap_ops(mm, 16 * UF_PAGE_SIZE, PROT_READ, &ops, mm, (void **)&p);
	if (ret)
		return fail("uf_mmap_ops", ret, mm);
	puts(p + 3 * UF_PAGE_SIZE);		/* "page 3" */

	/* a file: fault() is uf_filemap_fault(), a miss reads the file */
	ret = uf_object_open(mm, path, O_RDONLY, &obj);
	if (ret)
		return fail(path, ret, mm);
	size = uf_object_size(obj);
	ret = uf_mmap(mm, size, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&f);
	uf_object_put(obj);			/* the mapping holds its own reference */
	if (ret)
		return fail("uf_mmap", ret, mm);	/* -EINVAL: an empty file */
	nl = memchr(f, '\n', size);		/* past the end of the file: SIGBUS */
	fwrite(f, 1, nl ? (size_t)(nl - f) + 1 : size, stdout);
	uf_mm_destroy(mm);			/* unmaps what is left */
	return 0;
}
