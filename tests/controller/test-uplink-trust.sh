#!/usr/bin/env bash
# test-uplink-trust: a real fabriciq-agent connected to a fake controller
# (fq-fakectl) that sends what a hostile process on the controller's
# address could: a clock correction too soon after another and one an hour
# ahead, advice with an unbounded lifetime and of an unknown kind, a peer
# without a name, and an Ack of UINT64_MAX. The agent refuses each
# (fabriciq-agent(8), THE CONTROLLER IS NOT TRUSTED), logs and counts it,
# keeps its spool (it resends from seq 1 on reconnecting) and keeps only
# the one valid correction. Real munged, no database.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
AGENT=$top_builddir/slurmd-agent/fabriciq-agent
FAKE=$top_builddir/tests/controller/fq-fakectl
[ -x "$AGENT" ] && [ -x "$FAKE" ] || skip_all "build fabriciq-agent and fq-fakectl first (make check builds them)"
command -v munged >/dev/null || skip_all "munged not installed"

T=$(mktemp -d /tmp/fq-trust-test.XXXXXX)
AGENT_PID= FAKE_PID= MUNGE_PID=
cleanup() {
	[ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
	[ -n "$MUNGE_PID" ] && kill "$MUNGE_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
free_port() { python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_$1); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }

dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none && chmod 0400 "$T/munge.key"
munged --force --socket="$T/munge.socket" --key-file="$T/munge.key" --pid-file="$T/munged.pid" \
	--log-file="$T/munged.log" --seed-file="$T/munged.seed" || skip_all "private munged did not start"
for _ in $(seq 50); do [ -s "$T/munged.pid" ] && munge -S "$T/munge.socket" -n >/dev/null 2>&1 && break; sleep 0.1; done
MUNGE_PID=$(cat "$T/munged.pid")

plan 11
PORT=$(free_port STREAM)
"$FAKE" "$PORT" >"$T/fake.out" 2>&1 &
FAKE_PID=$!
for _ in $(seq 50); do grep -q listening "$T/fake.out" && break; sleep 0.1; done
"$AGENT" -c /dev/null -s node=trust1 -s nics=lo -s "controller=127.0.0.1:$PORT" -s "munge_socket=$T/munge.socket" \
	-s "spool_dir=$T/spool" -s "status_file=$T/status.json" -s "run_dir=$T/run" -s report_interval=200ms \
	-s "port=$(free_port DGRAM)" >"$T/agent.log" 2>&1 &
AGENT_PID=$!
wait "$FAKE_PID"
ok $? "the fake controller saw the agent connect, stream, and come back ($(tr '\n' ' ' <"$T/fake.out"))"
FAKE_PID=
sleep 0.5 # the next status write
grep -q "^frames=[1-9][0-9]* max_seq=[1-9][0-9]* closed_after_ack=1$" "$T/fake.out"
ok $? "the agent dropped the connection on the Ack of UINT64_MAX ($(grep '^frames=' "$T/fake.out"))"
grep -q "ack of seq 18446744073709551615 refused: no frame beyond [0-9]* was ever spooled" "$T/agent.log"
ok $? "and logged why"
is "$(sed -n 's/^hello2 next_seq=//p' "$T/fake.out")" "$(sed -n 's/^hello1 node=trust1 next_seq=//p' "$T/fake.out")" \
	"its spool is kept: on reconnecting it resends from the same seq"
num() { tr -d ' \n' <"$T/status.json" | grep -o "\"$1\":[0-9]*" | head -1 | grep -o '[0-9]*$'; }
is "$(num acks_refused)" 1 "1 ack refused"
is "$(num acked_seq)" 0 "nothing counted as acknowledged"
is "$(num corrections_refused)" 2 "2 clock corrections refused (one too soon, one an hour ahead)"
is "$(num correction_epoch)" 1 "the timeline follows the one valid correction (epoch 1)"
grep -q "clock correction epoch 3 refused: its global time is too far from this host's real-time clock" "$T/agent.log"
ok $? "the hour-ahead correction is logged with the reason"
is "$(num advice_refused)" 2 "2 advice refused (unbounded lifetime, unknown kind)"
is "$(num peers_refused)" 1 "1 peer assignment refused (a peer without a node name)"
