#!/usr/bin/env bash
# Description: `ufault-bench --quick` prints its figures but no goal and no
# PASS/MISS verdict on them (at 8 MiB and one repeat they measure
# nothing), says so before the first row, and --check does not fail on
# them; without --quick the same cases print their verdicts.
set -u
b=${B:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$b/ufault-bench" --quick --check --only warm-seq --tmpfs-dir "$tmp" >"$tmp/quick" 2>&1
rc=$?
[ $rc = 77 ] && { tail -n1 "$tmp/quick"; echo "skip: ufault-bench: no userfaultfd here"; exit 77; }
[ $rc = 0 ] || { cat "$tmp/quick"; echo "ufault-bench --quick --check: exit $rc"; exit 1; }
grep -q 'smoke test.*no goals or verdicts' <(tr '\n' ' ' <"$tmp/quick") ||
	{ cat "$tmp/quick"; echo "--quick does not say it gives no verdicts"; exit 1; }
grep -q '^  warm-seq  ufault/tmpfs vs kernel/tmpfs' "$tmp/quick" ||
	{ cat "$tmp/quick"; echo "--quick: no ratio rows"; exit 1; }
if grep -Eq 'PASS|MISS|goal [<>]' "$tmp/quick"; then
	grep -En 'PASS|MISS|goal [<>]' "$tmp/quick"
	echo "--quick printed a goal or a verdict"
	exit 1
fi
"$b/ufault-bench" --size 8 --repeat 1 --only warm-seq --tmpfs-dir "$tmp" >"$tmp/full" 2>&1 ||
	{ cat "$tmp/full"; echo "ufault-bench --size 8 --repeat 1: failed"; exit 1; }
n=$(grep -Ec '^  warm-seq.*goal .* (PASS|MISS)$' "$tmp/full")
[ "$n" -ge 1 ] || { cat "$tmp/full"; echo "without --quick: no verdicts"; exit 1; }
echo "ok: --quick: $(grep -c '^  warm-seq' "$tmp/quick") ratios, no verdict; without: $n verdicts"
