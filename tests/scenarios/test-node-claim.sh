#!/usr/bin/env bash
# Scenario: root on one host claims another node's name. 4 hosts x 2
# rails; each node is bound to the address its agent first came from
# (controller.bind_nodes), and the bindings outlive a controller restart.
# With n2's agent away, an agent on n3 that calls itself n2 is refused every
# time it tries (its refusals = the controller's count), and n2's own agent
# gets back in.
. "$(dirname "$0")/scenario.sh"
sc_require scnc
plan 7
sc_up 4 2 2 2
ok $? "up: 4 hosts x 2 rails, 2 leaves, 2 spines; controller and 4 agents reporting"

bindings=$S/spool/ctl/node-addresses
addr() { awk -v n="$1" '$1 == n { print $2 }' "$bindings"; }
[ "$(grep -c '^n[1-4] 198\.18\.' "$bindings")" = 4 ] && [ "$(awk '!/^#/ { print $2 }' "$bindings" | sort -u | wc -l)" = 4 ]
ok $? "each node bound to its own address ($(addr n2) for n2)" || diag "$(cat "$bindings")"

tb daemon stop ctl controller >/dev/null
sc_controller_start
for ((i = 0; i < 30; i++)); do
	[ "$(json 'j["uplink"]["state"]' <"$S/agent-n2.json")" = connected ] && break
	sleep 0.5
done
ok $((i == 30)) "the controller restarted; n2's agent is back in"

tb daemon stop n2 agent >/dev/null
mkdir -p "$S/run/imp"
"$TB" daemon start n3 impostor -- "$AGENT" -c /dev/null -s node=n2 -s nics=rail0 -s port=7109 \
	-s "run_dir=$S/run/imp" -s "spool_dir=$S/spool/imp" -s "status_file=$S/agent-imp.json" \
	"${sc_agent_args[@]}" -s "munge_socket=$S/munge/munge.socket" >/dev/null
for ((i = 0; i < 40; i++)); do
	[ "$(json 'j["uplink"]["auth_refusals"]' 2>/dev/null <"$S/agent-imp.json")" -ge 3 ] 2>/dev/null && break
	sleep 0.5
done
tb daemon stop n3 impostor >/dev/null # its last status is written as it stops
refusals=$(json 'j["uplink"]["auth_refusals"]' <"$S/agent-imp.json")
last=$(json 'j["uplink"]["last_error"]' <"$S/agent-imp.json")
grep -qF "node n2 belongs to $(addr n2), not $(addr n3)" <<<"$last"
ok $? "an agent on n3 calling itself n2 is refused $refusals times, told whose name it is" || diag "$last"
counted=$("$TB" exec ctl python3 -c 'import urllib.request
for l in urllib.request.urlopen("http://198.18.0.1:7180/metrics").read().decode().splitlines():
    if l.startswith("fabriciq_node_claims_refused_total "): print(int(float(l.split()[1])))')
is "$counted" "$refusals" "every one of its $refusals tries refused and counted by the controller"
is "$(grep -c "agent $(addr n3):[0-9]*: node n2 " "$S/log/ctl.controller.log") $(grep -c '^n2 ' "$bindings")" "0 1" \
	"no session of n2 from n3's address; n2 keeps its one binding"

sc_agent_start n2
for ((i = 0; i < 40; i++)); do
	[ "$(json 'j["uplink"]["state"]' <"$S/agent-n2.json" 2>/dev/null)" = connected ] && break
	sleep 0.5
done
ok $((i == 40)) "n2's own agent gets back in (after $((i / 2)) s)"
