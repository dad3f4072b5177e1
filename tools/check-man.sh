#!/bin/sh
# check-man.sh - every function declared in include/ufault.h,
# include/ufault-redis.h, include/ufault-pack.h and include/ufault-http.h
# has a man page, every
# tool in tools/ has a man1 page, and the pages the others name exist.
#
#   tools/check-man.sh [--lint]
#
# A function documented on another's page still has a page of its own, a
# short real one: a ".so" stub is refused, because `man -l` cannot follow
# it from outside man/.  With --lint, every page (man1, man3, man7) is
# also rendered with `man --warnings -l` from / by its absolute path, as a
# reader of the source tree would, and any warning fails.
# Exit 0 when all is well, 1 listing what is missing or wrong.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
headers="$root/include/ufault.h $root/include/ufault-redis.h $root/include/ufault-pack.h $root/include/ufault-http.h"
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
	if grep -q '^\.so ' "$page"; then
		bad="$bad $f(a .so stub: man -l cannot follow it)"
	fi
done
[ -f "$mandir/man7/ufault.7" ] || missing="$missing ufault(7)"
ntools=0
for tool in "$root"/tools/*.c; do
	t=$(basename "$tool" .c)
	ntools=$((ntools + 1))
	[ -f "$mandir/man1/$t.1" ] || missing="$missing $t(1)"
done
# every ufault page named in a .BR reference (uf_x(3), ufault-y(1), ufault(7)) exists
for ref in $(grep -ho '^\.BR uf[a-z_\\-]* ([137])' "$mandir"/man*/* | sed 's/^\.BR //; s/\\-/-/g; s/ (\([137]\))/.\1/' | sort -u); do
	sec=${ref##*.}
	[ -f "$mandir/man$sec/$ref" ] || bad="$bad reference to ${ref%.*}($sec): no such page"
done

if [ $lint = 1 ] && [ -z "$missing" ]; then
	if ! command -v man >/dev/null 2>&1; then
		echo "check-man: --lint needs man(1)" >&2
		exit 1
	fi
	for page in "$mandir"/man1/*.1 "$mandir"/man3/*.3 "$mandir"/man7/*.7; do
		rel=${page#"$mandir"/}
		out=$(cd / && MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
		[ -n "$out" ] && bad="$bad $rel($out)"
	done
fi

if [ -n "$missing" ] || [ -n "$bad" ]; then
	[ -n "$missing" ] && echo "missing man pages:$missing"
	[ -n "$bad" ] && echo "bad man pages:$bad"
	exit 1
fi
echo "check-man: $n functions and $ntools tools, every one has a man page"
exit 0
