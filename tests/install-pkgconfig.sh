#!/usr/bin/env bash
# Description: `make install PREFIX=DIR` installs header, libraries, pkg-config
# file and tools; a program outside the tree builds with
# `cc prog.c $(pkg-config --cflags --libs ufault)` and runs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
command -v pkg-config >/dev/null || { echo "skip: no pkg-config"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top" install PREFIX="$tmp/prefix" B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" >/dev/null
for f in include/ufault.h lib/libufault.so.0 lib/libufault.so lib/libufault.a lib/pkgconfig/ufault.pc bin/ufault-info; do
	[ -e "$tmp/prefix/$f" ] || { echo "missing $f"; exit 1; }
done
cat > "$tmp/prog.c" <<'PROG'
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ufault.h>

static struct uf_page *fault(struct uf_vma *vma, struct uf_fault_data *fd)
{
	struct uf_page *page = uf_page_alloc(uf_vma_private(vma));

	if (!page) {
		fd->type = UF_FAULT_OOM;
		return NULL;
	}
	snprintf(uf_page_address(page), 64, "page %llu", (unsigned long long)fd->pgoff);
	fd->type = UF_FAULT_MINOR;
	return page;
}

static const struct uf_vm_operations ops = { .fault = fault };

int main(void)
{
	struct uf_mm *mm;
	char *p;
	int ret = uf_mm_create(NULL, &mm);

	if (ret)
		return 77;
	if (uf_mmap_ops(mm, 4 * 4096, PROT_READ, &ops, mm, (void **)&p))
		return 1;
	ret = strcmp(p + 3 * 4096, "page 3") != 0;
	puts(p + 3 * 4096);
	uf_mm_destroy(mm);
	return ret;
}
PROG
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc "$tmp/prog.c" -o "$tmp/prog" $(pkg-config --cflags --libs ufault) ${SAN:+-fsanitize=$SAN}
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/prog")
[ "$out" = "page 3" ] || { echo "got '$out'"; exit 1; }
# the binary really uses the shared library
LD_LIBRARY_PATH="$tmp/prefix/lib" ldd "$tmp/prog" | grep -q "libufault.so.0 => $tmp/prefix/lib" || { echo "not linked to the installed libufault.so.0"; exit 1; }
echo "ok: $out"
