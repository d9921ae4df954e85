#!/usr/bin/env bash
# Scenario: root on one host claims another node's name. 4 hosts x 2
# rails; each node is bound to the address its agent first came from
# (controller.bind_nodes), and the bindings outlive a controller restart.
# With n2's agent away, an agent on n3 that calls itself n2 is refused every
# time it tries (its refusals = the controller's count), and n2's own agent
# gets back in. Then the stronger binding, keys (common/signkey.h): the
# operator binds n2 and a node that never connected (n9) to keys made by
# fabriciq-agent --new-key and reloads the controller (SIGHUP); root on n3
# with a key of its own is refused as n2, and as n9 (a name trust on first
# use would have given away); n2's agent signs with its key and gets in;
# the controller restarted with its own key (controller.key) is accepted
# by an agent that requires it (agent.controller_key).
. "$(dirname "$0")/scenario.sh"
sc_require scnc
plan 14
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

# ---- keys --------------------------------------------------------------
K=$S/keys
mkdir -p "$K"
n2line=$("$AGENT" -c /dev/null -s node=n2 --new-key "$K/n2.key" 2>/dev/null)
n9line=$("$AGENT" -c /dev/null -s node=n9 --new-key "$K/n9.key" 2>/dev/null)
"$AGENT" -c /dev/null -s node=n2 --new-key "$K/imp.key" >/dev/null 2>&1
ctlpub=$("$CTL" --new-key "$K/controller.key" 2>/dev/null)
tb daemon stop n2 agent >/dev/null
sed -i '/^n2 /d' "$bindings"
printf '%s\n%s\n' "$n2line" "$n9line" >>"$bindings"
before=$(grep -c "SIGHUP: [0-9]* node bindings reloaded" "$S/log/ctl.controller.log")
kill -HUP "$(cat "$S/daemons/ctl.controller.pid")"
for ((i = 0; i < 20; i++)); do
	[ "$(grep -c "SIGHUP: 5 node bindings reloaded" "$S/log/ctl.controller.log")" -gt "$before" ] && break
	sleep 0.25
done
ok $((i == 20)) "n2 and n9 bound to keys (${n2line%% *} ${n2line#* }), the controller reloaded by SIGHUP: 5 bindings"

# claim NAME KEYFILE: root on n3 runs an agent calling itself NAME (signing
# with KEYFILE when given) until the controller has refused it 3 times;
# prints its refusals and its last error.
claim() {
	rm -rf "$S/run/imp" "$S/spool/imp" "$S/agent-imp.json"
	mkdir -p "$S/run/imp"
	"$TB" daemon start n3 impostor -- "$AGENT" -c /dev/null -s "node=$1" -s nics=rail0 -s port=7109 \
		-s "run_dir=$S/run/imp" -s "spool_dir=$S/spool/imp" -s "status_file=$S/agent-imp.json" \
		${2:+-s "node_key=$2"} "${sc_agent_args[@]}" -s "munge_socket=$S/munge/munge.socket" >/dev/null
	for ((i = 0; i < 40; i++)); do
		[ "$(json 'j["uplink"]["auth_refusals"]' 2>/dev/null <"$S/agent-imp.json")" -ge 3 ] 2>/dev/null && break
		sleep 0.5
	done
	tb daemon stop n3 impostor >/dev/null
	echo "$(json 'j["uplink"]["auth_refusals"]' <"$S/agent-imp.json") $(json 'j["uplink"]["last_error"]' <"$S/agent-imp.json")"
}
claims() {
	"$TB" exec ctl python3 -c 'import urllib.request
for l in urllib.request.urlopen("http://198.18.0.1:7180/metrics").read().decode().splitlines():
    if l.startswith("fabriciq_node_claims_refused_total "): print(int(float(l.split()[1])))'
}
c0=$(claims)
r=$(claim n2 "$K/imp.key")
grep -qF "node n2 is bound to a key and this hello is not signed by it" <<<"$r"
ok $? "root on n3 with a key of its own, calling itself n2: refused ${r%% *} times (${r#* })"
r9=$(claim n9 "")
grep -qF "node n9 is bound to a key and this hello is not signed" <<<"$r9"
ok $? "root on n3 calling itself n9, a node bound to a key that never connected: refused ${r9%% *} times"
is "$(claims)" "$((c0 + ${r%% *} + ${r9%% *}))" "every one of those $((${r%% *} + ${r9%% *})) tries refused and counted by the controller"
is "$(grep -c '^n9 ' "$bindings") $(grep -c "node n9 .* connected" "$S/log/ctl.controller.log")" "1 0" \
	"n9 keeps its key binding; no session of n9 was ever taken"

sc_agent_args+=(-s "controller_key=$ctlpub")
tb daemon stop ctl controller >/dev/null
sc_controller_start "${SC_CTL_ARGS[@]}" -s "key=$K/controller.key"
tb_agent_start n2 "$AGENT" "${sc_agent_args[@]}" -s "munge_socket=$S/munge/munge.socket" -s "node_key=$K/n2.key"
for ((i = 0; i < 40; i++)); do
	[ "$(json 'j["uplink"]["state"]' <"$S/agent-n2.json" 2>/dev/null)" = connected ] && break
	sleep 0.5
done
ok $((i == 40)) "n2's agent signs with its key and gets in (after $((i / 2)) s), to a controller that signs with its own"
is "$(grep -cF "controller.key: answers to agents are signed by $ctlpub" "$S/log/ctl.controller.log") $(json 'j["uplink"]["controller_auth_refused"]' <"$S/agent-n2.json")" "1 0" \
	"the controller signs with its key, and n2's agent, which requires it (agent.controller_key), refused no answer"
