#!/usr/bin/env bash
# check-layers.sh - does every file of src/ call only its own layer and the
# layers below it?  The layers are docs/design.md's ("Layers"); a lower
# layer reaches a higher one only through an ops table, so a call (or a
# reference: taking a function's address, reading a global) from a file to
# a non-static function or global defined in a file of a higher layer, or
# to a static inline of src/internal.h that serves a higher layer, is an
# upward call.  And every walk of an object's mappings (obj->vmas) goes
# through rmap.c.  Prints each breach and exits 1; exits 0 when there is
# none.
#
# Usage: tools/check-layers.sh [SRCDIR]  (default: src/ of this tree)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$top/src}

# The layers, top to bottom (docs/design.md's table).  "shared" is below
# everything: every layer may call it, and it calls no layer.
layers='
1 address-space	mm.c vma.c nonlinear.c as.c serve.c attach.c
2 fault-path	fault.c
3 page-cache	object.c rmap.c filemap.c readahead.c truncate.c writeback.c
		reclaim.c huge.c populate.c pagemap.c worker.c workingset.c
4 stores	store_file.c
5 engine	uffd.c
6 shared	internal.h lockdep.c lockdep.h lockorder.h compat.h pid.c thread.c nocow.c
'

# The static inlines of internal.h and whose structures they serve (a file
# above); those every layer may use are "internal.h" (shared).
inlines='
uf_protocol_broken	internal.h
size_pages		internal.h
uf_object_orphaned	object.c
uf_vma_uffd		rmap.c
uf_count_sigbus_cause	internal.h
uf_vma_table_lock	rmap.c
'

ctags --version 2>/dev/null | grep -q Universal ||
	{ echo "check-layers: needs universal-ctags" >&2; exit 2; }

declare -A rank name
r=0
while read -r line; do
	[ -n "$line" ] || continue
	set -- $line
	case $1 in
	[0-9]*) r=$1; name[$r]=$2; shift 2 ;;
	esac
	for f; do rank[$f]=$r; done
done <<<"$layers"

status=0
files=()
for path in "$src"/*.c "$src"/*.h; do
	f=${path##*/}
	if [ -z "${rank[$f]:-}" ]; then
		echo "check-layers: src/$f is in no layer: add it to the table in $0 and to docs/design.md"
		status=1
	fi
	files+=("$path")
done

# where each non-static function and global is defined
declare -A owner
while IFS=$'\t' read -r sym file rest; do
	case $rest in *"	file:"*) continue ;; esac	# static
	case $sym in uf_*|__uf_*) ;; *) continue ;; esac	# (the rest are static)
	owner[$sym]=${file##*/}
done < <(ctags -o - --c-kinds=fv --fields=+K "$src"/*.c)

declare -A inline_owner
while read -r sym f; do
	[ -n "$sym" ] && inline_owner[$sym]=$f
done <<<"$inlines"
while IFS=$'\t' read -r sym file rest; do
	if [ -z "${inline_owner[$sym]:-}" ]; then
		echo "check-layers: internal.h: static inline $sym has no owner in the table in $0"
		status=1
		continue
	fi
	owner[$sym]=${inline_owner[$sym]}
done < <(ctags -o - --c-kinds=f "$src"/internal.h)

# A file's own symbols (statics included) shadow the others'.
count=0
for path in "$src"/*.c; do
	f=${path##*/}
	from=${rank[$f]:-}
	[ -n "$from" ] || continue
	declare -A own=()
	while IFS=$'\t' read -r sym _; do own[$sym]=1; done \
		< <(ctags -o - --c-kinds=fvlz "$path")
	# comments out, newlines kept; then every identifier with its line
	while IFS=: read -r lineno sym; do
		[ -z "${own[$sym]:-}" ] || continue
		to_file=${owner[$sym]:-}
		[ -n "$to_file" ] && [ "$to_file" != "$f" ] || continue
		to=${rank[$to_file]:-}
		[ -n "$to" ] || continue
		if [ "$to" -lt "$from" ]; then
			echo "src/$f:$lineno: $sym() is src/$to_file's (${name[$from]} -> ${name[$to]})"
			count=$((count + 1))
		fi
	done < <(perl -0777 -pe 's{/\*.*?\*/}{ $& =~ tr/\n//cdr }gse; s{//[^\n]*}{}g' "$path" |
		 grep -noE '\b[A-Za-z_][A-Za-z0-9_]*\b' | sort -t: -k2,2 -u | sort -t: -k1,1n)
	unset own
done

# An object's mappings are linked, unlinked and walked in one place:
# rmap.c, and uf_rmap_foreach() in internal.h.
for path in "$src"/*.c; do
	f=${path##*/}
	[ "$f" != rmap.c ] || continue
	while IFS=: read -r lineno _; do
		echo "src/$f:$lineno: obj_next used outside rmap.c (walk obj->vmas with uf_rmap_foreach)"
		count=$((count + 1))
	done < <(perl -0777 -pe 's{/\*.*?\*/}{ $& =~ tr/\n//cdr }gse; s{//[^\n]*}{}g' "$path" |
		 grep -nw obj_next || true)
done

if [ "$count" -gt 0 ]; then
	echo "check-layers: $count found: a lower layer reaches a higher one only" \
		"through an ops table, and obj->vmas only through rmap.c" \
		"(docs/design.md, Layers)"
	status=1
fi
exit $status
