#!/usr/bin/env bash
# Cost of the plugin's telemetry: allreduce 64 MiB, 4 ranks over loopback,
# telemetry off vs on (100 ms intervals, an agent socket that reads every
# report), alternating runs in the same session; prints the median busbw of
# each and the loss (goal <= 2 %). 4 ranks share this machine's cores, so
# the figure includes CPU contention, not only the plugin's own work.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
REPEAT=${BENCH_TELEMETRY_REPEAT:-3}
for f in "$CB" "$SO"; do [ -e "$f" ] || { echo "bench-nccl-telemetry: $f not built"; exit 1; }; done
command -v python3 >/dev/null || { echo "bench-nccl-telemetry: SKIP: python3 (the agent socket's reader) not installed"; exit 0; }
tmp=$(mktemp -d)
sink=
trap '[ -n "$sink" ] && kill "$sink" 2>/dev/null; rm -rf "$tmp"' EXIT
export FABRICIQ_IFACES=lo FABRICIQ_AGENT_SOCKET="$tmp/agent.sock" FABRICIQ_CLOCK_PAGE=/nonexistent
# The agent's telemetry socket, reduced to what matters here: it reads everything.
python3 - "$tmp/agent.sock" "$tmp/bytes" <<'PY' &
import socket, sys, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(64)
total = [0]
def reader(c):
    while True:
        b = c.recv(65536)
        if not b: break
        total[0] += len(b)
        open(sys.argv[2], "w").write(str(total[0]))
while True:
    c, _ = s.accept(); threading.Thread(target=reader, args=(c,), daemon=True).start()
PY
sink=$!
sleep 0.5
port=$((40000 + $$ % 10000))
run() { # TELEMETRY -> busbw
	local pids=()
	port=$((port + 1))
	for r in 3 2 1; do
		FABRICIQ_TELEMETRY=$1 "$CB" -p "$SO" --rank $r --nranks 4 --bootstrap 127.0.0.1:$port --coll allreduce \
			-b 64M -e 64M -n 5 -w 1 >/dev/null &
		pids+=($!)
	done
	FABRICIQ_TELEMETRY=$1 "$CB" -p "$SO" --rank 0 --nranks 4 --bootstrap 127.0.0.1:$port --coll allreduce \
		-b 64M -e 64M -n 5 -w 1 | awk '!/^#/ { print $7 }'
	wait "${pids[@]}"
}
off=() on=()
for _ in $(seq "$REPEAT"); do
	off+=("$(run 0)")
	on+=("$(run 1)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
m_off=$(median "${off[@]}") m_on=$(median "${on[@]}")
echo "allreduce 64 MiB, 4 ranks, busbw GB/s: telemetry off ${off[*]} (median $m_off), on ${on[*]} (median $m_on)"
echo "agent socket received $(cat "$tmp/bytes" 2>/dev/null || echo 0) bytes of lane reports"
awk -v a="$m_off" -v b="$m_on" 'BEGIN { printf "busbw loss with telemetry: %.2f %% (ratio on/off %.3f; goal <= 2 %%)\n", (a - b) / a * 100, b / a }'
