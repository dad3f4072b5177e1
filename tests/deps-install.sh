#!/usr/bin/env bash
# Description: redis/deps.sh, which `make test` runs, says what it is about
# to install (the packages and the apt-get command) before apt-get runs,
# installs exactly those, and when apt-get fails shows apt's error and
# fails; not as root it installs nothing and says what to run.  Run with
# stubs of id and apt-get on a PATH without redis-server or pkg-config,
# and no hiredis.h, so nothing is installed for real.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
for c in mktemp tail sed rm cat; do ln -s "$(command -v $c)" "$tmp/bin/$c"; done
stub() { printf '#!/bin/sh\n%s\n' "$2" >"$tmp/bin/$1"; chmod +x "$tmp/bin/$1"; }
run() { env -i PATH="$tmp/bin" TMPDIR="$tmp" UF_DEPS_HIREDIS_H="$tmp/none.h" \
	/bin/sh "$top/redis/deps.sh" >"$tmp/out" 2>"$tmp/err"; }
want="redis-server libhiredis-dev pkg-config"

# root, apt-get fails
stub id 'echo 0'
stub apt-get "echo \"apt-get \$*\" >>$tmp/apt.log
case \$1 in update) echo 'Hit:1 http://deb.debian.org/debian stable InRelease';;
install) echo 'Reading package lists...'; echo 'E: Unable to locate package redis-server' >&2; exit 100;; esac"
run; rc=$?
[ $rc = 1 ] || { cat "$tmp/err"; echo "apt-get failed, deps.sh exit $rc, not 1"; exit 1; }
said=$(grep -n "installing them now" "$tmp/err" | cut -d: -f1)
err=$(grep -n "E: Unable to locate package redis-server" "$tmp/err" | cut -d: -f1)
[ -n "$said" ] || { cat "$tmp/err"; echo "deps.sh did not say what it installs"; exit 1; }
grep -q "need $want; as root" "$tmp/err" || { cat "$tmp/err"; echo "not the packages: $want"; exit 1; }
grep -q "apt-get update && apt-get install -y $want\$" "$tmp/err" ||
	{ cat "$tmp/err"; echo "deps.sh did not show the apt-get command"; exit 1; }
[ -n "$err" ] || { cat "$tmp/err"; echo "apt's error was not shown"; exit 1; }
[ "$said" -lt "$err" ] || { cat "$tmp/err"; echo "said what it installs after apt-get ran"; exit 1; }

# root, apt-get works: it is asked for what was announced
rm -f "$tmp/apt.log"
stub apt-get "echo \"apt-get \$*\" >>$tmp/apt.log; echo 'Setting up redis-server'"
run; rc=$?
[ $rc = 0 ] || { cat "$tmp/err"; echo "apt-get worked, deps.sh exit $rc"; exit 1; }
grep -qx "apt-get install -y -q $want" "$tmp/apt.log" ||
	{ cat "$tmp/apt.log"; echo "apt-get was not asked for: $want"; exit 1; }
[ ! -s "$tmp/out" ] && ! grep -q 'Setting up' "$tmp/err" ||
	{ cat "$tmp/out" "$tmp/err"; echo "apt's output shown although it worked"; exit 1; }

# not root: nothing installed, the command to run said
rm -f "$tmp/apt.log"
stub id 'echo 1000'
run; rc=$?
[ $rc = 1 ] && [ ! -e "$tmp/apt.log" ] && grep -q "run: sudo apt-get install" "$tmp/err" ||
	{ cat "$tmp/err"; echo "not root: exit $rc, apt-get called: $([ -e "$tmp/apt.log" ] && echo yes || echo no)"; exit 1; }
echo "ok: announced, then installed $want; apt's error shown when it failed"
