#!/usr/bin/env bash
# The plugin exports the ncclNet tables and nothing else, and loads with
# no undefined symbol outside glibc and protobuf-c (telemetry frames).
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=.}"
so="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
[ -f "$so" ] || skip_all "plugin not built ($so)"
command -v nm >/dev/null || skip_all "nm not installed"
plan 3
syms=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort | tr '\n' ' ')
is "$syms" "ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v12 ncclNetPlugin_v8 ncclNetPlugin_v9 " \
	"exported: ncclNetPlugin_v8..v12 only"
nm -D --defined-only "$so" | grep -q ' D ncclNetPlugin_v8$'
ok $? "the tables are data symbols, as NCCL's dlsym expects"
if nm -D --undefined-only "$so" | grep -q ' __asan_init'; then
	# a sanitizer build: its runtime intercepts libc, so symbols lose their versions
	skip "sanitizer build: undefined symbols are the sanitizer runtime's"
else
	und=$(nm -D --undefined-only "$so" | awk '{ print $2 }' | grep -v '@GLIBC' | grep -v '@LIBPROTOBUF_C' | grep -v '^_\(_gmon_start__\|ITM_\|_cxa_finalize\)' | tr '\n' ' ')
	is "$und" "" "no undefined symbols beyond glibc and protobuf-c"
fi
done_testing
