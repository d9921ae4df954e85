#!/bin/sh
# Configures (once) and builds fabriciq in the source tree. Extra arguments
# go to configure, e.g. scripts/build.sh --enable-sanitizers.
set -eu
cd "$(dirname "$0")/.."
[ -x configure ] || ./autogen.sh >/dev/null
if [ ! -f Makefile ] || [ $# -gt 0 ]; then
	./configure --enable-werror "$@" >build-configure.log 2>&1 ||
		{ tail -20 build-configure.log >&2; exit 1; }
fi
make -j"$(nproc)" >build-make.log 2>&1 || { grep -E 'error|Error' build-make.log | head -30 >&2; exit 1; }
echo "build: ok" >&2
