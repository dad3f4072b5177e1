#!/usr/bin/env bash
# Description: contrib/ufault-serve.service and contrib/ufault-serve@.service
# (docs/firecracker.md) pass `systemd-analyze verify` with no complaint (an
# unknown or misspelt key is only a warning there: any line naming a unit
# fails the test), with ExecStart pointed at the built ufault-serve; and
# every option their comments and docs/firecracker.md show is one that
# `ufault-serve --help` lists (or ufault-pack's, the jailer's, mount's,
# systemctl's: a short list below).  Skipped where systemd-analyze is not
# installed (the options are checked first).  Installs nothing and starts
# nothing.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-build}
case $B in /*) bin=$B/ufault-serve ;; *) bin=$top/$B/ufault-serve ;; esac
[ -x "$bin" ] || { echo "no $bin: build it first (make)"; exit 1; }
units="ufault-serve.service ufault-serve@.service"

# the options the units' comments and the guide show exist
help=$("$bin" --help)
# other programs' options the guide shows: jailer --uid/--gid/--new-pid-ns,
# mount --bind, systemctl --now, ufault-pack --threads (its own test checks it)
others=" --uid --gid --new-pid-ns --bind --now --threads "
check_options() {	# FILE TEXT
	for o in $(printf '%s\n' "$2" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		case $help in *"$o "*) continue ;; esac
		case $others in *" $o "*) continue ;; esac
		echo "$1: $o is not an option of ufault-serve"
		exit 1
	done
}
for u in $units; do
	check_options "contrib/$u" "$(grep '^#' "$top/contrib/$u")"
done
check_options docs/firecracker.md "$(cat "$top/docs/firecracker.md")"

command -v systemd-analyze >/dev/null || { echo "skip: systemd-analyze is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for u in $units; do
	sed "s#^ExecStart=/usr/local/bin/ufault-serve #ExecStart=$bin #" "$top/contrib/$u" >"$tmp/$u"
	grep -q "^ExecStart=$bin " "$tmp/$u" || { echo "$u: no ExecStart=/usr/local/bin/ufault-serve"; exit 1; }
done
# (the man page is not installed: --man=no; a template is verified as an instance)
status=0
systemd-analyze verify --man=no "$tmp/ufault-serve.service" "$tmp/ufault-serve@vm1.service" \
	>"$tmp/out" 2>&1 || status=$?
cat "$tmp/out"
if [ $status -ne 0 ] || grep -q 'ufault-serve' "$tmp/out"; then
	echo "systemd-analyze verify: exit $status, complaints above"
	exit 1
fi
echo "systemd-analyze verify: both units clean ($(systemd-analyze --version | head -n1))"
