#!/usr/bin/env bash
# tests/gpu/run.sh [BUILDDIR]: fabriciq's plugins under real NCCL, on a
# machine with an NVIDIA GPU, PyTorch and NCCL (no network needed). Two
# ranks share the GPU as two "hosts" (distinct NCCL_HOSTID, NCCL's shared
# memory and P2P off), so NCCL takes its network path; each case runs a
# 64 MiB all_reduce (FQ_GPU_BYTES, FQ_GPU_ITERS) verified everywhere:
#   nccl       NCCL alone, its socket transport (the baseline)
#   monitor    NCCL_NET_PLUGIN = our net plugin, FABRICIQ_MODE=monitor
#   control    the same, FABRICIQ_MODE=control (2 lanes over loopback)
#   profiler   NCCL_PROFILER_PLUGIN = our profiler, NCCL's socket transport
# A capture of the telemetry socket (capture.py) stands in for the node
# agent and counts what the net plugin sends; the profiler's report
# (FABRICIQ_PROFILER_DUMP) counts the collectives it saw, which must equal
# the all_reduce calls. Prints each case's bus bandwidth against NCCL
# alone. TAP; skips, saying why, where there is no GPU or no PyTorch.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
B=${1:-${top_builddir:-$top/build}}
B=$(cd "$B" 2>/dev/null && pwd) || B=$top/build
NET=$B/nccl-plugin/.libs/libnccl-net-fabriciq.so
PROF=$B/nccl-profiler/.libs/libnccl-profiler-fabriciq.so
BYTES=${FQ_GPU_BYTES:-67108864}
ITERS=${FQ_GPU_ITERS:-20}

skip_all() { echo "1..0 # SKIP $*"; exit 0; }
command -v nvidia-smi >/dev/null 2>&1 || skip_all "no NVIDIA GPU here (nvidia-smi not found)"
nvidia-smi -L >/dev/null 2>&1 || skip_all "no NVIDIA GPU here (nvidia-smi -L failed)"
PY=${FQ_GPU_PYTHON:-python3}
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() and torch.distributed.is_nccl_available() else 1)' \
	2>/dev/null || skip_all "PyTorch with CUDA and NCCL is not importable by $PY"
for f in "$NET" "$PROF"; do [ -f "$f" ] || skip_all "$f not built"; done

T=$(mktemp -d /tmp/fq-gpu.XXXXXX)
CAP=
trap '[ -n "$CAP" ] && kill "$CAP" 2>/dev/null; rm -rf "$T"' EXIT
echo "# $(nvidia-smi -L | head -1); torch $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))')"
echo "1..11"
n=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

# The network path between two "hosts" on one machine: loopback only.
export NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 \
	NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=${NCCL_DEBUG:-WARN}
port=$((29500 + $$ % 1000))

# case NAME ENV...: one run; its output in $T/NAME.out, its busbw in BW[NAME]
declare -A BW
case_run() {
	local name=$1 out
	shift
	port=$((port + 1))
	out=$(env "$@" timeout 600 "$PY" "$here/allreduce.py" "$port" "$BYTES" "$ITERS" 2>"$T/$name.err")
	echo "$out" >"$T/$name.out"
	BW[$name]=$(sed -n 's/.*busbw_gbs=\([0-9.]*\).*/\1/p' <<<"$out")
	grep -q "result=verified iters=$ITERS" <<<"$out"
	ok $? "$name: all_reduce of $BYTES bytes x $ITERS verified on both ranks (busbw ${BW[$name]:-?} GB/s)" ||
		tail -5 "$T/$name.err" | sed 's/^/#   /'
}

case_run nccl NCCL_NET=Socket
NCCL_OUT=$(cat "$T/nccl.err")

"$PY" "$here/capture.py" "$T/agent.sock" "$T/capture.monitor" "$top/proto/fabriciq.proto" &
CAP=$!
sleep 0.5
case_run monitor NCCL_NET_PLUGIN="$NET" FABRICIQ_MODE=monitor FABRICIQ_IFACES=lo FABRICIQ_AGENT_SOCKET="$T/agent.sock" \
	FABRICIQ_TELEMETRY_INTERVAL_MS=100 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
grep -q "NET/Plugin.*fabriciq\|Using network fabriciq" "$T/monitor.err"
ok $? "monitor: NCCL loaded our net plugin and used it" || grep -i "plugin\|NET/" "$T/monitor.err" | head -5 | sed 's/^/#   /'
kill "$CAP"; wait "$CAP"; CAP=
read -r cap <"$T/capture.monitor"
lanes=$(sed -n 's/.*lane=\([0-9]*\).*/\1/p' <<<"$cap")
[ "${lanes:-0}" -gt 0 ]
ok $? "monitor: the plugin's lane reports reached the telemetry socket ($cap)"

"$PY" "$here/capture.py" "$T/agent.sock" "$T/capture.control" "$top/proto/fabriciq.proto" &
CAP=$!
sleep 0.5
case_run control NCCL_NET_PLUGIN="$NET" FABRICIQ_MODE=control FABRICIQ_LANES=2 FABRICIQ_IFACES=lo \
	FABRICIQ_AGENT_SOCKET="$T/agent.sock" FABRICIQ_TELEMETRY_INTERVAL_MS=100 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
grep -q "NET/Plugin.*fabriciq\|Using network fabriciq" "$T/control.err"
ok $? "control: NCCL loaded our net plugin and used it"
kill "$CAP"; wait "$CAP"; CAP=
read -r cap <"$T/capture.control"
lanes=$(sed -n 's/.*lane=\([0-9]*\).*/\1/p' <<<"$cap")
[ "${lanes:-0}" -gt 0 ]
ok $? "control: the plugin's lane reports reached the telemetry socket ($cap)"

case_run profiler NCCL_NET=Socket NCCL_PROFILER_PLUGIN="$PROF" FABRICIQ_PROFILER_DUMP="$T/profile.txt" \
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
grep -qi "profiler.*fabriciq\|fabriciq.*profiler" "$T/profiler.err"
ok $? "profiler: NCCL loaded our profiler plugin" || grep -i "profiler" "$T/profiler.err" | head -5 | sed 's/^/#   /'
# the all_reduce calls: ITERS + 3 warm-up + 1 verdict, per rank
colls=$(awk '/^profiler / { for (i = 1; i <= NF; i++) if ($i ~ /^colls=/) { split($i, kv, "="); s += kv[2] } } END { print s + 0 }' "$T/profile.txt" 2>/dev/null)
is_colls=$((2 * (ITERS + 4)))
[ "${colls:-0}" = "$is_colls" ]
ok $? "profiler: it saw every collective of both ranks ($colls, want $is_colls)" ||
	head -3 "$T/profile.txt" 2>/dev/null | sed 's/^/#   /'

# bus bandwidth against NCCL alone (same run)
for c in monitor control profiler; do
	r=$(awk -v a="${BW[$c]:-0}" -v b="${BW[nccl]:-0}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "?" }')
	echo "# busbw $c ${BW[$c]:-?} GB/s against NCCL alone ${BW[nccl]:-?} GB/s: ratio $r"
done
[ -n "${BW[profiler]:-}" ] && [ -n "${BW[nccl]:-}" ]
ok $? "every case's bus bandwidth measured (ratios above; the profiler's goal: >= 0.99 at 64 MiB)"
: "$NCCL_OUT"
