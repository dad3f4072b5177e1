#!/usr/bin/env bash
# Description: ufault-pack packs a file of random, zero and text pages (also
# from a pipe into a pipe), --unpack gives the same bytes back (cmp),
# --verify passes; a damaged frame fails --verify and --unpack (exit 1), a
# file that is not packed is refused, a failed pack leaves no PACKED file;
# --help, --version, bad usage exit 0, 0, 2.
set -u
B=${B:-build}
PK=$B/ufault-pack
if [ ! -x "$PK" ]; then
	echo "skip: no $PK (built without libzstd: PACK=no)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 3 MiB + 100 bytes: random pages, zero pages, text pages, a partial page
f=$tmp/src
truncate -s $((3 * 1048576 + 100)) "$f"
dd if=/dev/urandom of="$f" bs=4096 seek=0 count=50 conv=notrunc status=none
for i in $(seq 1 400); do echo "line $i of a text page in a snapshot"; done |
	dd of="$f" bs=4096 seek=300 conv=notrunc status=none
dd if=/dev/urandom of="$f" bs=1 seek=$((3 * 1048576)) count=100 conv=notrunc status=none

"$PK" "$f" "$tmp/p" 2>"$tmp/log" || fail "pack exited $?"
grep -q "bytes ->" "$tmp/log" || fail "no summary: $(cat "$tmp/log")"
"$PK" --verify "$tmp/p" || fail "--verify exited $?"
"$PK" --unpack "$tmp/p" "$tmp/out" || fail "--unpack exited $?"
cmp "$f" "$tmp/out" || fail "unpacked bytes differ"
# the 2.7 MiB of zero pages stay holes in the unpacked file
[ "$(du -k "$tmp/out" | cut -f1)" -lt 1024 ] || fail "unpacked file not sparse: $(du -k "$tmp/out")"
[ "$(stat -c %s "$tmp/p")" -lt $((1048576)) ] || fail "packed $(stat -c %s "$tmp/p") bytes"

# threads: the same bytes
"$PK" -q --threads 1 "$f" "$tmp/t1" && "$PK" -q --threads 3 "$f" "$tmp/t3" || fail "--threads"
cmp "$tmp/t1" "$tmp/t3" || fail "--threads 3 wrote other bytes than --threads 1"

# pipes both ways, another frame size
cat "$f" | "$PK" -q --frame-size 64K - - > "$tmp/p2" || fail "pipe pack exited $?"
"$PK" --unpack "$tmp/p2" - > "$tmp/out2" || fail "--unpack to stdout exited $?"
cmp "$f" "$tmp/out2" || fail "pipe: unpacked bytes differ"

# a damaged byte in the first frame (just after the 64-byte header): its
# bits flipped, since the frame holds random bytes and any fixed value
# written there is already that byte once in 256 runs
cp "$tmp/p" "$tmp/bad"
b=$(od -An -tu1 -j200 -N1 "$tmp/p" | tr -d ' ')
printf "\\$(printf %03o $((b ^ 0xff)))" | dd of="$tmp/bad" bs=1 seek=200 conv=notrunc status=none
cmp -s "$tmp/p" "$tmp/bad" && fail "the damaged copy is the same as the packed file"
"$PK" --verify "$tmp/bad" 2>/dev/null
[ $? -eq 1 ] || fail "--verify of a damaged frame did not exit 1"
"$PK" --unpack "$tmp/bad" "$tmp/out3" 2>/dev/null
[ $? -eq 1 ] || fail "--unpack of a damaged frame did not exit 1"

# not packed; a pack that cannot be written leaves nothing
"$PK" --verify "$f" 2>"$tmp/log"
[ $? -eq 1 ] && grep -q "not a packed snapshot" "$tmp/log" || fail "plain file: $(cat "$tmp/log")"
mkdir "$tmp/ro" && chmod 500 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
	"$PK" -q "$f" "$tmp/ro/p" 2>/dev/null && fail "pack into a read-only directory succeeded"
fi
"$PK" -q "$tmp/nonexistent" "$tmp/p3" 2>/dev/null
[ $? -eq 1 ] || fail "a missing SOURCE did not exit 1"
[ ! -e "$tmp/p3" ] || fail "a failed pack left PACKED"
ls "$tmp" | grep -q '\.tmp-' && fail "a temporary file was left"

"$PK" --help | grep -q "usage: ufault-pack" || fail "--help"
"$PK" --version | grep -q "^ufault-pack (ufault) " || fail "--version"
"$PK" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no arguments did not exit 2"
"$PK" --frame-size 1000 "$f" "$tmp/p4" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad --frame-size did not exit 2"
"$PK" --frame-size 4096K "$f" "$tmp/p4" 2>/dev/null || fail "--frame-size 4096K exited $?"
"$PK" --level 25 "$f" "$tmp/p4" >/dev/null 2>&1
[ $? -eq 2 ] || fail "--level 25 did not exit 2"
exit 0
