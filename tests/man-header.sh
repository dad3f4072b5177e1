#!/usr/bin/env bash
# Description: the man pages say what include/ufault.h says.  Every UF_MM_*
# flag the header defines is in uf_mm_create(3), in the SYNOPSIS and
# described.  fork(): the header says a child keeps its ufault mappings
# where the kernel grants the fork event, and that they are MADV_DONTFORK
# without it or with UF_MM_NO_FORK; uf_mm_create(3), uf_mmap(3) and
# ufault(7) say so too, and no paragraph of any page says MADV_DONTFORK or
# "not inherit" without naming that condition, except on the page of a
# function whose header comment says MADV_DONTFORK outright
# (uf_object_attach: a served object's mappings are never inherited).
# (The version every page carries: tests/version.sh.)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
header=$top/include/ufault.h
man=$top/man
bad=

# the header's text as one line per doc comment: " * " and breaks gone
comments() {
	awk '/^\/\*/ { c = 1; t = "" }
	     c { end = /\*\//; sub(/^ *\/?\*+\/? ?/, ""); sub(/\*\/.*/, ""); t = t " " $0 }
	     c && end { c = 0; gsub(/  +/, " ", t); print t }' "$header"
}
# the text of a man page's section SECTION, requests and fonts stripped
section() {
	awk -v s="$2" '/^\.SH / { on = ($2 == s) ; next } on' "$1" |
		sed -e 's/^\.[A-Z]* *//' -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' | tr '\n' ' '
}

# -- flags -------------------------------------------------------------------
flags=$(sed -n 's/^#define \(UF_MM_[A-Z_]*\)[[:space:]].*/\1/p' "$header")
[ -n "$flags" ] || { echo "no UF_MM_* flags found in $header"; exit 1; }
page=$man/man3/uf_mm_create.3
syn=$(section "$page" SYNOPSIS)
desc=$(section "$page" DESCRIPTION)
for f in $flags; do
	case " $syn " in *"$f"*) ;; *) bad="$bad
uf_mm_create.3: $f (include/ufault.h) is not in the SYNOPSIS" ;; esac
	grep -q "^\.BR\? $f\b" "$page" || bad="$bad
uf_mm_create.3: $f (include/ufault.h) is not described (no .B $f)"
	# and what the flag does, in the header's words, is there in substance
	case $f in
	UF_MM_NO_FORK)
		case $desc in *"$f keeps ufault memory out of fork children"*"MADV_DONTFORK"*) ;;
		*) bad="$bad
uf_mm_create.3: $f does not say it keeps ufault memory out of fork children (MADV_DONTFORK)" ;;
		esac ;;
	esac
done

# -- fork ----------------------------------------------------------------------
# what the header says (if it changes, this test and the pages change too)
comments | grep -q 'where the kernel grants UFFD_FEATURE_EVENT_FORK .*a child keeps its ufault mappings' ||
	bad="$bad
include/ufault.h: uf_mm_create() no longer says a child keeps its ufault mappings with the fork event"
comments | grep -q 'Without the fork event, or with UF_MM_NO_FORK, ufault memory is MADV_DONTFORK' ||
	bad="$bad
include/ufault.h: uf_mm_create() no longer says MADV_DONTFORK without the fork event or with UF_MM_NO_FORK"
comments | grep 'After fork()' | grep -q 'a child keeps its ufault mappings' ||
	bad="$bad
include/ufault.h: the top comment's fork() paragraph does not say a child keeps its ufault mappings"

# the pages that say what fork does to ufault memory say the child keeps it
for p in man3/uf_mm_create.3 man3/uf_mmap.3 man7/ufault.7; do
	t=$(sed -e 's/^\.[A-Z]* *//' -e 's/\\-/-/g' "$man/$p" | tr '\n' ' ')
	[[ $t =~ child[^.]*keeps[^.]*(mapping|memory) && $t =~ "fork event" ]] || bad="$bad
$p: does not say that a fork child keeps its ufault mappings where the fork event is granted"
done

# functions whose header comment says MADV_DONTFORK with no condition
outright=$(awk '/^\/\*\*/ { c = 1; t = ""; next }
	c && /\*\// { c = 0; want = 1; next }
	c { t = t " " $0; next }
	want && match($0, /uf_[a-z_]+\(/) {
		want = 0
		if (t ~ /MADV_DONTFORK/ && t !~ /UF_MM_NO_FORK|fork event/)
			print substr($0, RSTART, RLENGTH - 1)
	}' "$header")

# every paragraph that speaks of MADV_DONTFORK or "not inherit" names the
# condition: the fork event, or UF_MM_NO_FORK
for page in "$man"/man3/*.3 "$man"/man7/*.7; do
	name=$(basename "$page"); name=${name%.*}
	case " $outright " in *" $name "*) continue ;; esac
	out=$(awk '/^\.(PP|TP|SH|SS|IP|P|LP)( |$)/ { check(); t = ""; n = NR }
		{ t = t " " $0 }
		END { check() }
		function check() {
			if (t ~ /MADV_DONTFORK|not inherit/ && t !~ /UF_MM_NO_FORK|fork event|uf_object_attach/)
				printf "line %d:%s\n", n, substr(t, 1, 160)
		}' "$page")
	[ -z "$out" ] || bad="$bad
${page#"$man"/}: says MADV_DONTFORK / not inherited without the fork event or UF_MM_NO_FORK, $out"
done

if [ -n "$bad" ]; then
	echo "the man pages and include/ufault.h disagree:$bad"
	exit 1
fi
echo "ok: $(echo $flags | wc -w) UF_MM_* flags in uf_mm_create(3); fork as the header says it" \
	"(outright MADV_DONTFORK:$(echo " $outright"))"
