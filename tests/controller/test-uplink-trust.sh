#!/usr/bin/env bash
# test-uplink-trust: a real fabriciq-agent connected to a fake controller
# (fq-fakectl). The agent streams only to a controller that authenticates
# itself (a munge credential of agent.controller_uid over the agent's
# nonce): a wrong uid, a credential over another nonce or none at all get
# nothing. A controller that does authenticate (root on another host)
# then sends what a hostile one could: a clock correction too soon after another and one an hour
# ahead, advice with an unbounded lifetime and of an unknown kind, a peer
# without a name, and an Ack of UINT64_MAX. The agent refuses each
# (fabriciq-agent(8), THE CONTROLLER IS NOT TRUSTED), logs and counts it,
# keeps its spool (it resends from seq 1 on reconnecting) and keeps only
# the one valid correction. Real munged, no database.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/munged.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
AGENT=$top_builddir/slurmd-agent/fabriciq-agent
FAKE=$top_builddir/tests/controller/fq-fakectl
CTL=$top_builddir/controller/fabriciq-controller
[ -x "$AGENT" ] && [ -x "$FAKE" ] || skip_all "build fabriciq-agent and fq-fakectl first (make check builds them)"
command -v munged >/dev/null || skip_all "munged not installed"

T=$(mktemp -d /tmp/fq-trust-test.XXXXXX)
AGENT_PID= FAKE_PID=
cleanup() {
	[ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
	munged_stop
	rm -rf "$T"
}
trap cleanup EXIT
munged_start "$T" || skip_all "$MUNGED_ERR"

# run_case MODE [KEY=VALUE...]: the fake controller in MODE and a fresh
# agent (its own spool and status) until the fake is done; $D is its dir.
# FAKE_KEY, when set: the secret key the fake controller signs with.
ncase=0
run_case() {
	local mode=$1 sets="" kv port
	shift
	for kv in "$@"; do sets="$sets -s $kv"; done
	ncase=$((ncase + 1))
	D=$T/$mode.$ncase
	mkdir -p "$D"
	port=$(free_port)
	"$FAKE" "$port" "$T/munge.socket" "$mode" ${FAKE_KEY:+"$FAKE_KEY"} >"$D/fake.out" 2>&1 &
	FAKE_PID=$!
	for _ in $(seq 50); do grep -q listening "$D/fake.out" && break; sleep 0.1; done
	# shellcheck disable=SC2086
	"$AGENT" -c /dev/null -s node=trust1 -s nics=lo -s "controller=127.0.0.1:$port" \
		-s "munge_socket=$T/munge.socket" -s "spool_dir=$D/spool" -s "status_file=$D/status.json" \
		-s "run_dir=$D/run" -s report_interval=200ms -s "port=$(free_port)" $sets >"$D/agent.log" 2>&1 &
	AGENT_PID=$!
	wait "$FAKE_PID"
	FAKE_RC=$?
	FAKE_PID=
	sleep 0.5 # the next status write
	kill "$AGENT_PID" && wait "$AGENT_PID"
	AGENT_PID=
}
num() { tr -d ' \n' <"$D/status.json" | grep -o "\"$1\":[0-9]*" | head -1 | grep -o '[0-9]*$'; }

plan 27
# the controller authenticates itself: the agent streams only then
run_case genuine
grep -q "^frames=[1-9][0-9]* closed=0$" "$D/fake.out"
ok $? "a controller with a root credential for the agent's nonce: frames stream, connection kept ($(tail -1 "$D/fake.out"))"
is "$(num controller_auth_refused)" 0 "no controller refusal counted"
run_case genuine controller_uid=4242
is "$(tail -1 "$D/fake.out")" "frames=0 closed=1" "agent.controller_uid=4242, controller credential of uid 0: nothing sent, connection dropped"
is "$(num controller_auth_refused)" 1 "1 controller refusal counted"
grep -q "the controller did not authenticate: munge credential from uid 0, expected uid 4242" "$D/agent.log"
ok $? "the log names the uid"
run_case forged
is "$(tail -1 "$D/fake.out")" "frames=0 closed=1" "a credential over another nonce: nothing sent, connection dropped"
is "$(num controller_auth_refused)" 1 "1 controller refusal counted"
run_case silent
is "$(tail -1 "$D/fake.out")" "frames=0 closed=1" "no Auth from the controller: nothing sent, dropped after 10 s"
grep -q "the controller did not authenticate within 10 s" "$D/agent.log"; ok $? "the log says so"

# agent.controller_key: root elsewhere (a good munge credential) is not the controller
"$CTL" --new-key "$T/controller.key" >"$T/controller.pub" 2>/dev/null
"$CTL" --new-key "$T/other.key" >"$T/other.pub" 2>/dev/null
pub=$(cat "$T/controller.pub")
FAKE_KEY=$T/controller.key run_case genuine "controller_key=$pub"
grep -q "^frames=[1-9][0-9]* closed=0$" "$D/fake.out"
ok $? "agent.controller_key set, the Auth signed with the controller's key: frames stream ($(tail -1 "$D/fake.out"))"
FAKE_KEY=$T/other.key run_case genuine "controller_key=$pub"
is "$(tail -1 "$D/fake.out")" "frames=0 closed=1" "signed with another key (root on another host, its own key): nothing sent, dropped"
is "$(num controller_auth_refused)" 1 "1 controller refusal counted"
grep -q "the controller did not authenticate: its answer is not signed by the controller's key" "$D/agent.log"
ok $? "the log says whose key is missing"
run_case genuine "controller_key=$pub"
is "$(tail -1 "$D/fake.out")" "frames=0 closed=1" "a good munge credential, no signature: nothing sent, dropped"
grep -q "the controller did not authenticate: its answer is not signed (agent.controller_key)" "$D/agent.log"
ok $? "the log says it was not signed"
"$AGENT" -c /dev/null -s "controller_key=ed25519:AAAA" -s controller=127.0.0.1:1 -s nics=lo \
	-s "run_dir=$T/bad" -s "spool_dir=$T/bad/spool" -s "status_file=$T/bad/s.json" >"$T/bad.log" 2>&1
is "$? $(grep -c "agent.controller_key: 'ed25519:AAAA' is not a public key" "$T/bad.log")" "1 1" \
	"a controller_key that is not a key: the agent does not start, and says why"

# a hostile controller that authenticates (root elsewhere): every value bounded
run_case hostile
ok $FAKE_RC "the fake controller saw the agent connect, stream, and come back ($(tr '\n' ' ' <"$D/fake.out"))"
grep -q "^frames=[1-9][0-9]* max_seq=[1-9][0-9]* closed_after_ack=1$" "$D/fake.out"
ok $? "the agent dropped the connection on the Ack of UINT64_MAX ($(grep '^frames=' "$D/fake.out"))"
grep -q "ack of seq 18446744073709551615 refused: no frame beyond [0-9]* was ever spooled" "$D/agent.log"
ok $? "and logged why"
is "$(sed -n 's/^hello2 next_seq=//p' "$D/fake.out")" "$(sed -n 's/^hello1 node=trust1 next_seq=//p' "$D/fake.out")" \
	"its spool is kept: on reconnecting it resends from the same seq"
is "$(num acks_refused)" 1 "1 ack refused"
is "$(num acked_seq)" 0 "nothing counted as acknowledged"
is "$(num corrections_refused)" 2 "2 clock corrections refused (one too soon, one an hour ahead)"
is "$(num correction_epoch)" 1 "the timeline follows the one valid correction (epoch 1)"
grep -q "clock correction epoch 3 refused: its global time is too far from this host's real-time clock" "$D/agent.log"
ok $? "the hour-ahead correction is logged with the reason"
is "$(num advice_refused)" 2 "2 advice refused (unbounded lifetime, unknown kind)"
is "$(num peers_refused)" 1 "1 peer assignment refused (a peer without a node name)"
