// SPDX-License-Identifier: MIT
/*
 * hello - map a file with ufault and print its first line.
 *
 *	hello [FILE]		(default: /etc/os-release)
 *
 * The page is not read when the file is opened: the first access to the
 * mapping is a real page fault, served by uf_filemap_fault() from the file.
 */
#include <ufault.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/etc/os-release";
	struct uf_object *obj;
	struct uf_mm *mm;
	size_t size, len;
	const char *map, *nl;
	int ret;

	ret = uf_mm_create(NULL, &mm);
	if (ret) {
		fprintf(stderr, "uf_mm_create: %s (see ufault-info)\n", strerror(-ret));
		return 1;
	}
	ret = uf_object_open(mm, path, O_RDONLY, &obj);
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, strerror(-ret));
		uf_mm_destroy(mm);
		return 1;
	}
	size = uf_object_size(obj);
	len = (size + UF_PAGE_SIZE - 1) & ~(UF_PAGE_SIZE - 1);
	if (len) {
		ret = uf_mmap(mm, len, PROT_READ, UF_MAP_SHARED, obj, 0, (void **)&map);
		if (ret) {
			fprintf(stderr, "uf_mmap: %s\n", strerror(-ret));
			uf_object_put(obj);
			uf_mm_destroy(mm);
			return 1;
		}
		/* never read past the end of the file: that is SIGBUS */
		nl = memchr(map, '\n', size);
		fwrite(map, 1, nl ? (size_t)(nl - map) + 1 : size, stdout);
		uf_munmap(mm, (void *)map, len);
	}
	uf_object_put(obj);	/* the mapping held its own reference */
	uf_mm_destroy(mm);
	return 0;
}
