#!/bin/sh
# check-man.sh - every function declared in include/ufault.h and
# include/ufault-redis.h has a man page.
#
#   tools/check-man.sh [--lint]
#
# A function may share a page with others: its own name must then exist as
# a one-line ".so man3/<main>.3" page, and that target must exist.  With
# --lint, every page (man1, man3, man7) is also rendered with
# `man --warnings` (from man/, as after installation, so that .so requests
# resolve) and any warning fails.
# Exit 0 when all is well, 1 listing what is missing or wrong.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
headers="$root/include/ufault.h $root/include/ufault-redis.h"
mandir=$root/man
lint=0
[ "${1:-}" = "--lint" ] && lint=1

funcs=
for header in $headers; do
	f=$(grep -E '^[a-z].* \*?uf_[a-z_]+\(' "$header" |
		sed -E 's/^.*[ *](uf_[a-z_]+)\(.*$/\1/' | sort -u)
	if [ -z "$f" ]; then
		echo "check-man: no prototypes found in $header" >&2
		exit 1
	fi
	funcs="$funcs $f"
done

missing= bad= n=0
for f in $funcs; do
	n=$((n + 1))
	page=$mandir/man3/$f.3
	if [ ! -f "$page" ]; then
		missing="$missing $f"
		continue
	fi
	target=$(sed -n '1s/^\.so \(.*\)$/\1/p' "$page")
	if [ -n "$target" ] && [ ! -f "$mandir/$target" ]; then
		bad="$bad $f(.so $target: no such page)"
	fi
done
[ -f "$mandir/man7/ufault.7" ] || missing="$missing ufault(7)"

if [ $lint = 1 ] && [ -z "$missing" ]; then
	if ! command -v man >/dev/null 2>&1; then
		echo "check-man: --lint needs man(1)" >&2
		exit 1
	fi
	for page in "$mandir"/man1/*.1 "$mandir"/man3/*.3 "$mandir"/man7/*.7; do
		rel=${page#"$mandir"/}
		out=$(cd "$mandir" && MANWIDTH=80 man --warnings -l "$rel" 2>&1 >/dev/null)
		[ -n "$out" ] && bad="$bad $rel($out)"
	done
fi

if [ -n "$missing" ] || [ -n "$bad" ]; then
	[ -n "$missing" ] && echo "missing man pages:$missing"
	[ -n "$bad" ] && echo "bad man pages:$bad"
	exit 1
fi
echo "check-man: $n functions, every one has a man page"
exit 0
