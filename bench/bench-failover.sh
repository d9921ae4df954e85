#!/usr/bin/env bash
# Control mode against monitor mode when a rail dies or flaps under a job
# (issue 7): 4 hosts, 2 rails (host links shaped to BENCH_FO_RATE, default
# 50mbit, so the wire and not the 2 shared CPUs sets the pace), a ring
# allreduce of 1 MiB with every iteration verified (32 KiB chunks, so each
# ring step's 256 KiB slice is striped over both rails), all in one run:
#
# 1. Outage: about BENCH_FO_SECONDS (default 60) s with rail1 of n2 down
#    BENCH_FO_DOWN (default 10) s in the middle, once with
#    FABRICIQ_MODE=control and once with monitor (failover off: the
#    baseline, today's behaviour). For each:
#      normal busbw     median of the 0.5 s intervals before the cut
#      outage busbw     time-average over the outage from the lane timeout
#                       on (BENCH_FO_DETECT, default 1.6 s after the cut),
#                       and over the whole outage
#      back to >= 90 %  from link up (the testbed's event: link and routes
#                       back) to the first interval at >= 90 % of normal
#      longest stall    the longest gap between two completed iterations
#      result           verified / FAILED (error or no completion)
#    Goals: control verified, outage >= 40 % of normal, back within 2 s.
# 2. Flapping: BENCH_FO_FLAPS (default 8) flaps of rail1 of n2 (period
#    BENCH_FO_FLAP_PERIOD ms, default 6000: down half, up half) during a
#    control-mode run of the same iterations as an unflapped control-mode
#    run made beside it: both must complete verified; the time lost is
#    flapped - unflapped.
# Total about 5 x BENCH_FO_SECONDS plus setup (~5.5 min at the default;
# BENCH_FO_SECONDS=20 BENCH_FO_DOWN=5 BENCH_FO_FLAPS=3 BENCH_FO_FLAP_PERIOD=4000
# for a quick look; BENCH_FO_FLAPS=0 runs part 1 only; BENCH_FO_KEEP=DIR
# keeps the runs' outputs, logs and steering traces there). Needs root and
# namespaces (the emulated cluster); says why and exits 0 if not. Exit 1
# if a control-mode run fails.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"
RATE=${BENCH_FO_RATE:-50mbit}
SECONDS_RUN=${BENCH_FO_SECONDS:-60}
DOWN=${BENCH_FO_DOWN:-10}
DETECT=${BENCH_FO_DETECT:-1.6}
FLAPS=${BENCH_FO_FLAPS:-8}
FLAP_PERIOD=${BENCH_FO_FLAP_PERIOD:-6000}
for f in "$CB" "$SO"; do [ -e "$f" ] || { echo "bench-failover: $f not built"; exit 1; }; done
if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null || [ ! -x "$FQTB_HELPERS/tb-hostns" ]; then
	echo "bench-failover: skipped (needs root, network namespaces and the testbed helpers)"
	exit 0
fi
export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-fobench-$$"
tmp=$(mktemp -d)
cleanup() { "$TB" down >/dev/null 2>&1; [ -n "${BENCH_FO_KEEP:-}" ] && cp -r "$tmp" "$BENCH_FO_KEEP"; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
"$TB" up --prefix fob --hosts 4 --services none --clock-offsets zero --host-rate "$RATE" >"$tmp/up.log" 2>&1 ||
	{ echo "bench-failover: testbed up failed"; sed 's/^/  /' "$tmp/up.log" | tail -5; exit 1; }
port=$((31000 + $$ % 1000))

# run NAME MODE ITERS TIMEOUT_S: 4 ranks, rank 0's stdout in $tmp/out.NAME,
# wall seconds in $tmp/wall.NAME
run() {
	local name=$1 mode=$2 iters=$3 tmo=$4 pids=() rc=0 t0
	port=$((port + 1))
	t0=$(date +%s.%N)
	for r in 3 2 1 0; do
		"$TB" exec "n$((r + 1))" env FABRICIQ_MODE="$mode" FABRICIQ_IFACES=rail0,rail1 FABRICIQ_TELEMETRY=0 FABRICIQ_CHUNK_SIZE=32K \
			${BENCH_FO_KEEP:+FABRICIQ_STEER_TRACE=$tmp/trace.$name.$r} \
			timeout $((tmo + 60)) "$CB" -p "$SO" --rank $r --nranks 4 --bootstrap "198.18.0.11:$port" --coll allreduce \
			-b 1M -e 1M -n "$iters" -w 2 --timeline 500 --timeout "$tmo" \
			>"$tmp/out.$name.$r" 2>"$tmp/err.$name.$r" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", t1 - t0 }' >"$tmp/wall.$name"
	[ $rc -eq 0 ] && grep -q '^# OK' "$tmp/out.$name.0"
}

# Calibrate: iterations for SECONDS_RUN at the normal rate.
run cal control 20 60 || { echo "bench-failover: calibration run failed"; cat "$tmp"/err.cal.* | head; exit 1; }
t_iter=$(awk '/^# timeline/ { t = $3; n += $5 } END { if (n) print t / n }' "$tmp/out.cal.0")
iters=$(awk -v s="$SECONDS_RUN" -v t="$t_iter" 'BEGIN { n = int(s / t); print n < 10 ? 10 : n }')
echo "bench-failover: 4 hosts x 2 rails at $RATE, allreduce 1 MiB verified, $iters iterations (~${SECONDS_RUN} s)"
echo
echo "1. rail1 of n2 down ${DOWN} s in the middle (outage figures from ${DETECT} s after the cut; whole outage in brackets)"

# outage MODE: the run with the cut; prints the summary line
outage() {
	local mode=$1 t_down t_up res runner
	# monitor: TCP alone rides out the outage by retransmission (or not); a
	# stall is reported after 2 x the outage
	run "$mode" "$mode" "$iters" $((DOWN * 2 + 30)) &
	runner=$!
	sleep $((SECONDS_RUN / 2 - DOWN / 2))
	"$TB" link down n2 rail1
	sleep "$DOWN"
	"$TB" link up n2 rail1
	# the cut and the return as the testbed logged them: when the link
	# (and its routes) had gone down or come back
	read -r t_down t_up < <("$TB" events | awk '$4 == "n2-rail1" { t[$3] = $1 / 1e9 } END { printf "%.6f %.6f\n", t["down"], t["up"] }')
	if wait $runner; then res=verified; else res=FAILED; fi
	# the plugin's failbacks (realtime-stamped by collbench), after link up
	cat "$tmp"/err."$mode".* | awk -v tu="$t_up" '/failback/ && $1 > tu { printf "%s%.2f s", n++ ? ", " : "", $1 - tu } END { print "" }' >"$tmp/fb.$mode"
	awk -v td="$t_down" -v tu="$t_up" -v det="$DETECT" -v mode="$mode" -v res="$res" -v wall="$(cat "$tmp/wall.$mode")" '
		function median(a, n,   i, j, x) {
			for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
			return n ? a[int((n + 1) / 2)] : 0
		}
		# time-average busbw over [a, b]: interval i covers (T[i-1], T[i]] at B[i]
		function avg(a, b,   i, lo, hi, s) {
			s = 0
			for (i = 2; i <= n; i++) {
				lo = T[i - 1] > a ? T[i - 1] : a; hi = T[i] < b ? T[i] : b
				if (hi > lo) s += B[i] * (hi - lo)
			}
			return b > a ? s / (b - a) : 0
		}
		/^# timeline/ { n++; T[n] = $7; B[n] = $4 }
		END {
			for (i = 2; i <= n; i++) if (T[i] < td) norm[++nn] = B[i]
			nb = median(norm, nn); ob = avg(td + det, tu); wb = avg(td, tu)
			back = -1
			for (i = 2; i <= n; i++) if (T[i] > tu && B[i] >= 0.9 * nb) { back = T[i] - tu; break }
			gap = 0
			for (i = 2; i <= n; i++) if (T[i] - T[i - 1] > gap) gap = T[i] - T[i - 1]
			if (n && T[n] < tu) gap = gap > tu - T[n] ? gap : tu - T[n]
			printf "%-8s %10.4f %10.4f %8.2f (%4.2f) %10s %9.1f s %8.1f s %9s\n", mode, nb, ob, nb ? ob / nb : 0,
				nb ? wb / nb : 0, back < 0 ? "never" : sprintf("%.1f s", back), gap, wall, res
		}' "$tmp/out.$mode.0"
}

printf "%-8s %10s %10s %15s %10s %11s %10s %9s\n" mode "normal" "outage" "out/norm" "back>=90%" "long.stall" "wall" result
printf "%-8s %10s %10s %15s %10s %11s %10s %9s\n" "" "GB/s" "GB/s" "(whole)" "" "" "" ""
c=$(outage control)
echo "$c"
m=$(outage monitor)
echo "$m"
read -r _ cn co cr _ cb _ <<<"$c"
cres=$(awk '{ print $NF }' <<<"$c")
awk -v cr="$cr" -v cb="$cb" -v res="$cres" 'BEGIN {
	printf "goals (control): verified %s, outage >= 40%% of normal %s (%.0f%%), back to >= 90%% within 2 s %s (%s s)\n",
		(res == "verified" ? "met" : "MISSED"), (cr >= 0.40 ? "met" : "MISSED"), cr * 100,
		((cb != "never" && cb + 0 <= 2.0) ? "met" : "MISSED"), cb }'
echo "  control: lanes back (failback) after link up: $(cat "$tmp/fb.control")"
grep -h 'WARN' "$tmp"/err.control.* | sed 's/^/  control: /' | head -3
grep -hE 'WARN|collbench' "$tmp"/err.monitor.* | sed 's/^/  monitor: /' | head -3

echo
if [ "$FLAPS" -eq 0 ]; then # BENCH_FO_FLAPS=0: the outage part only
	[ "$cres" = verified ]
	exit
fi
echo "2. flapping: $FLAPS flaps of rail1 of n2 (period $FLAP_PERIOD ms) vs the same run unflapped, control mode"
run base control "$iters" 100
bres=$?
run flap control "$iters" 100 &
runner=$!
sleep $((SECONDS_RUN / 10 + 1))
"$TB" flap n2 rail1 --count "$FLAPS" --period "$FLAP_PERIOD" >/dev/null 2>&1
wait $runner
fres=$?
tb_=$(cat "$tmp/wall.base") tf=$(cat "$tmp/wall.flap")
nfo=$(cat "$tmp"/err.flap.* | grep -cE 'no-progress|socket-error|path-down|no-data')
nfb=$(cat "$tmp"/err.flap.* | grep -c 'failback')
awk -v flaps="$FLAPS" -v b="$tb_" -v f="$tf" -v br="$bres" -v fr="$fres" -v nfo="$nfo" -v nfb="$nfb" -v iters="$iters" 'BEGIN {
	printf "unflapped  %8.2f s  %s\n", b, (br == 0 ? "verified" : "FAILED")
	printf "flapped    %8.2f s  %s  (%d lane failures, %d failbacks logged)\n", f, (fr == 0 ? "verified" : "FAILED"), nfo, nfb
	printf "time lost to %s flaps: %.2f s (%.1f%% of the unflapped run)\n", flaps, f - b, (b > 0 ? (f - b) / b * 100 : 0)
	printf "goal (flapping): job completes verified %s\n", (fr == 0 ? "met" : "MISSED") }'
grep -h 'WARN' "$tmp"/err.flap.* | grep -v failback | sed 's/^/  flapped: /' | head -2
[ "$cres" = verified ] && [ $fres -eq 0 ] && [ $bres -eq 0 ]
