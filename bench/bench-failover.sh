#!/usr/bin/env bash
# Control mode against monitor mode when a rail dies under a job: 4 hosts,
# 2 rails (host links shaped to BENCH_FO_RATE, default 50mbit, so the wire
# and not the 2 shared CPUs sets the pace), a ring allreduce of 1 MiB with
# every iteration verified (32 KiB chunks, so each ring step's 256 KiB
# slice is striped over both rails), for about BENCH_FO_SECONDS (default 36) s, with
# rail1 of n2 down for BENCH_FO_DOWN (default 10) s in the middle. The same
# run twice, FABRICIQ_MODE=control and =monitor (the baseline: today's
# behaviour), and for each:
#   normal busbw       median over the intervals before the cut
#   outage busbw       median over the outage, once the lane timeout passed
#   back to >= 90 %    from link up to the first 0.5 s interval at >= 90 % of normal
#   result             verified / failed
# Needs root and namespaces (the emulated cluster); says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/nccl-plugin/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"
RATE=${BENCH_FO_RATE:-50mbit}
SECONDS_RUN=${BENCH_FO_SECONDS:-36}
DOWN=${BENCH_FO_DOWN:-10}
for f in "$CB" "$SO"; do [ -e "$f" ] || { echo "bench-failover: $f not built"; exit 1; }; done
if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null || [ ! -x "$FQTB_HELPERS/tb-hostns" ]; then
	echo "bench-failover: skipped (needs root, network namespaces and the testbed helpers)"
	exit 0
fi
export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-fobench-$$"
tmp=$(mktemp -d)
cleanup() { "$TB" down >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
"$TB" up --prefix fob --hosts 4 --services none --clock-offsets zero --host-rate "$RATE" >"$tmp/up.log" 2>&1 ||
	{ echo "bench-failover: testbed up failed"; sed 's/^/  /' "$tmp/up.log" | tail -5; exit 1; }
port=$((31000 + $$ % 1000))

# run MODE ITERS [TIMELINE_MS]: 4 ranks, rank 0's stdout in $tmp/out.MODE
run() {
	local mode=$1 iters=$2 pids=() rc=0
	port=$((port + 1))
	for r in 3 2 1 0; do
		"$TB" exec "n$((r + 1))" env FABRICIQ_MODE="$mode" FABRICIQ_IFACES=rail0,rail1 FABRICIQ_TELEMETRY=0 FABRICIQ_CHUNK_SIZE=32K \
			timeout 170 "$CB" -p "$SO" --rank $r --nranks 4 --bootstrap "198.18.0.11:$port" -c allreduce \
			-b 1M -e 1M -n "$iters" -w 2 --timeline 500 --timeout 100 \
			>"$tmp/out.$mode.$r" 2>"$tmp/err.$mode.$r" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}

# Calibrate: iterations for SECONDS_RUN at the normal rate.
run control 20 || { echo "bench-failover: calibration run failed"; cat "$tmp"/err.control.* | head; exit 1; }
t_iter=$(awk '/^# timeline/ { t = $3; n += $5 } END { if (n) print t / n }' "$tmp/out.control.0")
iters=$(awk -v s="$SECONDS_RUN" -v t="$t_iter" 'BEGIN { print int(s / t) }')
echo "bench-failover: 4 hosts x 2 rails at $RATE, allreduce 1 MiB, $iters iterations (~${SECONDS_RUN} s), rail1 of n2 down ${DOWN} s"

# one MODE: the run with the cut; prints the summary line
one() {
	local mode=$1 t_down t_up res
	run "$mode" "$iters" &
	local runner=$!
	sleep $((SECONDS_RUN / 2 - DOWN / 2))
	t_down=$(date +%s.%N)
	"$TB" link down n2 rail1
	sleep "$DOWN"
	t_up=$(date +%s.%N)
	"$TB" link up n2 rail1
	if wait $runner && grep -q '^# OK' "$tmp/out.$mode.0"; then res=verified; else res=FAILED; fi
	awk -v td="$t_down" -v tu="$t_up" -v mode="$mode" -v res="$res" '
		function median(a, n,   i, j, x) {
			for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
			return n ? a[int((n + 1) / 2)] : 0
		}
		/^# timeline/ { n++; T[n] = $7; B[n] = $4 }
		END {
			for (i = 2; i <= n; i++) if (T[i] < td) norm[++nn] = B[i]
			for (i = 1; i <= n; i++) if (T[i] > td + 1.6 && T[i] <= tu) out[++no] = B[i]
			nb = median(norm, nn); ob = median(out, no)
			back = -1
			for (i = 1; i <= n; i++) if (T[i] > tu && B[i] >= 0.9 * nb) { back = T[i] - tu; break }
			end = n ? T[n] - tu : 0
			printf "%-8s %12.4f %12.4f %10.2f %12s %10s\n", mode, nb, ob, nb ? ob / nb : 0,
				back < 0 ? "never" : sprintf("%.1f s", back), res
		}' "$tmp/out.$mode.0"
}

printf "%-8s %12s %12s %10s %12s %10s\n" mode "normal GB/s" "outage GB/s" "out/norm" "back>=90%" result
c=$(one control)
echo "$c"
m=$(one monitor)
echo "$m"
read -r _ cn co cr cb_ _ <<<"$c"
read -r _ mn mo mr mb_ _ <<<"$m"
awk -v co="$co" -v mo="$mo" 'BEGIN { printf "outage busbw, control / monitor: %s\n", (mo > 0 ? sprintf("%.1fx", co / mo) : "monitor stalled (0 GB/s)") }'
grep -h 'WARN' "$tmp"/err.control.* | sed 's/^/  control: /' | head -4
grep -hE 'WARN|collbench' "$tmp"/err.monitor.* | sed 's/^/  monitor: /' | head -3
grep -q verified <<<"$c"
