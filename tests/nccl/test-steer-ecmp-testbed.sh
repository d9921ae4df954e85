#!/usr/bin/env bash
# A move to a new ECMP hash, on the emulated cluster, where the hash really
# picks the path: n1 and n2 on different leaves, 4 spines, the leaves
# hashing the 5-tuple as switches do (policy 3). One rail (rail0), two lanes on
# distinct source ports. Once the job runs, the test asks leaf1's FIB which
# spine each of n1's lanes takes (`ip route get ... sport/dport`, the
# kernel's own hash), and shapes exactly those spines down (10 Mbit/s, a
# 100 ms queue; the others stay unshaped): every lane of the connection is
# congested, the other spines are free. (Shaping every spine beforehand,
# even at 40 Mbit/s, lets the job's own load fill the queues and set off
# moves before the test shapes anything.) The sender must
# re-open a lane on a new source port within a few seconds, and judge each
# new path right: a new path on a free spine is kept, one on a shaped spine
# is moved again; the third move is kept whatever it found (then a
# cooldown). Which spine a new port hashes to is chance; what is checked is
# that every verdict matches the path the FIB gave that port. The allreduce
# stays verified throughout.
. "$(dirname "$0")/testbed.sh"
nccl_tb_setup se
plan 7

check "up: 2 hosts on 2 leaves, 4 spines, L4 ECMP" tb up --prefix "$TB_PFX" --hosts 2 --leaves 2 \
	--spines 4 --services none --clock-offsets zero
tmp=$(mktemp -d)
trap 'rc=$?; [ -n "${STEER_TEST_KEEP:-}" ] && cp -r "$tmp" "$STEER_TEST_KEEP"; rm -rf "$tmp"; (exit $rc); tb_teardown' EXIT

# spine_of LOCAL>PEER: the spine leaf1's FIB sends that TCP 4-tuple to
spine_of() {
	local l=${1%%>*} p=${1#*>}
	ip -n "$TB_PFX-leaf1" route get "${p%:*}" from "${l%:*}" iif n1r0 ipproto tcp sport "${l##*:}" \
		dport "${p##*:}" 2>/dev/null | grep -o 'dev s[0-9]*' | cut -c6-
}
# paths LINE: "lane path" per lane of a trace line
paths() { awk '{ for (i = 4; i <= NF; i++) if ($i ~ /^lane[0-9]/) for (j = i + 1; j <= NF && $j !~ /^lane[0-9]/; j++) if ($j ~ /^path=/) print $i, substr($j, 6) }' <<<"$1"; }

# start_job: both ranks, n1's lane sockets traced; sets pids, $first (a
# trace line with both lanes up) and $shaped (the spines n1's lanes take)
start_job() {
	local port lane path s
	port=$(free_port) pids=() shaped=""
	rm -f "$tmp"/trace.* "$tmp"/out.* "$tmp"/err.*
	for r in 1 0; do
		tb exec "n$((r + 1))" env FABRICIQ_IFACES=rail0 FABRICIQ_LANES=2 FABRICIQ_TELEMETRY=0 FABRICIQ_MODE=control \
			FABRICIQ_LANE_TIMEOUT_MS=5000 FABRICIQ_CHUNK_SIZE=32K FABRICIQ_SOCKET_BUFFER=128K \
			FABRICIQ_STEER_TRACE="$tmp/trace.$r" FABRICIQ_PATH_PAGE="$tmp/none" \
			timeout 60 "$CB" -p "$SO" --rank "$r" --nranks 2 --bootstrap "198.18.0.11:$port" \
			--coll allreduce -b 1M -e 1M -n 100000 -w 2 --timeline 500 --timeout 40 >"$tmp/out.$r" 2>"$tmp/err.$r" &
		pids+=($!)
	done
	for _ in $(seq 100); do # the first traced lines: up to 10 s on a slow machine
		[ -s "$tr" ] && [ "$(grep -c . "$tr")" -ge 20 ] && break
		sleep 0.1
	done
	first=$(grep -v ' path=-' "$tr" 2>/dev/null | tail -1)
	while read -r lane path; do
		s=$(spine_of "$path")
		diag "n1's $lane: $path over spine ${s:-?}"
		[ -n "$s" ] && [[ " $shaped " != *" $s "* ]] && shaped+=" $s"
	done < <(paths "$first")
}
stop_job() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}
tr="$tmp/trace.0"
start_job
[ -n "$first" ] && [ -n "$shaped" ]
ok $? "the sender traced both lanes' sockets, leaf1's FIB names their spines (${shaped# })" || sed 's/^/#   /' "$tmp/err.0" | head -5

t_load=$(date +%s.%N)
for s in $shaped; do
	tbf_set "$TB_PFX-leaf1" "s$s" 10mbit 16384 100ms
done
# every lane congested for 2 s, then a move, 500 ms of trial each: up to
# 3 moves; give it 12 s
sleep 12
stop_job

# The trials from the trace: after a "move" line (the moved lane has no
# socket: path=->-), the lane's next path is the trial's; the next "keep" keeps it,
# the lane's next "move" rejects it.
awk '
	function lanepath(l,   i) { for (i = 4; i < NF; i++) if ($i == l) { for (; i <= NF; i++) if ($i ~ /^path=/) return substr($i, 6) } return "" }
	{ for (i = 4; i <= NF; i++) if ($i ~ /^lane[0-9]/) lanes[$i] = 1 }
	$3 == "move" { for (l in lanes) if (lanepath(l) == "->-") { if (cur != "" && tp != "") print t0, cur, tp, "moved-again"; cur = l; tp = ""; t0 = $1 } next }
	$3 == "keep" && cur != "" { if (tp != "") print t0, cur, tp, "kept"; cur = ""; next }
	cur != "" && tp == "" { p = lanepath(cur); if (p != "" && p !~ /^[-?]/) tp = p }
	END { if (cur != "" && tp != "") print t0, cur, tp, "open" }' "$tr" >"$tmp/trials"
t_move=$(awk -v t="$t_load" '$3 == "move" && $1 > t { printf "%d\n", ($1 - t) * 1000; exit }' "$tr")
diag "first move ${t_move:-never} ms after the shaping"
[ -n "$t_move" ] && [ "$t_move" -le 8000 ]
ok $? "every lane congested: a lane is re-opened on a new source port (after ${t_move:-never} ms)"

n=0 good=0
while read -r _ lane path verdict; do
	s=$(spine_of "$path")
	n=$((n + 1))
	case " $shaped " in *" $s "*) want=moved-again kind=shaped ;; *) want=kept kind=free ;; esac
	[ "$n" -eq 3 ] && want=kept # the last move allowed: kept by rule
	[ "$verdict" = open ] && want=open
	diag "trial $n: $lane on $path, spine ${s:-?} ($kind): $verdict"
	[ -n "$s" ] && [ "$verdict" = "$want" ] && good=$((good + 1))
done <"$tmp/trials"
[ "$n" -ge 1 ] && [ "$good" -eq "$n" ]
ok $? "every trial judged by its path: a free spine kept, a shaped one moved again, the 3rd kept ($good of $n)"
kept=$(grep -c ' kept$' "$tmp/trials")
moves=$(awk -v t="$t_load" '$3 == "move" && $1 > t' "$tr" | wc -l)
[ "$kept" -eq 1 ] && [ "$moves" -le 3 ]
ok $? "the episode ends in one kept path within 3 moves ($kept kept, $moves moves)"

n_tl=$(grep -c '^# timeline' "$tmp/out.0")
[ "$n_tl" -ge 4 ] && [ -z "$(awk '/^# timeline/ && $6 != 0' "$tmp/out.0")" ]
ok $? "allreduce verified every iteration ($n_tl timeline intervals, none wrong)" || tail -3 "$tmp/out.0" | sed 's/^/#   /'
! grep -q 'failback\|no-progress\|socket-error' "$tmp"/err.*
ok $? "no lane failed: moves, not failovers" || grep -h 'failback\|no-progress\|socket-error' "$tmp"/err.* | sed 's/^/#   /' | head -8
done_testing
