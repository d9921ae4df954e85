#!/usr/bin/env bash
# test-ctl-flood: what an unauthenticated or half-authenticated peer can
# cost the controller (fabriciq-controller(8), LIMITS): connections beyond
# max_unauthenticated_per_source, and beyond max_connections from many
# sources, are closed on accept;
# a frame announced larger than the Auth limit before authentication
# closes the connection at its header; Auth without AgentHello is dropped
# after auth_timeout; munged stuck does not stall the event loop and a
# full credential queue is answered EAGAIN; a second agent claiming a
# connected node is refused while the real one is live. Real munged, real
# PostgreSQL.
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"
RAW="python3 $top_srcdir/tests/controller/ctl-raw.py"
metric() { curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

munge_up || skip_all "private munged did not start"
plan 19
ctl_up max_connections=12 max_unauthenticated_per_source=4 auth_timeout=1s auth_queue=1; ok $? "controller starts"

# 1. pre-auth connections from one address: 4 get their Challenge, 36 are closed
out=$($RAW flood "$CTL_PORT" 40 1.5)
is "$(echo "$out" | head -1)" "challenged=4 closed=36" "40 silent connections from one address: 4 challenged, 36 closed on accept"
is "$(echo "$out" | tail -1)" "dropped=4" "the 4 challenged ones are closed after auth_timeout (1 s)"
sleep 1.2 # metrics are rendered each report window
is "$(metric fabriciq_connections_refused_total)" 36 "36 refusals counted"
is "$(metric fabriciq_auth_timeouts_total)" 4 "4 authentication timeouts counted"
out=$(sim --auth good --duration 1 --probes 1 --lanes 0 2>&1)
ok $? "afterwards an agent still gets in ($out)"

# 2. a large frame before Auth: refused at its header
out=$($RAW bigframe "$CTL_PORT" 3145728)
# closed at once, not by the 1 s auth timeout
after=$(echo "$out" | sed -n 's/^closed after=\([0-9.]*\) s.*/\1/p')
[ -n "$after" ] && awk -v a="$after" 'BEGIN { exit !(a < 0.5) }'
ok $? "3 MiB frame announced before Auth (1 MiB of it sent): connection closed at its header ($out)"
sleep 1.2
is "$(metric fabriciq_frames_oversized_total)" 1 "one oversized frame counted"
grep -q "frame over the 2048-byte limit before authentication" "$CTL_LOG"; ok $? "the log names the pre-auth limit"

# 3. Auth and no AgentHello: closed after auth_timeout
t0=$(date +%s%N)
out=$(sim --auth nohello 2>&1)
echo "$out" | grep -q "^closed: agent 0"; ok $? "Auth without AgentHello: closed by the controller"
is "$(metric fabriciq_hello_timeouts_total)" 1 "one hello timeout counted"
grep -q "authenticated but no AgentHello within 1.0 s" "$CTL_LOG"; ok $? "the log says why"

# 4. munged stuck: the loop still serves, the credential queue is bounded
# (the simulator mints its credential, then waits 0.7 s before sending it:
# within auth_timeout, and by then munged is stopped)
sim --auth good --auth-delay-ms 700 --duration 1 --prefix stuck >"$T/stuck.out" 2>&1 &
stuck=$!
sleep 0.4
kill -STOP "$MUNGE_PID"
sleep 0.6
w=$($RAW challenge "$CTL_PORT")
[ -n "$w" ] && [ "$w" != none ] && awk -v w="$w" 'BEGIN { exit !(w < 0.5) }'; ok $? "munged stopped, one Auth waiting on it: a new connection is challenged in $w s"
out=$(sim --auth forged --prefix busy 2>&1)
echo "$out" | grep -q "result: code=11 "; ok $? "a second Auth meanwhile (auth_queue=1): refused with EAGAIN ($(echo "$out" | grep result:))" || { diag "$out"; grep -v "^#" "$CTL_LOG" | tail -5 | sed "s/^/# /"; }
kill -CONT "$MUNGE_PID"
wait "$stuck"

# 5. a second agent claiming a connected node
sim --auth good --duration 4 --probes 1 --lanes 0 --prefix claim >"$T/real.out" 2>&1 &
real=$!
sleep 1.5
out=$(sim --auth good --duration 1 --probes 1 --lanes 0 --prefix claim 2>&1)
echo "$out" | grep -q "result: code=16 message=node claim00000 is already connected from 127.0.0.1:"
ok $? "a second session claiming claim00000 is refused with EBUSY ($(echo "$out" | grep result: | cut -c1-100))"
wait "$real"
grep -q "^agents=1 connected=1 .* complete=1 " "$T/real.out"
ok $? "the real agent kept its session to the end, every frame acked ($(tail -1 "$T/real.out"))"

# 6. many sources, each within its own cap: max_connections caps them all
out=$($RAW flood "$CTL_PORT" 40 1.5 10)
is "$(echo "$out" | head -1)" "challenged=12 closed=28" \
	"40 silent connections from 10 addresses (4 each, the per-source cap): 12 challenged (max_connections), 28 closed on accept"
is "$(echo "$out" | tail -1)" "dropped=12" "... and the 12 closed after auth_timeout"
out=$(sim --auth good --duration 1 --probes 1 --lanes 0 2>&1)
ok $? "afterwards an agent still gets in ($out)"
