#!/usr/bin/env bash
# Description: contrib/ufault-serve@.service, with ExecStart pointed at the built ufault-serve, passes systemd-analyze verify (skipped where systemd is not installed)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-build}
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "skip: systemd-analyze is not installed here"
	exit 77
fi
bin=$(cd "$B" && pwd)/ufault-serve
[ -x "$bin" ] || { echo "no $bin: build first"; exit 1; }
dir=$(mktemp -d /tmp/ufault-unit-XXXXXX)
trap 'rm -rf "$dir"' EXIT
# an instance of the template, as systemd would load it
sed "s|/usr/local/bin/ufault-serve|$bin|" "$top/contrib/ufault-serve@.service" \
	>"$dir/ufault-serve@vm1.service"
out=$(cd "$dir" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
	"$dir/ufault-serve@vm1.service" 2>&1) || {
	echo "$out"
	echo "systemd-analyze verify failed"
	exit 1
}
# warnings about this unit are failures too (others' units are not ours)
if echo "$out" | grep -q "ufault-serve@vm1"; then
	echo "$out"
	echo "systemd-analyze verify warned about the unit"
	exit 1
fi
echo "$out"
echo "systemd-analyze verify: contrib/ufault-serve@.service is clean"
