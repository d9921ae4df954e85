#!/usr/bin/env bash
# Lane traces on the emulated cluster (Slurm with the SPANK plugin, an
# agent per host, no controller): an alltoall of four ranks on n1, n2
# (leaf1), n3, n4 (leaf2), FABRICIQ_LANES=4. Every TCP lane the ranks
# sent on (their connections, seen with ss while the job runs) is traced
# by its sending end's agent, and each lane's hops are what the source
# leaf's FIB says for that lane's own 5-tuple (ip route get ... ipproto tcp
# sport dport): the source leaf's port, the spine's port from the source
# leaf, the far leaf's port from that spine, each router by its inbound
# interface (the source leaf's port alone within a leaf). No segment errors
# and no answer left unmatched.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$(cd "$top_builddir" && pwd) # slurmd runs elsewhere: absolute paths
CB=$B/tools/collbench/fabriciq-collbench
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
AGENT=$B/slurmd-agent/fabriciq-agent
for f in "$CB" "$SPANK_SO" "$AGENT"; do [ -e "$f" ] || skip_all "$f not built"; done
plan 8
tb_setup tlt
S=$FQTB_STATE
BOOT=17121

SPANK="optional $SPANK_SO libdir=$B/nccl-plugin/.libs ifaces=rail0,rail1 monitor_via=net step_socket=$S/run/%n/agent-step.sock"
check "up: 4 hosts x 2 rails, 2 leaves, 2 spines, Slurm with the SPANK plugin" \
	tb up --prefix "$TB_PFX" --hosts 4 --rails 2 --leaves 2 --spines 2 --services munge,slurm --plugstack "$SPANK"
tb_agents_start "$AGENT"
ok $? "4 agents started"
status() { "$AGENT" -c /dev/null -s "status_file=$S/agent-$1.json" --status --json; }
# routes HOST: how many of its 6 paths have a whole route (each path's
# first probe flow's: a lane's TTL cap is its NIC pair's flow 0 route)
routes() {
	status "$1" 2>/dev/null | python3 -c 'import json, sys
t = json.load(sys.stdin).get("traces", {})
print(sum(1 for r in t.get("routes", []) if not r.get("flow", 0) and r["reached"] and all(r["hops"])))' 2>/dev/null
}
for ((t = 0; t < 60; t++)); do
	[ "$(routes n1) $(routes n2) $(routes n3) $(routes n4)" = "6 6 6 6" ] && break
	sleep 0.5
done
is "$(routes n1) $(routes n2) $(routes n3) $(routes n4)" "6 6 6 6" \
	"every agent knows the route of each of its 6 paths (its lanes' TTL cap)"

# the job, its connections sampled while it runs (ss with TCP info: each
# host's established connections and the bytes each sent and received)
FABRICIQ_LANES=4 "$TB" slurm srun -N4 -n4 --fabriciq sh -c '[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@"' sh \
	"$CB" --bootstrap "198.19.0.3:$BOOT" --coll alltoall -b 1M -e 1M -n 2000 -w 5 >"$S/job.out" 2>&1 &
job_pid=$!
: >"$S/ss-n1" >"$S/ss-n2" >"$S/ss-n3" >"$S/ss-n4"
while kill -0 "$job_pid" 2>/dev/null; do
	for h in n1 n2 n3 n4; do tb exec "$h" ss -Htni state established >>"$S/ss-$h"; done
	sleep 0.3
done
wait "$job_pid"
ok $? "srun --fabriciq: alltoall on n1-n4 through the plugin" || diag "$(tail -5 "$S/job.out")"
job=$(awk '/^job / { print $2; exit }' "$S/job.out")
diag "$(cat "$S"/ss-n? | grep -c '^[0-9]') connections sampled while the job ran"

# every lane (its sending end: the end of a rail connection between two
# hosts that sent more than it received, and over 1 MB: no bootstrap or
# control connection) and each traced route against the
# FIB: "LANES TRACED RIGHT",
# the spines crossed, then what is wrong
evaluate() {
	for h in n1 n2 n3 n4; do status "$h" >"$S/$h.json"; done
	python3 - "$S" "${job:-0}" "$BOOT" "$TB_PFX" <<'EOF'
import json, subprocess, sys
S, job, boot, pfx = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
hosts = {f"198.19.{r}.{2 * i + 1}": f"n{i}" for i in range(1, 5) for r in range(2)}
sent, got = {}, {}
for h in ("n1", "n2", "n3", "n4"):
    conn = None
    for line in open(f"{S}/ss-{h}"):
        f = line.split()
        if line[:1].isdigit() and len(f) >= 4:
            conn = (f[2], f[3])
            continue
        if conn is None:
            continue
        for w in f:
            k, _, v = w.partition(":")
            if k == "bytes_sent":
                sent[conn] = max(sent.get(conn, 0), int(v))
            elif k == "bytes_received":
                got[conn] = max(got.get(conn, 0), int(v))
        conn = None
lanes = set()
for (loc, rem), n in sent.items():
    la, lp = loc.rsplit(":", 1)
    ra, rp = rem.rsplit(":", 1)
    if la in hosts and ra in hosts and boot not in (lp, rp) and n > max(got.get((loc, rem), 0), 1000000):
        lanes.add((loc, rem))
traced, wrong, spines = {}, [], {}
for h in ("n1", "n2", "n3", "n4"):
    st = json.load(open(f"{S}/{h}.json"))
    for r in st.get("lane_traces", {}).get("routes", []):
        if r["job_id"] == job:
            traced[(r["local_address"], r["remote_address"])] = (h, r)
def leaf(i):  # 4 hosts, 2 leaves
    return (i - 1) * 2 // 4 + 1
for (loc, rem), (h, r) in sorted(traced.items()):
    la, lp = loc.rsplit(":", 1)
    ra, rp = rem.rsplit(":", 1)
    rail, i, j = int(la.split(".")[2]), (int(la.split(".")[3]) - 1) // 2, (int(ra.split(".")[3]) - 1) // 2
    li, lj = leaf(i), leaf(j)
    dev = subprocess.run(["ip", "-n", f"{pfx}-leaf{li}", "route", "get", ra, "from", la, "iif", f"n{i}r{rail}",
                          "ipproto", "tcp", "sport", lp, "dport", rp], capture_output=True, text=True).stdout
    words = dev.split()
    d = words[words.index("dev") + 1] if "dev" in words else "?"
    s = int(d[1:]) if d[:1] == "s" and d[1:].isdigit() else 0
    want = [f"198.19.{rail}.{2 * i}", f"198.18.{100 + li}.{2 * s - 1}", f"198.18.{100 + lj}.{2 * s - 2}"]
    if li == lj:
        s, want = 0, [f"198.19.{rail}.{2 * i}"]
    if r["hops"] != want:
        wrong.append(f"{h} {loc} -> {rem}: {r['hops']}, FIB says {want}")
    k = f"spine{s}" if s else "leaf"
    spines[k] = spines.get(k, 0) + 1
missing = sorted(lanes - set(traced))
extra = sorted(set(traced) - lanes)
print(len(lanes), len(traced), len(traced) - len(wrong))
conns = {c for c in sent if c[0].rsplit(":", 1)[0] in hosts and c[1].rsplit(":", 1)[0] in hosts}
print(f"{len(conns)} host-to-host rail connection ends seen;", "crossed:", " ".join(f"{k} {v}" for k, v in sorted(spines.items())))
for w in wrong:
    print("# wrong:", w)
for m in missing:
    print("# not traced:", m)
for e in extra:
    print("# traced, no such connection seen:", e)
EOF
}
# a lane's trace takes 1 s at most; one with an answer lost is retried
# after 10 s (3 tries): wait for all, bounded
for ((t = 0; t < 40; t++)); do
	sleep 1
	out=$(evaluate)
	read -r n_lanes n_traced n_right <<<"$(head -1 <<<"$out")"
	[ "${n_lanes:-0}" -ge 1 ] && [ "$n_traced" = "$n_lanes" ] && break
done
diag "job $job: $n_lanes lanes seen (sending ends), $n_traced traced, $n_right of them as the FIB says; $(sed -n 2p <<<"$out")"
[ "${n_lanes:-0}" -ge 2 ]; ok $? "the job's lanes were seen ($n_lanes)"
is "$n_traced" "$n_lanes" "every lane traced by its sending end's agent, no other" || diag "$(tail -n +3 <<<"$out")"
is "$n_right" "$n_traced" "every lane's hops are its source leaf's FIB's for its 5-tuple" || diag "$(tail -n +3 <<<"$out")"
counters=$(python3 -c 'import json, sys
for f in sys.argv[1:]:
    t = json.load(open(f)).get("lane_traces", {})
    print(t.get("send_errors"), t.get("unmatched"), t.get("partial"), end=" ")' "$S"/n[1-4].json)
diag "n1-n4 lane traces: send_errors unmatched partial: $counters (after $t s more)"
diag "n1: $(python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["lane_traces"]
print({k: v for k, v in t.items() if k != "routes"})' "$S/n1.json")"
is "$(awk '{ print $1, $2, $4, $5, $7, $8, $10, $11 }' <<<"$counters")" "0 0 0 0 0 0 0 0" \
	"n1-n4: no send error, no unmatched answer"
