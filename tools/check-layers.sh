#!/usr/bin/env bash
# check-layers.sh - does every file of src/ call only its own layer and the
# layers below it?  The layers are docs/design.md's ("Layers"); a lower
# layer reaches a higher one only through an ops table, so a call (or a
# reference: taking a function's address, reading a global) from a file to
# a non-static function or global defined in a file of a higher layer, or
# to a static inline of a higher layer's private header (src/LAYER/*.h),
# is an upward call.  And every walk of an object's mappings (obj->vmas) goes
# through cache/rmap.c.  Prints each breach and exits 1; exits 0 when there is
# none.
#
# Usage: tools/check-layers.sh [SRCDIR]  (default: src/ of this tree)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$top/src}

# The layers, top to bottom (docs/design.md's table): a file's layer is
# the folder it is in, src/LAYER/FILE.  "lib" is below everything: every
# layer may call it, and it calls no layer; a header at the top of src/
# is lib's too.
layers='as fault cache store engine lib'
declare -A rank name
r=0
for l in $layers; do
	r=$((r + 1)); rank[$l]=$r; name[$r]=$l
done

# the layer of a path under src/: its folder, or lib for src/*.h
layer_of() {
	local rel=${1#"$src"/}
	case $rel in
	*/*) echo "${rank[${rel%%/*}]:-}" ;;
	*) echo "${rank[lib]}" ;;
	esac
}

ctags --version 2>/dev/null | grep -q Universal ||
	{ echo "check-layers: needs universal-ctags" >&2; exit 2; }

status=0
shopt -s nullglob
sources=("$src"/*/*.c)
headers=("$src"/*.h "$src"/*/*.h)
for path in "${sources[@]}" "${headers[@]}"; do
	if [ -z "$(layer_of "$path")" ]; then
		echo "check-layers: ${path#"$top"/} is in no layer: its folder is not one of: $layers"
		status=1
	fi
done

# where each non-static function and global is defined (path under src/)
declare -A owner
while IFS=$'\t' read -r sym file rest; do
	case $rest in *"	file:"*) continue ;; esac	# static
	case $sym in uf_*|__uf_*) ;; *) continue ;; esac	# (the rest are static)
	owner[$sym]=${file#"$src"/}
done < <(ctags -o - --c-kinds=fv --fields=+K "${sources[@]}")

# a header's static inlines are its layer's (src/LAYER/NAME.h)
while IFS=$'\t' read -r sym file rest; do
	owner[$sym]=${file#"$src"/}
done < <(ctags -o - --c-kinds=f "${headers[@]}")

# A file's own symbols (statics included) shadow the others'.
count=0
for path in "${sources[@]}"; do
	f=${path#"$src"/}
	from=$(layer_of "$path")
	declare -A own=()
	while IFS=$'\t' read -r sym _; do own[$sym]=1; done \
		< <(ctags -o - --c-kinds=fvlz "$path")
	# comments out, newlines kept; then every identifier with its line
	while IFS=: read -r lineno sym; do
		[ -z "${own[$sym]:-}" ] || continue
		to_file=${owner[$sym]:-}
		[ -n "$to_file" ] && [ "$to_file" != "$f" ] || continue
		to=$(layer_of "$src/$to_file")
		[ -n "$to" ] || continue
		if [ "$to" -lt "$from" ]; then
			echo "src/$f:$lineno: $sym() is src/$to_file's (${name[$from]} -> ${name[$to]})"
			count=$((count + 1))
		fi
	done < <(perl -0777 -pe 's{/\*.*?\*/}{ $& =~ tr/\n//cdr }gse; s{//[^\n]*}{}g' "$path" |
		 grep -noE '\b[A-Za-z_][A-Za-z0-9_]*\b' | sort -t: -k2,2 -u | sort -t: -k1,1n)
	unset own
done

# A file includes its own layer's private header and those below it
# (src/LAYER/NAME.h), never a higher layer's.
for path in "${sources[@]}" "${headers[@]}"; do
	f=${path#"$src"/}
	from=$(layer_of "$path")
	while IFS=: read -r lineno inc; do
		to=$(layer_of "$src/$inc")
		if [ -n "$to" ] && [ -n "$from" ] && [ "$to" -lt "$from" ]; then
			echo "src/$f:$lineno: includes src/$inc (${name[$from]} -> ${name[$to]})"
			count=$((count + 1))
		fi
	done < <(grep -nE '^#[[:space:]]*include[[:space:]]*"[a-z]+/' "$path" |
		 sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/' || true)
done

# An object's mappings are linked, unlinked and walked in one place:
# cache/rmap.c, and uf_rmap_foreach() in src/cache/cache.h.
for path in "${sources[@]}"; do
	f=${path#"$src"/}
	[ "$f" != cache/rmap.c ] || continue
	while IFS=: read -r lineno _; do
		echo "src/$f:$lineno: obj_next used outside rmap.c (walk obj->vmas with uf_rmap_foreach)"
		count=$((count + 1))
	done < <(perl -0777 -pe 's{/\*.*?\*/}{ $& =~ tr/\n//cdr }gse; s{//[^\n]*}{}g' "$path" |
		 grep -nw obj_next || true)
done

if [ "$count" -gt 0 ]; then
	echo "check-layers: $count found: a lower layer reaches a higher one only" \
		"through an ops table, includes only its own and lower layers' headers," \
		"and obj->vmas only through rmap.c" \
		"(docs/design.md, Layers)"
	status=1
fi
exit $status
