#!/usr/bin/env bash
# Description: `make uninstall PREFIX=DIR` removes exactly what `make install
# PREFIX=DIR` put there, the Redis store's files too: into an empty DIR, DIR
# is empty again; into a DIR that already held bin/, share/man/man1/ and a
# file of someone else's, those stay and nothing else does.  Installing
# twice, then uninstalling once, leaves nothing either.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mk() {
	make -s -C "$top" "$@" B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" >"$tmp/make.log" 2>&1 ||
		{ cat "$tmp/make.log"; echo "make $*: failed"; exit 1; }
}
tree() { (cd "$1" && find . | LC_ALL=C sort); }

# an empty prefix
p=$tmp/empty
mkdir "$p"
mk install PREFIX="$p"
n=$(find "$p" -type f -o -type l | wc -l)
redis=
[ -f "$top/${B:-build}/libufault-redis.a" ] && redis="include/ufault-redis.h lib/libufault-redis.so.0"
for f in include/ufault.h lib/libufault.so.0 bin/ufault-info share/man/man3/uf_mmap.3 $redis; do
	[ -e "$p/$f" ] || { echo "install: no $f"; exit 1; }
done
mk install PREFIX="$p"
mk uninstall PREFIX="$p"
left=$(tree "$p")
[ "$left" = "." ] || { echo "after uninstall from an empty prefix, left:"; echo "$left"; exit 1; }

# a prefix that held things of its own
p=$tmp/used
mkdir -p "$p/bin" "$p/share/man/man1" "$p/lib"
echo other >"$p/bin/other-tool"
before=$(tree "$p")
mk install PREFIX="$p"
mk uninstall PREFIX="$p"
after=$(tree "$p")
if [ "$before" != "$after" ]; then
	echo "the tree changed:"
	diff <(echo "$before") <(echo "$after") || true
	exit 1
fi
[ "$(cat "$p/bin/other-tool")" = other ] || { echo "bin/other-tool changed"; exit 1; }
echo "ok: $n files installed and removed, the tree as it was"
