#!/usr/bin/env bash
# Description: `make HIREDIS=no` (the user leaving the Redis store out on
# purpose, on the command line or in the environment) does not say
# "hiredis not found": make -n of `all` shows no such message; and `make
# test` then does not run redis/deps.sh (which installs packages as root).
# Likewise `make PACK=no` and `make ZSTD=no` do not say "libzstd not found".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
for how in "HIREDIS=no" ""; do
	out=$(cd "$top" && env ${how:-HIREDIS=no} make -n all B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" \
		$how 2>&1) || { echo "$out"; echo "make -n all ($how): failed"; exit 1; }
	if grep -q 'hiredis not found' <<<"$out"; then
		grep 'hiredis not found' <<<"$out"
		echo "make ${how:-(HIREDIS=no in the environment)}: says hiredis is not found"
		exit 1
	fi
	out=$(cd "$top" && env ${how:-HIREDIS=no} make -n test B="${B:-build}" CC="${CC:-cc}" \
		SAN="${SAN:-}" $how 2>&1)
	if grep -q 'deps.sh' <<<"$out"; then
		grep 'deps.sh' <<<"$out"
		echo "make test ${how:-(HIREDIS=no in the environment)}: runs redis/deps.sh"
		exit 1
	fi
done
for how in PACK=no ZSTD=no; do
	out=$(cd "$top" && make -n all B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" $how 2>&1) ||
		{ echo "$out"; echo "make -n all $how: failed"; exit 1; }
	if grep -q 'libzstd not found' <<<"$out"; then
		echo "make $how: says libzstd is not found"
		exit 1
	fi
done
echo "ok: make PACK=no and ZSTD=no say nothing of libzstd; make HIREDIS=no, on the command line and in the environment, says nothing of hiredis, make test runs no deps.sh"
