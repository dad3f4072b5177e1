#!/usr/bin/env bash
# Description: every tool's --help and man page list every long option of
# its getopt_long table (read from tools/NAME.c), and --help names no
# option the tool does not take; ufault-bench's --help lists every --only
# value its sources test for (strcmp(only, "ws"), ...) and every case
# name, and its man page every --only value that is a run of its own.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/${B:-build}
bad= n=0 nopt=0

# the long options of tools/NAME.c's table, one a line
options() {
	awk '/struct option [a-z_]+\[\] = \{/ { on = 1; next }
	     on && /^[[:space:]]*\};/ { exit }
	     on && match($0, /\{ *"[a-z][a-z0-9-]*"/) {
		s = substr($0, RSTART, RLENGTH); sub(/^\{ *"/, "", s); sub(/"$/, "", s); print s
	     }' "$1"
}
# does TEXT hold WORD, not as part of a longer option or name
has() { grep -Eq -- "(^|[^a-z0-9-])$2([^a-z0-9-]|\$)" <<<"$1"; }

for src in "$top"/tools/*.c; do
	t=$(basename "$src" .c)
	page=$top/man/man1/$t.1
	opts=$(options "$src")
	[ -n "$opts" ] || { bad="$bad
$t: no getopt_long option table found in tools/$t.c"; continue; }
	# the page, rendered to plain text where man(1) is here, else its source
	if command -v man >/dev/null 2>&1; then
		mantext=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b 2>/dev/null || true)
	fi
	[ -n "${mantext:-}" ] || mantext=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page")
	help=
	if [ -x "$b/$t" ]; then
		n=$((n + 1))
		help=$("$b/$t" --help 2>&1) || bad="$bad
$t --help: exit $?"
	fi
	for o in $opts; do
		nopt=$((nopt + 1))
		has "$mantext" "--$o" || bad="$bad
man/man1/$t.1: no --$o (tools/$t.c takes it)"
		[ -z "$help" ] || has "$help" "--$o" || bad="$bad
$t --help: no --$o (tools/$t.c takes it)"
	done
	# what --help names is taken
	for o in $(grep -Eo -- '(^|[^a-z0-9-])--[a-z][a-z0-9-]*' <<<"$help" | sed 's/^[^-]*--//' | sort -u); do
		grep -qx -- "$o" <<<"$opts" || bad="$bad
$t --help: names --$o, which is not in tools/$t.c's option table"
	done
done

# ufault-bench --only: the values its sources test for, and its case names
src="$top/tools/ufault-bench.c $top/tools/redis/bench-redis.c $top/tools/serve/bench-serve.c $top/tools/bench/attach.c"
special=$(grep -ho 'only, "[a-z0-9-]*")' $src | sed 's/.*"\(.*\)".*/\1/' | sort -u)
cases=$(grep -o '\.name = "[a-z0-9-]*"' "$top/tools/ufault-bench.c" | sed 's/.*"\(.*\)"/\1/' | sort -u)
[ -n "$special" ] && [ -n "$cases" ] || bad="$bad
ufault-bench: no --only values found in its sources"
help=$("$b/ufault-bench" --help 2>&1 || true)
mantext=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$top/man/man1/ufault-bench.1")
for v in $special $cases; do
	has "$help" "$v" || bad="$bad
ufault-bench --help: no --only $v"
done
for v in $special; do
	has "$mantext" "$v" || bad="$bad
man/man1/ufault-bench.1: no --only $v"
done

if [ -n "$bad" ]; then
	echo "--help and man pages against the option tables:$bad"
	exit 1
fi
echo "ok: $nopt options of $(ls "$top"/tools/*.c | wc -l) tools in their man pages, $n tools' --help;" \
	"ufault-bench --only:" $special $cases
