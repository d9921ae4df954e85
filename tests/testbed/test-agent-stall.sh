#!/usr/bin/env bash
# The agent's loop never waits on a blocking call, and its events survive
# a crash. On 3 hosts x 2 rails with Slurm (the SPANK plugin required),
# munge, PostgreSQL, the controller and an agent per host:
#  1. n2's agent has its own munged (same key), which is stopped, and
#     finds the controller by a name its DNS server answers 3 s late; the
#     controller restarts, so n2 resolves and mints credentials again
#     (libmunge waits 10 s on a stopped munged) for 15 s or more: every path stays
#     UP (no flap on any agent) and two `srun --fabriciq` steps register
#     with every agent in time (the plugin's 2 s);
#  2. a crash between a write and its ack: n2's rail1 is cut, n2's agent
#     is stopped as soon as it has sent its link events (the controller
#     acknowledges every 5 s), the controller stores them, n2's agent is
#     killed (-9) and restarted: it sends them again (the controller counts
#     them as duplicates), and each is stored exactly once;
#  3. with the controller down, a step registers (answered once on disk),
#     n2's agent is killed (-9) and restarted: the controller, back, has
#     the step with n2's rank, started and ended.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
. "$(dirname "$0")/../lib/munged.sh"
tb_require
B=$top_builddir
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
CTL=$B/controller/fabriciq-controller
AGENT=$B/slurmd-agent/fabriciq-agent
for f in "$SPANK_SO" "$CTL" "$AGENT"; do [ -e "$f" ] || skip_all "$f not built"; done
command -v python3 >/dev/null || skip_all "python3 (the slow DNS server) not installed"
plan 14
tb_setup stall
S=$FQTB_STATE

SPANK="required $SPANK_SO ifaces=rail0,rail1 monitor_via=net required=yes step_socket=$S/run/%n/agent-step.sock"
tb up --prefix "$TB_PFX" --hosts 3 --rails 2 --plugstack "$SPANK" >/dev/null
ok $? "up: 3 hosts x 2 rails, Slurm with the SPANK plugin required"

# n2's own munged (the testbed's key) and resolver: a DNS server in ctl
# answering fqctl.test 3 s late, seen by n2's agent alone (its own mount
# namespace, resolv.conf bound over)
mkdir -p -m 0700 "$S/munge2"
MUNGED_KEY=$S/munge/munge.key MUNGED_LOG=$S/log/munged2.log munged_start "$S/munge2"
ok $? "n2's own munged: ${MUNGED_ERR:-up}"
MUNGE2=$MUNGE_PID
trap 'kill -CONT "$MUNGE2" 2>/dev/null; kill "$MUNGE2" 2>/dev/null; tb_teardown' EXIT
tb daemon start ctl dns -- python3 "$top_srcdir/tests/testbed/tb-slowdns.py" 198.18.0.1 3 fqctl.test=198.18.0.1 >/dev/null
printf 'nameserver 198.18.0.1\noptions timeout:10 attempts:1\n' >"$S/resolv-n2.conf"
cat >"$S/agent-n2.sh" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount --bind "\$0" /etc/resolv.conf && exec "\$@"' "$S/resolv-n2.conf" "$AGENT" "\$@"
EOF
chmod +x "$S/agent-n2.sh"
n2_start() {
	tb_agent_start n2 "$S/agent-n2.sh" -s controller=fqctl.test:7100 -s "munge_socket=$S/munge2/munge.socket"
}
tb_controller_start "$CTL" -s flush_interval=5s
tb_agent_start n1 "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
tb_agent_start n3 "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
n2_start

# status HOST: the agent's status, one line; field HOST PYEXPR on it (s)
field() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$S/agent-$1.json" 2>/dev/null; }
flaps() {
	python3 -c 'import json,sys; print(sum(p["flaps_total"] for f in sys.argv[1:] for p in json.load(open(f))["paths"]))' \
		"$S"/agent-n[123].json
}
connected() { [ "$(field "$1" 's["uplink"]["state"]')" = connected ]; }
wait_connected() {
	for ((i = 0; i < 60; i++)); do connected "$1" && return 0; sleep 0.5; done
	return 1
}
wait_connected n2
ok $? "n2's agent connected through its slow DNS server ($(grep -c fqctl.test "$S/log/ctl.dns.log") queries)"
sleep 3

# 1. munged stopped, the controller restarted: n2 resolves (3 s) and mints (10 s), again and again
f0=$(flaps)
kill -STOP "$MUNGE2"
tb daemon stop ctl controller
tb_controller_start "$CTL" -s flush_interval=5s
t0=$(date +%s%N)
sleep 2
ok "$(connected n2 && echo 1 || echo 0)" "with its munged stopped n2's agent cannot reconnect ($(field n2 's["uplink"]["state"]'))"
fails=0 took=
for k in 1 2; do
	ts=$(date +%s%N)
	# a task alive when the plugin registers: a refused or late registration kills it
	out=$(timeout 30 "$TB" slurm srun -N3 -n3 --fabriciq sleep 4 2>&1) || { fails=$((fails + 1)); diag "$out"; }
	took+=" $((($(date +%s%N) - ts) / 1000000)) ms"
	sleep 1
done
is "$fails" 0 "2 srun --fabriciq steps registered with every agent meanwhile (the plugin waits 2 s; srun took$took)"
# libmunge gives up after 10 s, the connection's read timeout is 10 s
for ((i = 0; i < 40; i++)); do
	grep -q "munged minted no credential\|cannot mint a munge credential" "$S/log/n2.agent.log" && break
	sleep 0.5
done
grep -q "munged minted no credential\|cannot mint a munge credential" "$S/log/n2.agent.log"
ok $? "n2's agent logged why it could not reconnect"
left=$((15 - ($(date +%s%N) - t0) / 1000000000))
[ "$left" -gt 0 ] && sleep "$left"
f1=$(flaps)
is "$f1" "$f0" "for $((($(date +%s%N) - t0) / 1000000000)) s of a stuck munged and slow DNS on n2 no path flapped on any agent (flaps $f0 -> $f1)"
kill -CONT "$MUNGE2"
wait_connected n2
ok $? "munged back: n2 reconnected"

# 2. a crash between a write and its ack: the controller acknowledges what
# it stored every 5 s (flush_interval); n2's agent is stopped as soon as it
# has sent its link events, so it never reads their ack
metric() { tb exec ctl curl -s http://198.18.0.1:7180/metrics | awk -v m="$1" '$1 == m { print $2 }'; }
dup0=$(metric fabriciq_ingest_duplicates_total)
down_lines() { grep -c "is DOWN\|every path is DOWN" "$S/log/n2.agent.log"; }
downs0=$(down_lines)
tb link down n2 1
for ((i = 0; i < 400; i++)); do
	[ "$(down_lines)" -ge $((downs0 + 3)) ] && break
	sleep 0.005
done
kill -STOP "$(cat "$S/daemons/n2.agent.pid")"
logged=$(($(down_lines) - downs0))
stored_q="select count(*) from fabriciq.link_events where node = 'n2' and state = 'down'"
for ((i = 0; i < 30; i++)); do
	[ "$(psql_ctl "$stored_q")" = "$logged" ] && break
	sleep 0.5
done
is "$(psql_ctl "$stored_q")" "$logged" "rail1 of n2 cut: the $logged link events n2 logged are stored, n2 stopped before their ack" ||
	diag "$(grep -v probe "$S/log/n2.agent.log" | tail -8; tail -8 "$S/log/ctl.controller.log")"
kill -KILL "$(cat "$S/daemons/n2.agent.pid")"
rm -f "$S/daemons/n2.agent.pid"
# the new agent finds rail1 still cut and, its start-up grace (5 s) over,
# takes its paths DOWN itself: new events, not the ones it sends again
t_kill=$(date +%s.%N)
n2_start
wait_connected n2 && for ((i = 0; i < 30; i++)); do
	[ "$(field n2 's["spool"]["unacked"]')" -le 8 ] && break
	sleep 0.5
done
dup1=$(metric fabriciq_ingest_duplicates_total)
ok "$((${dup1:-0} - ${dup0:-0} >= logged ? 0 : 1))" \
	"n2's agent, killed and restarted, sent them again: the controller dropped $((${dup1:-0} - ${dup0:-0})) frames as duplicates" ||
	diag "metrics $dup0 -> $dup1; $(grep -o "resending from seq [0-9]*" "$S/log/n2.agent.log" | tail -3 | tr '\n' ' '); acked file $(cat "$S/spool/n2/acked")"
is "$(psql_ctl "$stored_q and detected_at < to_timestamp($t_kill)")" "$logged" "each of n2's $logged link events is stored exactly once" ||
	diag "$(psql_ctl "select detected_at::time, nic, remote_node, remote_nic from fabriciq.link_events where node = 'n2'
		and state = 'down' order by detected_at"; tail -8 "$S/log/n2.agent.log"; tail -12 "$S/log/ctl.controller.log")"
tb link up n2 1

# 3. a step registered while the controller is down, the agent killed after the answer
tb daemon stop ctl controller
out=$(timeout 30 "$TB" slurm srun -N3 -n3 --fabriciq sh -c '[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; true' 2>&1)
ok $? "srun --fabriciq with the controller down: registered (spooled on disk)" || diag "$out"
job=$(awk '/^job / { print $2; exit }' <<<"$out")
kill -KILL "$(cat "$S/daemons/n2.agent.pid")"
rm -f "$S/daemons/n2.agent.pid"
n2_start
tb_controller_start "$CTL" -s flush_interval=5s
wait_connected n2
for ((i = 0; i < 20; i++)); do
	[ "$(psql_ctl "select count(*) from fabriciq.ranks where job_id = ${job:-0} and node = 'n2'")" = 1 ] && break
	sleep 1
done
is "$(psql_ctl "select count(*) from fabriciq.ranks where job_id = ${job:-0} and node = 'n2'")" 1 \
	"job $job: n2's rank stored after n2's agent was killed and restarted"
is "$(psql_ctl "select count(*) from fabriciq.steps where job_id = ${job:-0} and end_time is not null")" 1 \
	"job $job: its step stored, ended"
