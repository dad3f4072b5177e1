#!/bin/sh
# deps.sh - check that what the Redis tests need is here: redis-server
# (and redis-cli) for the tests' cluster, libhiredis-dev and pkg-config to
# build the Redis store.  Run by `make test` only, never by `make` or
# `make install`.  As root with apt-get, install what is missing (and stop
# the redis-server service Debian starts: the tests start their own
# servers); otherwise print the one command to run and fail, and
# `make test` goes on without the Redis tests.
missing=
command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 ||
	missing="$missing redis-server"
[ -f /usr/include/hiredis/hiredis.h ] || missing="$missing libhiredis-dev"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "redis/deps.sh: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -q && apt-get install -y -q $missing; } >/dev/null || exit 1
	case $missing in
	*redis-server*)
		if [ -d /run/systemd/system ]; then
			systemctl disable --now redis-server >/dev/null 2>&1
		else
			service redis-server stop >/dev/null 2>&1
		fi
		;;
	esac
	exit 0
fi
echo "redis/deps.sh: missing$missing; run: sudo apt-get install -y redis-server libhiredis-dev pkg-config" >&2
exit 1
