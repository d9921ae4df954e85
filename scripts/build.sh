#!/bin/sh
# Configures (once) and builds fabriciq out of tree.
#   scripts/build.sh           -> build/       (warnings as errors)
#   scripts/build.sh --asan    -> build-asan/  (also AddressSanitizer + UBSan)
# Logs: BUILDDIR/configure.out, BUILDDIR/make.out.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$top/build
extra=
if [ "${1:-}" = --asan ]; then
	dir=$top/build-asan
	extra=--enable-sanitizers
fi
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null 2>&1 || { echo "build: autogen.sh failed" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	# shellcheck disable=SC2086
	"$top/configure" --enable-werror $extra >configure.out 2>&1 ||
		{ tail -20 configure.out >&2; echo "build: configure failed (log: $dir/configure.out)" >&2; exit 1; }
fi
make -j"$(nproc)" >make.out 2>&1 ||
	{ grep -E 'error|Error' make.out | head -30 >&2; echo "build: make failed (log: $dir/make.out)" >&2; exit 1; }
echo "build: ok ($dir)" >&2
