#!/bin/sh
# deps.sh - check that what the Redis tests need is here: redis-server
# (and redis-cli) for the tests' cluster, libhiredis-dev and pkg-config to
# build the Redis store.  Run by `make test` only, never by `make` or
# `make install`.  As root with apt-get, install what is missing (and stop
# the redis-server service Debian starts: the tests start their own
# servers), saying first what it installs and showing apt's last lines if
# apt-get fails; otherwise print the one command to run and fail, and
# `make test` goes on without the Redis tests.
#
# UF_DEPS_HIREDIS_H: where hiredis.h is looked for (tests/deps-install.sh)
missing=
command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 ||
	missing="$missing redis-server"
[ -f "${UF_DEPS_HIREDIS_H:-/usr/include/hiredis/hiredis.h}" ] || missing="$missing libhiredis-dev"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	# said before it is done, with what is run; apt's output is kept and
	# shown if it fails
	echo "redis/deps.sh: the Redis tests need$missing; as root, installing them now:" >&2
	echo "redis/deps.sh:   apt-get update && apt-get install -y$missing" >&2
	echo "redis/deps.sh: (\`make test HIREDIS=no\` skips this and the Redis tests)" >&2
	log=$(mktemp "${TMPDIR:-/tmp}/ufault-deps.XXXXXX") || exit 1
	export DEBIAN_FRONTEND=noninteractive
	if ! { apt-get update -q && apt-get install -y -q $missing; } >"$log" 2>&1; then
		echo "redis/deps.sh: apt-get failed; its last lines:" >&2
		tail -n 25 "$log" | sed 's/^/  | /' >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
	case $missing in
	*redis-server*)
		if [ -d /run/systemd/system ]; then
			systemctl disable --now redis-server >/dev/null 2>&1
		else
			service redis-server stop >/dev/null 2>&1
		fi
		;;
	esac
	echo "redis/deps.sh: installed$missing" >&2
	exit 0
fi
echo "redis/deps.sh: missing$missing; run: sudo apt-get install -y redis-server libhiredis-dev pkg-config" >&2
exit 1
