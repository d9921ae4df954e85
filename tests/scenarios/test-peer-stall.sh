#!/usr/bin/env bash
# Scenario: a peer's agent stood still. 5 hosts x 2 rails on 3 leaves;
# n4's agent is stopped (SIGSTOP: its session stays open) for 1.5 s, as a
# host that gives its agent no CPU does. Its peers' paths to n4 go DOWN at
# them, and the links are fine: its stall report (AgentStall) explains
# them, no anomaly. Then n5's agent stands still as n5/rail0's link goes
# down and stays down 6 s: that is reported (link_down), stall or not.
. "$(dirname "$0")/scenario.sh"
sc_require sstl
plan 6
sc_up 5 2 3 2
ok $? "up: 5 hosts x 2 rails, 3 leaves, 2 spines; controller and 5 agents reporting"

sleep 2
p4=$(sc_agent_pid n4)
kill -STOP "$p4" && sleep 1.5 && kill -CONT "$p4"
ok $? "n4's agent stood still for 1.5 s (SIGSTOP, its session open)"
sleep 6 # the peers' DOWNs, their settle time, the report
grep -q "n4's agent stood still" "$S/log/ctl.controller.log"
ok $? "the controller took n4's paths' DOWNs for its agent standing still" ||
	diag "$(grep -E 'stood still|DOWN' "$S/log/ctl.controller.log" | tail -5)"
is "$(sc_anomalies "kind in ('link_down', 'flapping') or 'n4' in (node, remote_node)")" "" \
	"no link down, no anomaly of n4: n4's agent stood still, no link went down" ||
	diag "$(psql_ctl "select kind, severity, summary from fabriciq.anomalies order by id")"

p5=$(sc_agent_pid n5)
kill -STOP "$p5" && tb link down n5 0 >/dev/null
sleep 1.5
kill -CONT "$p5"
sleep 6
tb link up n5 0 >/dev/null
sleep 4
rail0=$(sc_anomalies "kind = 'link_down' and ((node, nic) = ('n5', 'rail0') or (remote_node, remote_nic) = ('n5', 'rail0'))")
[ -n "$rail0" ]; ok $? "n5/rail0 down 7.5 s while n5's agent stood still 1.5 s: link_down (${rail0//$'\n'/, })" ||
	diag "$(psql_ctl "select kind, severity, summary from fabriciq.anomalies order by id")"
is "$(sc_anomalies "kind in ('link_down', 'flapping') and 'n5' in (node, remote_node) and 'rail1' in (nic, remote_nic)")" "" \
	"... and none of n5/rail1, whose paths were silent only while the agent stood still"
