#!/usr/bin/env bash
# test-ctl-auth: munge authentication of agents (good, forged, replayed,
# wrong uid, expired, none) and bad frames (garbage, oversized): refused
# with a Result and one log line naming the peer and the reason; the
# daemon stays up. Real munged, real PostgreSQL.
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"

munge_up || skip_all "private munged did not start"
plan 18
ctl_up; ok $? "controller starts"

out=$(sim --auth good --duration 2 --probes 1 --lanes 1 2>&1)
ok $? "a good credential is accepted, frames acked ($out)"

out=$(sim --auth forged 2>&1)
echo "$out" | grep -q "result: code=" ; ok $? "forged credential: Result sent"
grep -q "authentication refused: .*" "$CTL_LOG" && grep "authentication refused" "$CTL_LOG" | grep -q "127.0.0.1:"
ok $? "forged credential: log line names the peer"
grep "authentication refused" "$CTL_LOG" | tail -1 | sed 's/^/# /'

n0=$(grep -c "authentication refused" "$CTL_LOG")
out=$(sim --auth replay 2>&1)
echo "$out" | grep -q "result: code=" ; ok $? "replayed credential: refused with a Result"
grep "authentication refused" "$CTL_LOG" | tail -1 | grep -qi "replay\|another connection\|payload"
ok $? "replayed credential: the log says why ($(grep 'authentication refused' "$CTL_LOG" | tail -1 | cut -c1-120))"

out=$(sim --auth none 2>&1)
echo "$out" | grep -q "result: code=" ; ok $? "no Auth (hello first): refused"

out=$(sim --auth good --ttl 1 --auth-delay-ms 2500 --duration 1 2>&1)
echo "$out" | grep -q "result: code=" ; ok $? "expired credential: refused"
grep "authentication refused" "$CTL_LOG" | tail -1 | grep -qi "expired"
ok $? "expired credential: the log says expired"

out=$(sim --auth garbage 2>&1)
sleep 0.3
m=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics")
sleep 1.2
m=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics")
echo "$m" | grep -q "^fabriciq_frames_garbage_total [1-9]"; ok $? "garbage frame counted"
out=$(sim --auth oversized 2>&1)
sleep 1.2
m=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics")
echo "$m" | grep -q "^fabriciq_frames_oversized_total [1-9]"; ok $? "oversized frame counted"
kill -0 "$CTL_PID"; ok $? "the daemon is still up"
out=$(sim --auth good --duration 1 --probes 1 --lanes 0 2>&1)
ok $? "and still serves agents"
echo "$m" | grep -q "^fabriciq_auth_failures_total [4-9]"; ok $? "auth failures counted ($(echo "$m" | grep '^fabriciq_auth_failures_total'))"

# wrong uid: the controller expects uid 4242, the simulator runs as root
ctl_down; ok $? "SIGTERM: clean exit"
ctl_up agent_uid=4242; ok $? "controller restarts with agent_uid=4242"
out=$(sim --auth good --duration 1 2>&1)
[ $? -ne 0 ]; ok $? "wrong uid: frames not accepted"
grep "authentication refused" "$CTL_LOG" | tail -1 | grep -qi "uid"
ok $? "wrong uid: the log names the uid ($(grep 'authentication refused' "$CTL_LOG" | tail -1 | cut -c1-140))"
done_testing
