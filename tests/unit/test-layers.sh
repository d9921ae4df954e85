#!/usr/bin/env bash
# The #include edges of every C file of the tree follow scripts/layers.txt:
# no upward or sideways include, no include cycle between files or between
# directories (scripts/check-layers.py). And the checker can fail: a tree
# with a planted cycle and a planted upward include is refused.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
command -v python3 >/dev/null || skip_all "python3 not installed"
plan 3
out=$(python3 "$top_srcdir/scripts/check-layers.py" "$top_srcdir" 2>&1)
ok $? "the tree follows scripts/layers.txt"
printf '%s\n' "$out" | sed 's/^/# /'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/common" "$tmp/nccl-plugin/core" "$tmp/nccl-plugin/lanes"
cp "$top_srcdir/scripts/layers.txt" "$tmp/scripts/"
printf '#include "nccl-plugin/lanes/b.h"\n' >"$tmp/nccl-plugin/lanes/a.h"
printf '#include "nccl-plugin/lanes/a.h"\n' >"$tmp/nccl-plugin/lanes/b.h"
printf '#include "nccl-plugin/core/c.h"\n' >"$tmp/common/up.h"
printf '/* empty */\n' >"$tmp/nccl-plugin/core/c.h"
out=$(python3 "$top_srcdir/scripts/check-layers.py" "$tmp" 2>&1)
rc=$?
is "$rc $(printf '%s\n' "$out" | grep -c 'file include cycle: nccl-plugin/lanes/a.h -> nccl-plugin/lanes/b.h')" "1 1" \
	"a planted file-level cycle fails the check"
is "$(printf '%s\n' "$out" | grep -c 'common/up.h -> nccl-plugin/core/c.h: upward include')" "1" \
	"a planted upward include is named"
