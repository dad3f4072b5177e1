#!/usr/bin/env bash
# Description: the race finder can catch the race: with the truncate
# protocol broken on purpose (UFAULT_BREAK_PROTOCOL=1: fills skip the
# invalidate lock), ufault-stress must report stale pages within 60 s.
set -u
B=${B:-build}
out=$(UFAULT_BREAK_PROTOCOL=1 timeout 90 "$B/ufault-stress" --seconds 60 --target ufault 2>&1)
rc=$?
echo "$out" | tail -n 25
if [ $rc -eq 0 ]; then
	echo "ufault-stress passed with the protocol broken: it cannot see the race"
	exit 1
fi
if ! echo "$out" | grep -q "stale page"; then
	echo "ufault-stress failed, but not by finding a stale page (exit $rc)"
	exit 1
fi
echo "caught: the broken protocol gives stale pages"
