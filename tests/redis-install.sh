#!/usr/bin/env bash
# Description: `make install PREFIX=DIR` installs ufault-redis.h,
# libufault-redis.so.0/.a, ufault-redis.pc and ufault-redis-cluster with
# its man page; a program outside the tree
# builds with `cc prog.c $(pkg-config --cflags --libs ufault-redis)`, runs
# against the shared libraries and round-trips bytes through the cluster.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
[ -n "${UFAULT_TEST_REDIS:-}" ] || { echo "skip: no cluster (UFAULT_TEST_REDIS unset)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top" install PREFIX="$tmp/prefix" B="${B:-build}" CC="${CC:-cc}" SAN="${SAN:-}" >/dev/null
for f in include/ufault-redis.h include/ufault.h lib/libufault-redis.so.0 lib/libufault-redis.so \
	 lib/libufault-redis.a lib/pkgconfig/ufault-redis.pc bin/ufault-redis-cluster \
	 share/man/man1/ufault-redis-cluster.1; do
	[ -e "$tmp/prefix/$f" ] || { echo "missing $f"; exit 1; }
done
cat > "$tmp/prog.c" <<'PROG'
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <ufault-redis.h>

int main(int argc, char **argv)
{
	struct uf_mm *mm;
	struct uf_object *obj;
	char buf[16] = "";
	int ret;

	if (argc != 2 || uf_mm_create(NULL, &mm))
		return 77;
	if ((ret = uf_redis_open(mm, argv[1], O_RDWR | O_CREAT, &obj)) ||
	    (ret = uf_object_truncate(obj, 8192)) ||
	    uf_object_pwrite(obj, "installed", 10, 4096) != 10 || (ret = uf_object_sync(obj))) {
		fprintf(stderr, "write: %s\n", strerror(-ret));
		return 1;
	}
	uf_object_put(obj);
	if ((ret = uf_redis_open(mm, argv[1], O_RDONLY, &obj)) ||
	    uf_object_pread(obj, buf, 10, 4096) != 10) {
		fprintf(stderr, "read: %s\n", strerror(-ret));
		return 1;
	}
	uf_object_put(obj);
	uf_mm_destroy(mm);
	if ((ret = uf_redis_remove(argv[1]))) {
		fprintf(stderr, "remove: %s\n", strerror(-ret));
		return 1;
	}
	puts(buf);
	return strcmp(buf, "installed") != 0;
}
PROG
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs ufault-redis)
for l in -lufault-redis -lufault -lhiredis; do
	case " $flags " in *" $l "*) ;; *) echo "pkg-config gives '$flags': no $l"; exit 1 ;; esac
done
cc "$tmp/prog.c" -o "$tmp/prog" $flags ${SAN:+-fsanitize=$SAN}
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/prog" "$UFAULT_TEST_REDIS/install-test-$$")
[ "$out" = "installed" ] || { echo "got '$out'"; exit 1; }
LD_LIBRARY_PATH="$tmp/prefix/lib" ldd "$tmp/prog" | grep -q "libufault-redis.so.0 => $tmp/prefix/lib" ||
	{ echo "not linked to the installed libufault-redis.so.0"; exit 1; }
# the core library does not depend on hiredis
! ldd "$tmp/prefix/lib/libufault.so.0" | grep -q hiredis || { echo "libufault.so.0 links hiredis"; exit 1; }
echo "ok: $out"
