#!/usr/bin/env bash
# Description: no file of src/ calls a function of a layer above its own
# (docs/design.md, Layers): tools/check-layers.sh lists any that does.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v ctags >/dev/null 2>&1 || ! ctags --version 2>/dev/null | grep -q Universal; then
	echo "skip: tools/check-layers.sh needs universal-ctags"
	exit 77
fi
exec "$top/tools/check-layers.sh"
