#!/usr/bin/env bash
# Description: tools/ufault-redis-cluster starts a local Redis Cluster in a
# temp dir on free loopback ports (PORT given), status says all six nodes
# are up (3 masters, 3 replicas), ufault-cp copies a file in through the
# URL in DIR/env and back byte for byte, stop ends every server by its pid
# (status then says down and exits 1); usage errors exit 2, --help lists
# every command, a non-empty DIR is refused.
set -u
B=${B:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
TOOL=$top/tools/ufault-redis-cluster
CP=$B/ufault-cp
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "skip: redis-server or redis-cli missing (apt-get install redis-server)"
	exit 77
fi
if [ ! -x "$CP" ]; then
	echo "skip: $CP not built (no hiredis)"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
dir=$tmp/cluster
cleanup() {	# servers left by a failure: by their pids only
	local f
	for f in "$dir"/*/pid; do [ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# six free ports and their bus ports, in 12000-15999 (apart from the range
# the tool picks by itself, which a concurrent test cluster uses)
base=
for try in $(seq 50); do
	b=$((12000 + (RANDOM % 390) * 10)) ok=1
	for p in $(seq $b $((b + 5))); do
		port_free $p && port_free $((p + 10000)) || { ok=0; break; }
	done
	[ $ok = 1 ] && { base=$b; break; }
done
[ -n "$base" ] || fail "no six free loopback ports"

"$TOOL" >/dev/null 2>&1
[ $? = 2 ] || fail "no arguments: exit status not 2"
"$TOOL" start >/dev/null 2>&1
[ $? = 2 ] || fail "start without DIR: exit status not 2"
"$TOOL" --help >"$tmp/out" 2>&1 || fail "--help exited $?"
for c in 'start DIR \[PORT\]' 'stop DIR' 'status DIR' 'restart DIR PORT' 'wait DIR'; do
	grep -q "ufault-redis-cluster $c" "$tmp/out" || fail "--help does not list $c"
done

"$TOOL" start "$dir" "$base" >"$tmp/out" 2>&1 || fail "start exited $?"
grep -q "6 nodes ready on 127.0.0.1 ports $base-$((base + 5))" "$tmp/out" || fail "start said"
[ -f "$dir/env" ] || fail "no $dir/env"
"$TOOL" status "$dir" >"$tmp/out" 2>&1 || fail "status of a running cluster exited $?"
[ "$(grep -c ' up  master$' "$tmp/out")" = 3 ] || fail "status: not 3 masters up"
[ "$(grep -c ' up  replica$' "$tmp/out")" = 3 ] || fail "status: not 3 replicas up"
grep -q 'cluster_state: ok' "$tmp/out" || fail "status: cluster_state not ok"
mkdir "$tmp/full" && : > "$tmp/full/x"
"$TOOL" start "$tmp/full" >/dev/null 2>&1 && fail "start in a non-empty directory succeeded"

# the store through the URL the tool wrote
(
	# shellcheck disable=SC1091
	. "$dir/env"
	f=$tmp/src
	head -c $((3 * 1048576 + 777)) /dev/urandom > "$f"
	"$CP" -q "$f" "$UFAULT_REDIS_URL/tool-test" || exit 1
	"$CP" -q "$UFAULT_REDIS_URL/tool-test" "$tmp/back" || exit 2
	cmp "$f" "$tmp/back" || exit 3
) || fail "ufault-cp round trip through the cluster: step $? failed"

pids=$(cat "$dir"/*/pid)
[ "$(echo "$pids" | wc -w)" = 6 ] || fail "not 6 pid files: $pids"
"$TOOL" stop "$dir" || fail "stop exited $?"
for pid in $pids; do
	kill -0 "$pid" 2>/dev/null && fail "server $pid still runs after stop"
done
"$TOOL" status "$dir" >"$tmp/out" 2>&1 && fail "status of a stopped cluster exited 0"
[ "$(grep -c ' down$' "$tmp/out")" = 6 ] || fail "status after stop: not 6 down"
echo "ok: start on ports $base-$((base + 5)), status, ufault-cp round trip, stop by pid"
