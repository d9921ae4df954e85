#!/usr/bin/env bash
# bench/bench-ecmp.sh at a small size (issue 20's fair ECMP benchmark):
# 4 hosts under 2 leaves, 2 equal spines at 40 Mbit/s, two jobs (an
# alltoall on rail 0, a ring allreduce on rail 1), 2 lanes per connection,
# 2 trials of the seven variants (steer-noadv's and steer-ctl's jobs
# under srun with the agents and the controller). Checks the mechanics, not the ratios
# (those are the benchmark's): every run completes with every iteration
# verified, every lane that crosses the spines is pinned by its seed and
# the leaf's FIB routes it there, the optimum's placement is perfectly
# even and the seed's is not better, and the summary is printed.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
command -v python3 >/dev/null || skip_all "needs python3"
plan 7
tb_setup ecm
out=$FQTB_STATE.out
trap 'rc=$?; rm -f "$out"; (exit $rc); tb_teardown' EXIT
env BENCH_ECMP_PREFIX="$TB_PFX" BENCH_ECMP_HOSTS=4 BENCH_ECMP_LEAVES=2 BENCH_ECMP_SPINES=2 \
	BENCH_ECMP_RAILS=2 BENCH_ECMP_LANES=2 BENCH_ECMP_SIZE=1M BENCH_ECMP_ITERS=3 BENCH_ECMP_TRIALS=2 \
	BENCH_ECMP_SEED=7 BENCH_ECMP_VERBOSE=1 "$top_srcdir/bench/bench-ecmp.sh" >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out"
ok $rc "the benchmark ran every variant of every trial (exit $rc)"

# 2 trials x 7 variants, each a positive aggregate busbw
rows=$(awk '$1 ~ /^[0-9]+$/ && NF == 11 && $2 > 0 && $3 > 0 && $4 > 0 && $5 > 0 && $6 > 0 && $7 > 0 && $8 > 0' "$out" | wc -l)
is "$rows" 2 "a row per trial, every variant with a busbw"

# Lanes crossing the spines: each host's 2 peers under the other leaf, per
# job: 4 x 2 = 8 connections a job, 16 for two; ecmp-1 a lane each, the
# other six variants 2 each: 16 + 6 x 32 = 208 a trial.
n=$(grep -c ' lanes pinned and verified in the FIB' "$out")
is "$n" 14 "each of the 14 runs pinned its lanes"
sum=$(grep -o ': [0-9]* lanes pinned and verified' "$out" | awk '{ s += $2 } END { print s + 0 }')
is "$sum" 416 "every lane that crosses the spines pinned and found in its leaf's FIB (16 + 6 x 32 per trial)"

# The optimum's skew is 1.00 (each connection's 2 lanes on the 2 spines);
# the seed draw's busiest link is at least the mean.
opt=$(grep -c '^# opt[a-z-]* seed [0-9]*: 32 lanes pinned and verified in the FIB (busiest link / mean 1.00)' "$out")
is "$opt" 4 "the optimum (split evenly and steered) pinned all 32 lanes in both trials, every link as loaded as the mean"
skews=$(awk '$1 ~ /^[0-9]+$/ && NF == 11 && $9 >= 1 && $10 >= 1' "$out" | wc -l)
is "$skews" 2 "the seed's draws: busiest link >= mean in both trials"

grep -q '^steer / opt-steer: ' "$out" && grep -q '^steer / ecmp-1: ' "$out" &&
	grep -q '^trials where steer < ecmp-1: [0-9]* of 2' "$out" && grep -q '^steer-ctl / opt-steer: ' "$out" &&
	grep -q '^steer-ctl / steer: ' "$out" && grep -q '^trials where steer-ctl < steer: [0-9]* of 2' "$out" &&
	grep -q '^steer-ctl / steer-noadv: ' "$out" && grep -q '^trials where steer-ctl < steer-noadv: [0-9]* of 2' "$out" &&
	grep -q "^the controller's collision advice in steer-ctl: [0-9]* taken by the agents over 2 runs" "$out" &&
	grep -q "^the controller's collision advice in steer-noadv: [0-9]* taken by the agents over 2 runs" "$out"
ok $? "the summary: the steering variants against each baseline, their losses, the advice taken"
