#!/usr/bin/env bash
# Description: ufault-bench --only ws --store replays a working set from an
# object in a Redis Cluster beside the minimal loop, and prints ufault's
# replay over the minimal replay measured in the same rounds as one ratio,
# and the reads the cluster served for each (a smoke test: --quick, one
# repeat; the figures are not judged); the object is removed after.
set -u
B=${B:-build}
if [ -z "${UFAULT_TEST_REDIS:-}" ]; then
	echo "skip: no test cluster (UFAULT_TEST_REDIS unset: run under tests/redis-cluster run)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$B/ufault-bench" --quick --repeat 1 --only ws --tmpfs-dir "$tmp" \
	--store "$UFAULT_TEST_REDIS/benchws-$$" >"$tmp/out" 2>&1
rc=$?
[ $rc = 77 ] && { cat "$tmp/out"; echo "skip: ufault-bench: no userfaultfd here"; exit 77; }
[ $rc = 0 ] || { cat "$tmp/out"; echo "ufault-bench --only ws --store: exit $rc"; exit 1; }
cat "$tmp/out"
grep -Eq '^redis  minimal replay, measured: [0-9.]+ ms, [0-9]+ touches .*\(minimal/replay[^)]*\) [0-9.]+x' \
	"$tmp/out" || { echo "no measured minimal replay from Redis"; exit 1; }
line=$(grep '^redis  reads the cluster served' "$tmp/out") ||
	{ echo "no reads the cluster served"; exit 1; }
# ufault's replay: HMGETs (one per extent a batch touches), never one per
# run or a page alone; the minimal loop: one HMGET per run at least
set -- $(sed -E 's/.*replay ([0-9]+) HMGETs, ([0-9]+) HGETs; the minimal replay.s ([0-9]+) HMGETs, ([0-9]+) HGETs; ([0-9]+) recorded runs.*/\1 \2 \3 \4 \5/' <<<"$line")
[ $# = 5 ] || { echo "cannot read: $line"; exit 1; }
[ "$1" -gt 0 ] && [ "$1" -lt "$5" ] && [ "$2" = 0 ] ||
	{ echo "ufault's replay: $1 HMGETs and $2 HGETs for $5 runs"; exit 1; }
[ "$3" -ge "$5" ] || { echo "minimal replay: $3 HMGETs for $5 runs"; exit 1; }
[ -z "$(ls -A "$tmp" | grep -v '^out$')" ] || { ls "$tmp"; echo "files left in the tmpfs dir"; exit 1; }
