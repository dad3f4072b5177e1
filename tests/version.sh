#!/usr/bin/env bash
# Description: one version, the VERSION file's, is the one every man page
# (.TH), every .pc file (as built and as installed), and every tool's
# --version (as built or in the tree, and as installed) say; every tool's
# man page lists --version.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/${B:-build}
v=$(cat "$top/VERSION")
case $v in
[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "VERSION holds '$v', not MAJOR.MINOR.PATCH"; exit 1 ;;
esac
bad=

# man pages: the fourth field of .TH, "ufault X.Y.Z"
for page in "$top"/man/man*/*; do
	got=$(sed -n '1s/^\.TH [^ ]* [0-9] [^ ]* "\([^"]*\)".*/\1/p' "$page")
	[ "$got" = "ufault $v" ] || bad="$bad
${page#"$top"/}: .TH says '$got', not 'ufault $v'"
done
[ -z "$bad" ] || bad="$bad
(to set them all: sed -i '1s/\"ufault [0-9.]*\"/\"ufault $v\"/' man/man*/*)"

# pkg-config files, built and installed
pcs="$b/libufault.pc"
[ -f "$b/libufault-redis.a" ] && pcs="$pcs $b/ufault-redis.pc"
[ -f "$b/libufault-pack.a" ] && pcs="$pcs $b/ufault-pack.pc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top" install PREFIX="$tmp/prefix" B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" \
	>"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; echo "make install failed"; exit 1; }
pcs="$pcs $tmp/prefix/lib/pkgconfig/ufault.pc"
[ -f "$b/libufault-redis.a" ] && pcs="$pcs $tmp/prefix/lib/pkgconfig/ufault-redis.pc"
[ -f "$b/libufault-pack.a" ] && pcs="$pcs $tmp/prefix/lib/pkgconfig/ufault-pack.pc"
for pc in $pcs; do
	got=$(sed -n 's/^Version: //p' "$pc")
	[ "$got" = "$v" ] || bad="$bad
${pc#"$tmp"/}: Version: '$got', not '$v'"
done

# tools: --version, as built (C) or in the tree (scripts) and as installed,
# and listed in the man page
n=0
for src in "$top"/tools/*.c $(ls "$top"/tools/ufault-* | grep -v '\.c$'); do
	t=$(basename "$src" .c)
	case $src in *.c) run=$b/$t ;; *) [ -x "$src" ] || continue; run=$src ;; esac
	grep -q '^\.B \\-\\-version$' "$top/man/man1/$t.1" || bad="$bad
man/man1/$t.1: no --version"
	for exe in "$run" "$tmp/prefix/bin/$t"; do
		[ -x "$exe" ] || continue	# ufault-cp: only with hiredis
		n=$((n + 1))
		got=$("$exe" --version 2>&1) || bad="$bad
${exe#"$tmp"/} --version: exit $?"
		[ "$got" = "$t (ufault) $v" ] || bad="$bad
${exe#"$tmp"/} --version: '$got', not '$t (ufault) $v'"
	done
done
if [ -n "$bad" ]; then
	echo "not version $v:$bad"
	exit 1
fi
echo "ok: version $v in $(ls "$top"/man/man*/* | wc -l) man pages, $(echo $pcs | wc -w) .pc files," \
	"$n tools' --version (built and installed)"
