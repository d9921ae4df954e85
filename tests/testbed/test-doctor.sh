#!/usr/bin/env bash
# `fabriciq doctor` on the emulated cluster, run inside a host as NHC would:
# with the controller, munge, the agents and the SPANK plugin in Slurm's
# plugstack.conf, every check passes (exit 0, --json); with n1's agent
# stopped, the agent check fails saying the agent has exited, exit 1, while
# n2's doctor still passes.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$top_builddir
CTL=$B/controller/fabriciq-controller
AGENT=$B/slurmd-agent/fabriciq-agent
CLI=$B/controller/fabriciq
SPANK=$B/spank/.libs/spank_fabriciq.so
NCCL=$B/nccl-plugin/.libs/libnccl-net-fabriciq.so
for f in "$CTL" "$AGENT" "$CLI" "$SPANK" "$NCCL"; do [ -e "$f" ] || skip_all "$f not built"; done
command -v python3 >/dev/null || skip_all "python3 not installed (JSON checks)"
plan 8
tb_setup doc
S=$FQTB_STATE

# doctor HOST [ARG...]: fabriciq doctor inside HOST, with the paths the
# testbed's agent of HOST runs on (tb_agent_start).
doctor() {
	local host=$1
	shift
	tb exec "$host" "$CLI" -m "$S/munge/munge.socket" doctor -c /dev/null -s "status_file=$S/agent-$host.json" \
		-s "run_dir=$S/run/$host" -s nics=rail0,rail1 -s controller=198.18.0.1:7100 \
		-p "$S/slurm/plugstack.conf" -n "$NCCL" "$@"
}
# result CHECK: that check's result and message from the JSON on stdin.
result() { python3 -c 'import json, sys; print(*[c["result"] + " " + c["message"] for c in json.load(sys.stdin)["checks"] if c["check"] == sys.argv[1]])' "$1"; }

tb up --prefix "$TB_PFX" --hosts 3 --rails 2 --clock-offsets random \
	--plugstack "optional $SPANK libdir=$B/nccl-plugin/.libs" >/dev/null
ok $? "up: 3 hosts x 2 rails, the SPANK plugin in plugstack.conf"
tb_controller_start "$CTL"
sleep 1
tb_agents_start "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
tb_clocks_published 30; ok $? "the agents published their clock pages"

# the clock's error bound comes under the 1 ms budget once the fit has a window
for ((i = 0; i < 30; i++)); do
	out=$(doctor n1 --json); rc=$?
	[ $rc -eq 0 ] && break
	sleep 1
done
is $rc 0 "doctor on n1: every check passes (exit 0) within $i s of the clock pages" || diag "$out"
is "$(python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["node"], j["ok"], sorted({c["result"] for c in j["checks"]}))' <<<"$out")" \
	"n1 True ['pass']" "... --json: node n1, ok, nothing skipped" || diag "$out"
text=$(doctor n1)
grep -q "^PASS  controller  connected and authenticated to 198.18.0.1:7100" <<<"$text"; ok $? "... the uplink is authenticated" || diag "$text"

tb daemon stop n1 agent
out=$(doctor n1 --json); rc=$?
is $rc 1 "n1's agent stopped: doctor exits 1"
grep -q "^fail fabriciq-agent is not running: pid [0-9]* (status file $S/agent-n1.json) has exited" <<<"$(result agent <<<"$out")"
ok $? "... the agent check says it exited" || diag "$out"
# a node-local verdict: n2 still probes n3, its uplink and clock are its own
doctor n2 >/dev/null; is $? 0 "... n2's doctor still passes"
