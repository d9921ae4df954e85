#!/usr/bin/env bash
# The controller's loop never waits for PostgreSQL's name or connection. On
# 2 hosts x 1 rail with munge, PostgreSQL and an agent per host, the
# controller finds PostgreSQL by a name its DNS server answers 8 s late
# (its own mount namespace, resolv.conf bound over):
#  1. at start, both agents are served (authenticated, their reports
#     acknowledged, as their status files say once a second) within 5 s,
#     while the database is still being found;
#     what they sent meanwhile is stored once it is found (from the spool);
#  2. PostgreSQL ends the controller's sessions mid-run: it opens new ones
#     (8 s each, the name again) off its loop, and the agents'
#     acknowledgements never pause for 4 s or more;
#  3. every probe window is stored once, with no second missing.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$top_builddir
CTL=$B/controller/fabriciq-controller
AGENT=$B/slurmd-agent/fabriciq-agent
for f in "$CTL" "$AGENT"; do [ -e "$f" ] || skip_all "$f not built"; done
command -v python3 >/dev/null || skip_all "python3 (the slow DNS server) not installed"
plan 7
tb_setup cstall
S=$FQTB_STATE
DELAY=8

tb up --prefix "$TB_PFX" --hosts 2 --rails 1 --leaves 1 --spines 1 >/dev/null
ok $? "up: 2 hosts x 1 rail with munge and PostgreSQL"

tb daemon start ctl dns -- python3 "$top_srcdir/tests/testbed/tb-slowdns.py" 198.18.0.1 $DELAY fqdb.test=198.18.0.1 >/dev/null
printf 'nameserver 198.18.0.1\noptions timeout:20 attempts:1\n' >"$S/resolv-ctl.conf"
cat >"$S/controller.sh" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount --bind "\$0" /etc/resolv.conf && exec "\$@"' "$S/resolv-ctl.conf" "$CTL" "\$@"
EOF
chmod +x "$S/controller.sh"

# field HOST PYEXPR: on the agent's status (s)
field() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$S/agent-$1.json" 2>/dev/null; }
acked() { field "$1" 's["uplink"]["acked_seq"]'; }
t0=$(date +%s%N)
tb_controller_start "$S/controller.sh" -s "db=host=fqdb.test port=5432 user=postgres dbname=fabriciq" -s db_connect_timeout=20s
tb_agents_start "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
for ((i = 0; i < 70; i++)); do
	[ "$(acked n1)" -gt 0 ] 2>/dev/null && [ "$(acked n2)" -gt 0 ] 2>/dev/null && break
	sleep 0.1
done
took=$((($(date +%s%N) - t0) / 1000000))
stored=$(psql_ctl "select count(*) from fabriciq.probe_windows" 2>/dev/null) # no table before the controller's first connection
[ "$(acked n1)" -gt 0 ] 2>/dev/null && [ "$(acked n2)" -gt 0 ] 2>/dev/null && [ $took -lt 5000 ] && [ "${stored:-0}" = 0 ]
ok $? "both agents acknowledged $took ms after the controller started, the database not yet found (${stored:-no} windows stored)" ||
	diag "$(tail -5 "$S/log/ctl.controller.log")"
tb_agents_ready 40
ok $? "the database found (a $DELAY s answer): what the agents sent meanwhile is stored ($(grep -c fqdb.test "$S/log/ctl.dns.log") DNS queries so far)"

# 2. PostgreSQL ends the controller's sessions; the acknowledgements go on
q0=$(grep -c fqdb.test "$S/log/ctl.dns.log")
killed=$(psql_ctl "select count(pg_terminate_backend(pid)) from pg_stat_activity
	where datname = 'fabriciq' and backend_type = 'client backend' and pid <> pg_backend_pid()")
prev=$(acked n1) last=$(date +%s%N) pause=0
for ((i = 0; i < 80; i++)); do # 16 s: the loss seen, the backoff, an 8 s name, the spool replayed
	sleep 0.2
	a=$(acked n1) now=$(date +%s%N)
	if [ "$a" != "$prev" ]; then
		prev=$a last=$now
	fi
	[ $(((now - last) / 1000000)) -gt $pause ] && pause=$(((now - last) / 1000000))
done
q1=$(grep -c fqdb.test "$S/log/ctl.dns.log")
[ "$killed" -ge 1 ] && [ $pause -lt 4000 ] && [ "$q1" -gt "$q0" ]
ok $? "the controller's $killed sessions ended: it found the database again ($((q1 - q0)) DNS queries), n1's acknowledgements paused at most $pause ms" ||
	diag "$(grep -i "database" "$S/log/ctl.controller.log" | tail -5)"
grep -q "database is back" "$S/log/ctl.controller.log"
ok $? "the controller says the database is back"

# 3. every window once, none missing: n1's path to n2, one a second
sleep 3
is "$(psql_ctl "select count(*) - count(distinct (src_node, agent_seq)) from fabriciq.probe_windows")" 0 "no probe window stored twice"
gap=$(psql_ctl "select coalesce(max(extract(epoch from window_start - prev) * 1000)::int, -1) from (select window_start,
	lag(window_end) over (partition by src_node order by window_start) prev from fabriciq.probe_windows) w")
[ "$gap" -ge 0 ] && [ "$gap" -lt 500 ]
ok $? "each agent's probe windows follow each other throughout, before, during and after (largest gap $gap ms)"
