#!/usr/bin/env bash
# The profiler plugin exports the ncclProfiler tables and nothing else, as
# data symbols, and needs nothing beyond glibc and protobuf-c (libfqbase).
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=.}"
so="$top_builddir/nccl-profiler/.libs/libnccl-profiler-fabriciq.so"
[ -f "$so" ] || skip_all "profiler plugin not built ($so)"
command -v nm >/dev/null || skip_all "nm not installed"
plan 3
syms=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort | tr '\n' ' ')
is "$syms" "ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 " \
	"exported: ncclProfiler_v1..v6 only"
[ "$(nm -D --defined-only "$so" | grep -c ' D ncclProfiler_v[1-6]$')" -eq 6 ]
ok $? "the tables are data symbols, as NCCL's dlsym expects"
if nm -D --undefined-only "$so" | grep -q ' __asan_init'; then
	skip "sanitizer build: undefined symbols are the sanitizer runtime's"
else
	und=$(nm -D --undefined-only "$so" | awk '{ print $2 }' | grep -v '@GLIBC' | grep -v '@LIBPROTOBUF_C' | grep -v '^_\(_gmon_start__\|ITM_\|_cxa_finalize\)' | tr '\n' ' ')
	is "$und" "" "no undefined symbols beyond glibc and protobuf-c"
fi
done_testing
