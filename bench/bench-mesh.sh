#!/usr/bin/env bash
# Mesh clock solve and peer assignment at scale (controller/mesh, peers).
#
# Solve: 1k, 10k and 100k hosts x 10 random peers, error bounds 50 ns..5 us,
# against a dense Cholesky solve of the same equations at 2000 hosts in the
# same run (goal: < 1 s at 100k hosts). Peers: 100k NICs on 8 rails, k 10,
# against full rendezvous hashing. Arguments go to bench-mesh (see its
# header); BENCH_MESH_ARGS too.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
BIN="$top_builddir/bench/bench-mesh"
[ -x "$BIN" ] || { echo "bench-mesh: $BIN not built (make check_PROGRAMS, or make bench)"; exit 1; }
# shellcheck disable=SC2086 # BENCH_MESH_ARGS is a word list on purpose
exec "$BIN" ${BENCH_MESH_ARGS:-} "$@"
