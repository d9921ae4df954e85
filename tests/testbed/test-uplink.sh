#!/usr/bin/env bash
# The agents' uplink on the emulated cluster: agents authenticate to the
# controller with munge; the controller is killed for 30 s (agents spool to
# disk) and restarted; every report of the outage arrives, in order, and
# the sequence numbers prove that none was lost: the controller's last
# stored seq of each node equals the agent's last acknowledged seq, and
# every path has a probe window for every second of the outage.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$top_builddir
CTL=$B/controller/fabriciq-controller
AGENT=$B/slurmd-agent/fabriciq-agent
for f in "$CTL" "$AGENT"; do [ -x "$f" ] || skip_all "$f not built"; done
OUTAGE=${FQ_UPLINK_OUTAGE_S:-30}
plan 8
tb_setup up
S=$FQTB_STATE
ctl_start() {
	tb daemon start ctl controller -- "$CTL" -c /dev/null -s listen=198.18.0.1:7100 -s http_listen= \
		-s "db=host=198.18.0.1 port=5432 user=postgres dbname=fabriciq" \
		-s "munge_socket=$S/munge/munge.socket" -s "spool_dir=$S/spool/ctl" >/dev/null
}
status_num() { # HOST SECTION KEY
	"$AGENT" -c /dev/null -s "status_file=$S/agent-$1.json" --status --json | tr -d ' \n' |
		grep -o "\"$2\":{[^}]*}" | grep -o "\"$3\":[0-9]*" | grep -o '[0-9]*$'
}

tb up --prefix "$TB_PFX" --hosts 3 --rails 2 --clock-offsets random >/dev/null
ok $? "up: 3 hosts x 2 rails with munge and PostgreSQL"
mkdir -p "$S/spool"
ctl_start
sleep 1
tb_agents_start "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
sleep 5
is "$(psql_ctl 'select count(*) from fabriciq.nodes')" 3 "3 agents authenticated and stored"

tb daemon stop ctl controller
t0=$(date +%s)
diag "controller stopped for $OUTAGE s"
sleep "$OUTAGE"
spooled=$(status_num n2 spool unacked)
[ "${spooled:-0}" -ge $((OUTAGE * 4)) ]; ok $? "n2 spooled its reports while the controller was away ($spooled frames)"
t1=$(date +%s)
ctl_start
# caught up: at most the current window's frames (one per path, a clock
# report) wait for their acknowledgement when the status is written
caught_up() {
	local h u
	for h in n1 n2 n3; do
		u=$(status_num $h spool unacked)
		[ "${u:-999}" -le 8 ] || return 1
	done
}
for ((i = 0; i < 40; i++)); do
	sleep 0.5
	caught_up && break
done
caught_up; ok $? "every agent reconnected and its spool was acknowledged within $((i / 2)) s of the restart" ||
	diag "unacked: $(for h in n1 n2 n3; do status_num $h spool unacked; done | tr '\n' ' ')"
bad=0
for h in n1 n2 n3; do
	acked=$(status_num "$h" uplink acked_seq)
	stored=$(psql_ctl "select last_seq from fabriciq.agent_seq where node = '$h'")
	[ -n "$acked" ] && [ "$stored" -ge "$acked" ] || { bad=1; diag "$h: acked $acked, stored $stored"; }
done
ok $bad "the controller's last stored seq covers every agent's acknowledged seq"
# 2 NICs x 2 peers = 4 paths per host, one window per path per second
n=$(psql_ctl "select count(*) from fabriciq.probe_windows where src_node = 'n2'
	and window_start >= to_timestamp($t0 + 2) and window_start < to_timestamp($t1 - 2)")
want=$(((t1 - t0 - 4) * 4))
[ "$n" -ge $((want - 4)) ]; ok $? "n2's probe windows of the outage are all stored ($n of ~$want)"
dups=$(psql_ctl "select count(*) from (select 1 from fabriciq.probe_windows group by src_node, src_nic,
	dst_node, dst_nic, window_start having count(*) > 1) d")
is "$dups" 0 "no window stored twice"

# without agent.nics the agent finds the rails itself, and leaves out the
# front-end NIC (the one that reaches the controller)
mkdir -p "$S/disc"
out=$(tb exec n3 timeout 2 "$AGENT" -c /dev/null -s node=n3 -s port=7199 -s controller=198.18.0.1:7100 \
	-s "munge_socket=$S/munge/munge.socket" -s "run_dir=$S/disc" -s "spool_dir=$S/disc/spool" \
	-s "status_file=$S/disc/status.json" 2>&1)
grep -q "back-end NICs discovered: rail0,rail1; front-end (not probed): eth0" <<<"$out"
ok $? "NIC discovery: rail0,rail1, not the front-end eth0" || diag "$out"
