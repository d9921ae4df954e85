#!/usr/bin/env bash
# Localisation campaign at scale: tests/scenarios/test-localise.sh on
# 8 hosts x 2 rails, 4 leaves, 4 spines, 40 trials (BENCH_LOC to change:
# "HOSTS RAILS LEAVES SPINES TRIALS SEED"), one random fault each (a
# leaf-spine cable down or lossy, a loaded spine, a host cable down or
# flapping, a NIC disabled; every even trial with a job running). Prints
# every trial and the summary: accuracy (the injected component blamed and
# nothing else), ambiguity, p50/p90 time from injection to blame, and in
# the same run the naive baseline (the node with the most DOWN paths).
# Goals: accuracy >= 95 %, p90 time to blame <= 5 s.
# Needs root and namespaces (the emulated cluster); says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
out=$(mktemp)
trap 'rm -f "$out"' EXIT
FQ_LOC=${BENCH_LOC:-8 2 4 4 40 $(date +%s)} FQ_LOC_KINDS="link-down link-lossy spine-slow host-down host-flap nic-down" bash "$top_srcdir/tests/scenarios/test-localise.sh" >"$out" 2>&1
rc=$?
if grep -q '^1\.\.0 # SKIP' "$out"; then
	echo "bench-localise: skipped ($(sed -n 's/^1\.\.0 # SKIP //p' "$out"))"
	exit 0
fi
echo "bench-localise: ${BENCH_LOC:-8 2 4 4 40} (hosts rails leaves spines trials)"
grep -E '^# (trial|  )' "$out" | sed 's/^# /  /'
grep -E '^(not )?ok ' "$out" | sed 's/^/  /'
sum=$(sed -n 's/^# trials /trials /p' "$out" | tail -1)
[ -n "$sum" ] || { echo "bench-localise: no summary (exit $rc)"; tail -20 "$out"; exit 1; }
echo "bench-localise: $sum"
python3 - "$sum" <<'PY'
import re, sys
s = sys.argv[1]
acc = float(re.search(r"accuracy \d+/\d+ = ([\d.]+) %", s).group(1))
p90 = re.search(r"p90 (\d+|None) ms", s).group(1)
naive = float(re.search(r"naive \d+/\d+ = ([\d.]+) %", s).group(1))
print(f"bench-localise: accuracy {acc:.1f} % (goal >= 95), naive baseline {naive:.1f} %, "
      f"ratio {acc / naive if naive else float('inf'):.2f}x; p90 time to blame {p90} ms (goal <= 5000)")
PY
exit 0
