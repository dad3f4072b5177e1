#!/usr/bin/env bash
# Description: every public function in include/ufault.h,
# include/ufault-redis.h, include/ufault-pack.h and include/ufault-http.h
# has a man page, and
# (where man-db is installed) every page, man1 to man7, renders without
# warnings.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
if command -v man >/dev/null 2>&1; then
	exec "$top/tools/check-man.sh" --lint
fi
exec "$top/tools/check-man.sh"
