#!/usr/bin/env bash
# ECMP collisions, measured fairly: concurrent jobs on a fabric of
# equal-capacity spines with L4-hash ECMP, four ways of carrying the same
# traffic side by side in every trial, over many trials:
#   ecmp-1     static ECMP, one lane per connection (NCCL's default)
#   ecmp-K     static ECMP, K lanes split evenly (NCCL_IB_QPS_PER_CONNECTION=K)
#   steer      fabriciq control mode with steering (weights from delay, a
#              congested lane moved to a new source port), K lanes: the
#              plugin alone
#   steer-ctl  the same with the controller's collision advice: the jobs
#              launched by `srun --fabriciq=control` (the SPANK plugin),
#              an agent per host tracing each lane's route, the controller
#              advising a job whose lanes collide with another's on a
#              switch link to move them, by their source ports
#   steer-noadv  steer-ctl with the advice left alone (FABRICIQ_ADVICE=off):
#              everything of steer-ctl (SPANK, path page, telemetry) but
#              the advice, so steer-ctl against it is the advice's own gain
#   optimum    the same K lanes, each connection's on distinct spines,
#              placed to keep the busiest leaf-spine link as low as it can
#              be, split evenly: the ceiling of a static placement
#   opt-steer  that placement with steering's split: the ceiling for
#              steering (an even split waits for a connection's slowest
#              lane; steering's is adaptive, and beats the even split of
#              the same placement)
#
# The fabric: BENCH_ECMP_HOSTS hosts (default 8) under BENCH_ECMP_LEAVES
# leaves (4), BENCH_ECMP_SPINES spines (4), every leaf-spine link shaped to
# BENCH_ECMP_RATE (40mbit), host links unshaped, so the spines are the
# bottleneck. One job per rail (BENCH_ECMP_RAILS, default 2), every job on
# every host, one rank per host: rail 0 an alltoall, rail 1 a ring
# allreduce, rail 2 an alltoall, rail 3 an allreduce; each of
# BENCH_ECMP_SIZE (4M), BENCH_ECMP_ITERS (5) iterations verified.
#
# A trial is a seed: which spine each lane meets, drawn as a hash of its
# ports draws it, by connection and lane, so the four variants of a trial
# meet the same collisions (ecmp-1's one lane meets the spine ecmp-K's lane
# 0 meets). The harness makes the draw real: collbench waits after
# connecting (--start-file), the lanes are read from the hosts' sockets
# (ss), and each is pinned to its spine by a policy rule (source, ports,
# destination) on its source leaf, in a table that reaches every other leaf
# over that spine. A lane that steering moves to a new source port matches
# no rule and takes the fabric's own L4 hash. The optimum is pinned the
# same way (bench/ecmp-place.py).
#
# With steer-ctl or steer-noadv among the variants the cluster runs munge, Slurm,
# PostgreSQL, the controller and the agents throughout (every variant pays
# for them); without, none of them.
#
# Printed: each trial's aggregate busbw (the jobs' busbw summed, MB/s, from
# each job's time: nccl-tests' bus factors) per variant, the busiest link's
# active lanes against the mean under the seed's draw (1 lane, K lanes) and
# the trial's seconds; then per variant the mean
# and p10 over trials, the ratio of steering to each, the fraction of the
# optimum reached, and the trials where steering lost to static ECMP.
# Goals: fabriciq's steering (steer-ctl, else steer) >= 1.25x ecmp-1
# (mean), >= 0.9 of the ceiling (opt-steer).
# Needs root and namespaces (the emulated cluster); says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
SPANK_SO="$top_builddir/spank/.libs/spank_fabriciq.so"
CTL="$top_builddir/controller/fabriciq-controller"
AGENT="$top_builddir/slurmd-agent/fabriciq-agent"
PLACE="$top_srcdir/bench/ecmp-place.py"
diag() { printf '  %s\n' "$*"; }
. "$top_srcdir/tests/testbed/lib/testlib.sh" # TB, FQTB_HELPERS; the controller's and agents' start
HOSTS=${BENCH_ECMP_HOSTS:-8}
LEAVES=${BENCH_ECMP_LEAVES:-4}
SPINES=${BENCH_ECMP_SPINES:-4}
RAILS=${BENCH_ECMP_RAILS:-2}
RATE=${BENCH_ECMP_RATE:-40mbit}
LANES=${BENCH_ECMP_LANES:-4}
SIZE=${BENCH_ECMP_SIZE:-4M}
ITERS=${BENCH_ECMP_ITERS:-5}
TIMEOUT=${BENCH_ECMP_TIMEOUT:-300} # a collective's, in seconds
TRIALS=${BENCH_ECMP_TRIALS:-20}
SEED=${BENCH_ECMP_SEED:-1}
VARIANTS=${BENCH_ECMP_VARIANTS:-"ecmp-1 ecmp-K steer steer-noadv steer-ctl optimum opt-steer"}
SOCKBUF=${BENCH_ECMP_SOCKBUF:-128K} # the lanes' own backlog small, as at these rates a switch's buffer is
PREFIX=${BENCH_ECMP_PREFIX:-ecb}
for f in "$CB" "$SO" "$PLACE" "$SPANK_SO" "$CTL" "$AGENT"; do [ -e "$f" ] || { echo "bench-ecmp: $f not built"; exit 1; }; done
if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null || [ ! -x "$FQTB_HELPERS/tb-hostns" ]; then
	echo "bench-ecmp: skipped (needs root, network namespaces and the testbed helpers)"
	exit 0
fi
command -v python3 >/dev/null || { echo "bench-ecmp: skipped (needs python3)"; exit 0; }
export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-ecmpbench-$$"
tmp=$(mktemp -d)
pids=()
# BENCH_ECMP_KEEP=DIR: the runs' output and the cluster's logs kept there
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${BENCH_ECMP_KEEP:-}" ] && mkdir -p "$BENCH_ECMP_KEEP" && cp -r "$tmp" "$FQTB_STATE/log" "$BENCH_ECMP_KEEP" 2>/dev/null
	"$TB" down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ctl=false services=(--services none)
if [[ " $VARIANTS " == *" steer-ctl "* || " $VARIANTS " == *" steer-noadv "* ]]; then
	ctl=true
	spank="optional $SPANK_SO libdir=$top_builddir/nccl-plugin/.libs monitor_via=net"
	spank+=" step_socket=$FQTB_STATE/run/%n/agent-step.sock"
	services=(--plugstack "$spank")
fi
"$TB" up --prefix "$PREFIX" --hosts "$HOSTS" --leaves "$LEAVES" --spines "$SPINES" --rails "$RAILS" \
	--spine-rate "$RATE" "${services[@]}" --clock-offsets zero >"$tmp/up.log" 2>&1 ||
	{ echo "bench-ecmp: testbed up failed"; sed 's/^/  /' "$tmp/up.log" | tail -5; exit 1; }
if $ctl; then
	"$TB" expected >"$FQTB_STATE/topology.conf" # the switches' names, for the collisions' links
	tb_controller_start "$CTL" -s "topology_file=$FQTB_STATE/topology.conf" ||
		{ echo "bench-ecmp: the controller did not start"; exit 1; }
	sleep 1
	tb_agents_start "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$FQTB_STATE/munge/munge.socket" &&
		tb_agents_ready >"$tmp/ready.log" ||
		{ echo "bench-ecmp: the agents are not ready"; sed 's/^/  /' "$tmp/ready.log"; exit 1; }
fi

coll_of() { [ $(($1 % 2)) -eq 0 ] && echo alltoall || echo allreduce; }
jobargs=()
for ((r = 0; r < RAILS; r++)); do jobargs+=(--job "$r:$(coll_of $r)"); done

# The dialing side's lanes of every host: "SRC SPORT DST DPORT".
lanes_now() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		"$TB" exec "n$i" ss -Htn state established 2>/dev/null |
			awk -v lp="$("$TB" exec "n$i" ss -Htln 2>/dev/null | awk '{ n = split($4, a, ":"); printf "%s,", a[n] }')" '
			BEGIN { n = split(lp, a, ","); for (k = 1; k <= n; k++) listen[a[k]] = 1 }
			$3 ~ /^198\.19\./ { split($3, l, ":"); split($4, p, ":"); if (!(l[2] in listen)) print l[1], l[2], p[1], p[2] }'
	done
}

unpin() { "$TB" pin --clear; }

# pin MODE SEED: each lane to its spine (fabriciq-testbed pin: a rule on its
# source leaf, checked in the leaf's FIB); prints "PINNED SKEW": the lanes
# pinned and the busiest link's active lanes / the mean
pin() {
	local n
	lanes_now >"$tmp/lanes"
	python3 "$PLACE" --mode "$1" --seed "$2" --hosts "$HOSTS" --leaves "$LEAVES" --spines "$SPINES" \
		"${jobargs[@]}" --summary "$tmp/skew" <"$tmp/lanes" >"$tmp/place" || return 1
	n=$(awk '{ print $2, $3, $4, $5, $6 }' "$tmp/place" | "$TB" pin) || return 1
	[ "$n" -eq "$(wc -l <"$tmp/place")" ] || return 1
	echo "$n $(awk '{ print $1 }' "$tmp/skew")"
}

# the collision advice the agents took so far (their logs)
advice_lines() { cat "$FQTB_STATE"/log/n*.agent.log 2>/dev/null | grep -c 'controller advice: '; }

port=$((33000 + $$ % 1000))
# run VARIANT SEED: every job at once; prints "SUM_MBPS BUSIEST/MEAN" or FAILED
run() {
	local v=$1 seed=$2 lanes=$LANES steer=off mode=seed r k rc=0 want got=0 skew= npinned sum=0 bw srun=false a0 advice=on
	case $v in
	ecmp-1) lanes=1 ;;
	steer) steer=on ;;
	steer-ctl) steer=on srun=true ;;
	steer-noadv) steer=on srun=true advice=off ;;
	optimum) mode=optimum ;;
	opt-steer) mode=optimum steer=on ;;
	esac
	rm -f "$tmp/go" "$tmp"/out.* "$tmp"/err.* "$tmp"/srun.*
	a0=$(advice_lines)
	pids=()
	for ((r = 0; r < RAILS; r++)); do
		port=$((port + 1))
		if $srun; then # one step a job, a rank a host in order (rank 0 on n1: the bootstrap)
			"$TB" slurm srun -w "n[1-$HOSTS]" -N"$HOSTS" -n"$HOSTS" --fabriciq=control -o "$tmp/out.$r.%t" \
				-e "$tmp/err.$r.%t" env FABRICIQ_STEER=on FABRICIQ_IFACES="rail$r" FABRICIQ_LANES="$lanes" \
				FABRICIQ_ADVICE=$advice FABRICIQ_CHUNK_SIZE=64K FABRICIQ_SOCKET_BUFFER="$SOCKBUF" ${NCCL_DEBUG:+NCCL_DEBUG=$NCCL_DEBUG} \
				timeout 400 "$CB" --bootstrap "198.18.0.11:$port" \
				--coll "$(coll_of $r)" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 --timeout "$TIMEOUT" \
				--start-file "$tmp/go" >"$tmp/srun.$r" 2>&1 &
			pids+=($!)
			continue
		fi
		for ((k = HOSTS - 1; k >= 0; k--)); do
			"$TB" exec "n$((k + 1))" env FABRICIQ_MODE=control FABRICIQ_STEER="$steer" FABRICIQ_IFACES="rail$r" \
				FABRICIQ_LANES="$lanes" FABRICIQ_TELEMETRY=0 FABRICIQ_CHUNK_SIZE=64K \
				FABRICIQ_SOCKET_BUFFER="$SOCKBUF" FABRICIQ_PATH_PAGE="$tmp/none" \
				timeout 400 "$CB" -p "$SO" --rank "$k" --nranks "$HOSTS" --bootstrap "198.18.0.11:$port" \
				--coll "$(coll_of $r)" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 --timeout "$TIMEOUT" \
				--start-file "$tmp/go" >"$tmp/out.$r.$k" 2>"$tmp/err.$r.$k" &
			pids+=($!)
		done
	done
	want=$((RAILS * HOSTS * (HOSTS - 1) * lanes))
	for ((k = 0; k < 160; k++)); do # every job connected, every lane up (at most 80 s)
		if [ "$(cat "$tmp"/out.*.0 2>/dev/null | grep -c '^# connected')" -eq "$RAILS" ]; then
			got=$(lanes_now | wc -l)
			[ "$got" -eq "$want" ] && break
		fi
		sleep 0.5
	done
	if [ "$got" -ne "$want" ]; then
		echo "bench-ecmp: $v seed $seed: $got lanes up of $want" >&2
		touch "$tmp/go"
		rc=1
	else
		read -r npinned skew < <(pin "$mode" "$seed") || rc=1
		[ -n "${skew:-}" ] || rc=1
		echo "# $v seed $seed: $npinned lanes pinned and verified in the FIB (busiest link / mean ${skew:-?})" >>"$tmp/log"
		touch "$tmp/go"
	fi
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	pids=()
	$srun && echo "# $v seed $seed: $(($(advice_lines) - a0)) advice" >>"$tmp/log"
	unpin
	[ $rc -eq 0 ] || {
		echo FAILED
		grep -h . "$tmp"/err.* "$tmp"/srun.* 2>/dev/null | grep -v '^#\|INFO' | head -4 | sed 's/^/  /' >&2
		return 1
	}
	for ((r = 0; r < RAILS; r++)); do
		bw=$(awk -v n="$HOSTS" -v c="$(coll_of $r)" '!/^#/ && NF >= 8 && $8 == 0 {
			f = c == "alltoall" ? (n - 1) / n : 2 * (n - 1) / n; printf "%.3f\n", $1 * f / $5 }' "$tmp/out.$r.0")
		[ -n "$bw" ] || { echo FAILED; return 1; }
		sum=$(awk -v a="$sum" -v b="$bw" 'BEGIN { printf "%.3f", a + b }')
	done
	echo "$sum $skew"
}

echo "bench-ecmp: $HOSTS hosts, $LEAVES leaves, $SPINES spines at $RATE, $RAILS jobs (one per rail:" \
	"$(for ((r = 0; r < RAILS; r++)); do printf '%s ' "$(coll_of $r)"; done| sed 's/ $//')), $SIZE x $ITERS, K = $LANES lanes, $TRIALS trials from seed $SEED"
printf "%-6s" trial
for v in $VARIANTS; do printf " %11s" "$v"; done
printf " %8s %8s %6s\n" "skew-1" "skew-K" "secs"
declare -A res
for ((t = 0; t < TRIALS; t++)); do
	seed=$((SEED + t))
	printf "%-6s" "$seed"
	sk1=- skk=- t0=$SECONDS
	for v in $VARIANTS; do
		out=$(run "$v" "$seed") || { echo; echo "bench-ecmp: trial $seed, $v failed"; exit 1; }
		read -r sum skew <<<"$out"
		res[$v,$t]=$sum
		[ "$v" = ecmp-1 ] && sk1=$skew
		[ "$v" = ecmp-K ] && skk=$skew
		printf " %11s" "$sum"
	done
	printf " %8s %8s %6s\n" "$sk1" "$skk" $((SECONDS - t0))
done

[ -n "${BENCH_ECMP_VERBOSE:-}" ] && cat "$tmp/log"
awk '/ pinned / { s += $5; n++ } END { printf "lanes pinned to their spines, each checked in its leaf'"'"'s FIB: %d over %d runs\n", s, n }' "$tmp/log"

# mean and p10 of each variant; ratios; steering's losses
for v in $VARIANTS; do
	for ((t = 0; t < TRIALS; t++)); do echo "${res[$v,$t]}"; done >"$tmp/col.$v"
done
echo "aggregate busbw over $TRIALS trials (MB/s):"
for v in $VARIANTS; do
	sort -g "$tmp/col.$v" | awk -v v="$v" '{ x[NR] = $1; s += $1 }
		END { k = int(0.1 * NR + 0.999); if (k < 1) k = 1; printf "  %-11s mean %8.2f  p10 %8.2f\n", v, s / NR, x[k] }'
done
mean() { awk '{ s += $1 } END { printf "%.4f", NR ? s / NR : 0 }' "$tmp/col.$1"; }
# the ratios of each steering variant (steer-ctl is fabriciq's: the goals)
for sv in steer steer-ctl; do
	[[ " $VARIANTS " == *" $sv "* ]] || continue
	ms=$(mean "$sv")
	for v in $VARIANTS; do
		[ "$v" = "$sv" ] && continue
		[ "$sv" = steer ] && [[ $v == steer-* ]] && continue
		mv=$(mean "$v")
		case $v in
		optimum) awk -v s="$ms" -v o="$mv" -v sv="$sv" 'BEGIN { printf "%s / optimum: %.3f (the static optimum placement, split evenly)\n", sv, (o > 0 ? s / o : 0) }' ;;
		opt-steer) awk -v s="$ms" -v o="$mv" -v sv="$sv" 'BEGIN { printf "%s / opt-steer: %.3f (fraction of the ceiling reached; goal >= 0.9)\n", sv, (o > 0 ? s / o : 0) }' ;;
		ecmp-1) awk -v s="$ms" -v o="$mv" -v sv="$sv" 'BEGIN { printf "%s / ecmp-1: %.3fx (goal >= 1.25x)\n", sv, (o > 0 ? s / o : 0) }' ;;
		steer-noadv) awk -v s="$ms" -v o="$mv" -v sv="$sv" 'BEGIN { printf "%s / steer-noadv: %.3fx (the advice'"'"'s own gain)\n", sv, (o > 0 ? s / o : 0) }' ;;
		*) awk -v s="$ms" -v o="$mv" -v v="$v" -v sv="$sv" 'BEGIN { printf "%s / %s: %.3fx\n", sv, v, (o > 0 ? s / o : 0) }' ;;
		esac
	done
	for v in ecmp-1 ecmp-K $([ "$sv" = steer-ctl ] && echo steer steer-noadv); do
		[[ " $VARIANTS " == *" $v "* ]] || continue
		paste "$tmp/col.$sv" "$tmp/col.$v" | awk -v v="$v" -v sv="$sv" -v seed="$SEED" '
			$1 < $2 { n++; w = w sprintf(" %d (%.0f%%)", seed + NR - 1, 100 * ($1 / $2 - 1)) }
			END { printf "trials where %s < %s: %d of %d%s\n", sv, v, n, NR, n ? ":" w : "" }'
	done
done
for sv in steer-ctl steer-noadv; do
	[[ " $VARIANTS " == *" $sv "* ]] || continue
	awk -v sv="$sv" '$2 == sv && / advice$/ { a += $(NF - 1); n++ } END { printf "the controller'"'"'s collision advice in %s: %d taken by the agents over %d runs%s\n", sv, a, n, sv == "steer-noadv" ? " (left alone by the plugin)" : "" }' "$tmp/log"
done
