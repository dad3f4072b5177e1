#!/usr/bin/env bash
# Description: `make install PREFIX=DIR` installs header, libraries, pkg-config
# file, tools and man pages; a program outside the tree builds with
# `cc prog.c $(pkg-config --cflags --libs ufault)` and runs, with
# LD_LIBRARY_PATH or, as the README says, with an rpath from pkg-config.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
command -v pkg-config >/dev/null || { echo "skip: no pkg-config"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top" install PREFIX="$tmp/prefix" B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" >/dev/null
for f in include/ufault.h lib/libufault.so.0 lib/libufault.so lib/libufault.a lib/pkgconfig/ufault.pc \
	 bin/ufault-info share/man/man1/ufault-info.1 share/man/man3/uf_mmap.3 share/man/man3/uf_vma_stats.3 \
	 share/man/man7/ufault.7; do
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
# the README's way: an rpath from pkg-config, no LD_LIBRARY_PATH
cc "$tmp/prog.c" -o "$tmp/prog-rpath" $(pkg-config --cflags --libs ufault) \
	-Wl,-rpath,"$(pkg-config --variable=libdir ufault)" ${SAN:+-fsanitize=$SAN}
out=$(env -u LD_LIBRARY_PATH "$tmp/prog-rpath")
[ "$out" = "page 3" ] || { echo "rpath build: got '$out'"; exit 1; }
# installed pages render by path, from anywhere
if command -v man >/dev/null 2>&1; then
	for page in "$tmp"/prefix/share/man/man*/*; do
		w=$(cd / && MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -z "$w" ] || { echo "${page#"$tmp"/prefix/}: $w"; exit 1; }
	done
fi
echo "ok: $out"
