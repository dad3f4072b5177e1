#!/usr/bin/env bash
# Description: ufault-cp copies a sparse file of random bytes into a Redis
# Cluster object, from object to object, and back into a file, byte for byte
# (cmp); holes and zero pages come back as zeros and the exported file stays
# sparse; replacing an object drops its old pages; errors exit 1 or 2.
set -u
B=${B:-build}
CP=$B/ufault-cp
if [ -z "${UFAULT_TEST_REDIS:-}" ]; then
	echo "no test cluster (UFAULT_TEST_REDIS unset: run under tests/redis-cluster run)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
obj=$UFAULT_TEST_REDIS/cp-roundtrip-$$
obj2=$UFAULT_TEST_REDIS/cp-roundtrip2-$$
fail() { echo "FAIL: $*"; exit 1; }
rnd() {	# rnd FILE PAGE_OFFSET PAGES: random bytes into FILE, in place
	dd if=/dev/urandom of="$1" bs=4096 seek="$2" count="$3" conv=notrunc status=none
}

# 5 MiB + 1234 bytes: random runs, a hole, explicit zero pages (written, not
# a hole), a random partial last page
f=$tmp/src
truncate -s $((5 * 1048576 + 1234)) "$f"
rnd "$f" 0 37
rnd "$f" 300 400
dd if=/dev/zero of="$f" bs=4096 seek=700 count=64 conv=notrunc status=none
rnd "$f" 1000 250
dd if=/dev/urandom of="$f" bs=1 seek=$((5 * 1048576)) count=1000 conv=notrunc status=none
rnd "$f" 1279 1

"$CP" -q "$f" "$obj" || fail "import exited $?"
"$CP" -q "$obj" "$obj2" || fail "object to object exited $?"
"$CP" -q "$obj2" "$tmp/out" || fail "export exited $?"
cmp "$f" "$tmp/out" || fail "exported bytes differ from the source"
"$CP" -q "$obj" "$tmp/out1" || fail "export of the first object exited $?"
cmp "$f" "$tmp/out1" || fail "first object's bytes differ from the source"
# about 2.7 MiB of data in a 5 MiB file: the holes must stay holes
used=$(du -k "$tmp/out" | cut -f1)
[ "$used" -lt 4096 ] || fail "exported file uses $used KiB: zero pages were written"

# replacing: a file with a hole where the object has data, and shorter
g=$tmp/src2
truncate -s $((2 * 1048576)) "$g"
rnd "$g" 0 10
rnd "$g" 400 50
"$CP" -q "$g" "$obj" || fail "second import exited $?"
"$CP" -q "$obj" "$tmp/out2" || fail "second export exited $?"
cmp "$g" "$tmp/out2" || fail "a replaced object shows bytes of the old one"

# an empty file
: > "$tmp/empty"
"$CP" -q "$tmp/empty" "$obj2" || fail "import of an empty file exited $?"
"$CP" -q "$obj2" "$tmp/out3" || fail "export of an empty object exited $?"
[ ! -s "$tmp/out3" ] || fail "an empty object exported as $(stat -c %s "$tmp/out3") bytes"

# errors: exit 1 with a message for a missing object or file, 2 for usage
"$CP" -q "$UFAULT_TEST_REDIS/cp-no-such-$$" "$tmp/x" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "missing object: exit $rc, expected 1"
grep -q "no such object" "$tmp/err" || fail "missing object: message: $(cat "$tmp/err")"
"$CP" -q "$tmp/no-such-file" "$obj2" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc, expected 1"
"$CP" -q "$f" 2>/dev/null
rc=$?
[ $rc -eq 2 ] || fail "one argument: exit $rc, expected 2"
"$CP" -q "$f" "$tmp/y" 2>/dev/null
rc=$?
[ $rc -eq 2 ] || fail "file to file: exit $rc, expected 2"
echo "ok: import, object to object, export and replace round-trip byte for byte"
