#!/usr/bin/env bash
# fabriciq-collbench on the emulated cluster: one rank per host, the plugin
# on both rails (FABRICIQ_IFACES=rail0,rail1). allreduce and alltoall with
# 2 and 4 ranks, verified; the lanes of a connection really use both rails;
# ranks launched by Slurm (srun) take their rank from SLURM_PROCID.
. "$(dirname "$0")/testbed.sh"
nccl_tb_setup nc
plan 11

check "up: 4 hosts, 2 rails, munge and Slurm" tb up --prefix "$TB_PFX" --services munge,slurm --clock-offsets zero
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; tb_teardown' EXIT
port=29600

# run N ARGS...: ranks 0..N-1 on n1..nN, rank 0's table in $out.
run() {
	local n=$1 pids=() rc=0
	shift
	port=$((port + 1))
	for r in $(seq $((n - 1)) -1 0); do
		tb exec "n$((r + 1))" env FABRICIQ_IFACES=rail0,rail1 FABRICIQ_TELEMETRY=0 \
			timeout 120 "$CB" -p "$SO" --rank "$r" --nranks "$n" --bootstrap "198.19.0.3:$port" "$@" \
			>"$tmp/out.$r" 2>"$tmp/err.$r" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	out=$(cat "$tmp/out.0")
	[ $rc -eq 0 ] || { diag "a rank failed:"; cat "$tmp"/err.* | sed 's/^/#   /' | head -10; }
	return $rc
}
verified() { [ -n "$out" ] && [ -z "$(awk '!/^#/ && $8 != 0' <<<"$out")" ] && grep -q '^# OK' <<<"$out"; }
rx() { tb exec "$1" cat "/sys/class/net/$2/statistics/rx_bytes"; }

for n in 2 4; do
	run $n --coll allreduce -b 8 -e 16M -f 8 -n 3 -w 1 && verified; ok $? "allreduce, $n ranks on $n hosts, verified"
	run $n --coll alltoall -b 64 -e 16M -f 8 -n 3 -w 1 && verified; ok $? "alltoall, $n ranks on $n hosts, verified"
done
diag "$(grep -v '^#' <<<"$out" | tail -1)"

r0=$(rx n2 rail0) r1=$(rx n2 rail1)
run 2 --coll pingpong -b 64M -e 64M -n 4 -w 0
d0=$(($(rx n2 rail0) - r0)) d1=$(($(rx n2 rail1) - r1))
diag "n2 received $d0 bytes on rail0, $d1 on rail1"
[ $d0 -gt $((64 << 20)) ] && [ $d1 -gt $((64 << 20)) ]
ok $? "a 2-lane connection carries data over both rails"
run 2 --coll pingpong -b 8 -e 8 -n 200 -w 20; ok $? "8-byte ping-pong across the fabric"
diag "$(grep -v '^#' <<<"$out")"
out=$(tb exec n2 env -u FABRICIQ_IFACES FABRICIQ_TELEMETRY=0 "$CB" -p "$SO" --rank 0 --nranks 1 --coll allreduce -b 8 -e 8 -n 1 -w 0)
grep -q '^# device [0-9]: rail0, [0-9]* Mbps' <<<"$out" && grep -q '^# device [0-9]: rail1,' <<<"$out"
ok $? "autodetection (no FABRICIQ_IFACES) finds both rails with a speed" || diag "$out"
out=$(timeout 120 "$TB" slurm srun -N4 -n4 env FABRICIQ_IFACES=rail0,rail1 FABRICIQ_TELEMETRY=0 \
	"$CB" -p "$SO" --bootstrap 198.19.0.3:$((port + 1)) --coll alltoall -b 1K -e 1M -f 32 -n 3 -w 1 2>&1)
ok $? "srun -N4 -n4: ranks from SLURM_PROCID/SLURM_NTASKS, alltoall runs" || diag "$out"
verified; ok $? "srun alltoall verified" || diag "$out"
run 1 --coll allreduce -b 1M -e 1M -n 1 -w 0 --dev 7 2>/dev/null; [ $? -ne 0 ]
ok $? "a device index past the rails fails cleanly"
done_testing
