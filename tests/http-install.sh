#!/usr/bin/env bash
# Description: `make install PREFIX=DIR` installs ufault-http.h,
# libufault-http.so.0/.a and ufault-http.pc; a program outside the tree
# builds with `cc prog.c $(pkg-config --cflags --libs ufault-http)`, runs
# against the shared libraries (a bad URL -EINVAL, a port where nothing
# listens -ECONNREFUSED), and the core library does not link libcurl.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-build}
command -v pkg-config >/dev/null || { echo "skip: no pkg-config"; exit 77; }
[ -e "$top/$B/libufault-http.a" ] || [ -e "$B/libufault-http.a" ] ||
	{ echo "skip: built without libcurl (no $B/libufault-http.a)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top" install PREFIX="$tmp/prefix" B="$B" CC="${CC:-cc}" SAN="${SAN:-}" >/dev/null
for f in include/ufault-http.h include/ufault.h lib/libufault-http.so.0 lib/libufault-http.so \
	 lib/libufault-http.a lib/pkgconfig/ufault-http.pc share/man/man3/uf_http_open.3; do
	[ -e "$tmp/prefix/$f" ] || { echo "missing $f"; exit 1; }
done
cat > "$tmp/prog.c" <<'PROG'
#include <errno.h>
#include <stdio.h>
#include <ufault-http.h>

int main(void)
{
	struct uf_http_opts o = { .deadline_ms = 200 };
	struct uf_object *obj;
	struct uf_mm *mm;
	int a, b;

	if (uf_mm_create(NULL, &mm))
		return 77;
	a = uf_http_open(mm, "ftp://127.0.0.1/x", NULL, &obj);
	b = uf_http_open(mm, "http://127.0.0.1:1/x", &o, &obj);
	uf_mm_destroy(mm);
	printf("%d %d\n", a, b);
	return !(a == -EINVAL && b == -ECONNREFUSED);
}
PROG
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs ufault-http)
for l in -lufault-http -lufault -lcurl; do
	case " $flags " in *" $l "*) ;; *) echo "pkg-config gives '$flags': no $l"; exit 1 ;; esac
done
cc "$tmp/prog.c" -o "$tmp/prog" $flags ${SAN:+-fsanitize=$SAN}
out=$(no_proxy=127.0.0.1 LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/prog") || { echo "got '$out'"; exit 1; }
LD_LIBRARY_PATH="$tmp/prefix/lib" ldd "$tmp/prog" | grep -q "libufault-http.so.0 => $tmp/prefix/lib" ||
	{ echo "not linked to the installed libufault-http.so.0"; exit 1; }
# the core library does not depend on libcurl
! ldd "$tmp/prefix/lib/libufault.so.0" | grep -q libcurl || { echo "libufault.so.0 links libcurl"; exit 1; }
echo "ok: $out"
