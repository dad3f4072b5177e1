#!/usr/bin/env bash
# Description: the README's C example is examples/hello.c (the code after
# its opening comment), which make test builds and runs: the example a
# reader copies compiles and works.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
sed -n '/^```c$/,/^```$/p' "$top/README.md" | sed '1d;$d' > "$tmp/readme.c"
sed -n '/^#include/,$p' "$top/examples/hello.c" > "$tmp/hello.c"
[ -s "$tmp/readme.c" ] || { echo "FAIL: no \`\`\`c block in README.md"; exit 1; }
if ! diff -u "$tmp/readme.c" "$tmp/hello.c"; then
	echo "FAIL: README.md's example and examples/hello.c differ (above)"
	exit 1
fi
echo "ok: README.md's example is examples/hello.c ($(wc -l < "$tmp/hello.c") lines)"
