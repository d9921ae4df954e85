#!/usr/bin/env bash
# The fabriciq CLI over HTTP, against the real controller daemon
# (fabriciq-controller serving controller/api.c) on a private PostgreSQL
# holding the API fixture: the same tables as direct mode (--db), errors
# mapped to exit codes through HTTP, hostile job ids through URL encoding;
# the munge authentication of the job, anomaly and hint paths (root, an
# unauthenticated request, another uid, controller.api_admin_uids, a
# credential minted for another path, replayed, forged).
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
fi
export top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)} top_builddir=${top_builddir:-.}
[ -f "$top_srcdir/tests/controller/ctl-lib.sh" ] ||
	{ echo "1..0 # SKIP the controller daemon and its test helpers (branch wt-ctl) are not in this tree"; exit 0; }
. "$top_srcdir/tests/controller/ctl-lib.sh"
. "$top_srcdir/tests/controller/test-api-fixture.sh"
cli=$top_builddir/controller/fabriciq
[ -x "$cli" ] || skip_all "$cli not built"
command -v python3 >/dev/null || skip_all "python3 not installed (JSON checks)"
export TZ=UTC
"$cli" --db= db migrate >/dev/null || { echo "Bail out! migrate failed"; exit 1; }
load_fixture || { echo "Bail out! fixture failed to load"; exit 1; }
munge_up || skip_all "private munged did not start"
ctl_up || { echo "Bail out! the controller did not start: $(tail -3 "$CTL_LOG")"; exit 1; }
url=http://127.0.0.1:$HTTP_PORT
http() { "$cli" --controller "$url" --munge-socket "$T/munge.socket" "$@"; }
direct() { "$cli" --db= "$@"; }
json() { python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"; }

# Outputs with nothing that depends on the second they are asked.
for c in "jobs" "links" "events" "hints" "job 4242.1" "anomalies --limit 2" "links --state down"; do
	# shellcheck disable=SC2086
	a=$(http $c 2>&1); ra=$?
	# shellcheck disable=SC2086
	b=$(direct $c 2>&1)
	is "$ra" 0 "$c over HTTP: exit 0"
	if [ "$a" = "$b" ] && [ -n "$a" ]; then ok 0 "... the same table as direct mode"; else
		ok 1 "... the same table as direct mode"; diff <(echo "$a") <(echo "$b") | head -10 | sed 's/^/# /'; fi
done
out=$(http job 4242.0)
grep -Eq '^0->1/1  tcp   gpu01/mlx5_1  gpu02/mlx5_1  1\.10 GB +3  30\.0 us  49\.0 us +94\.0 us +2 +21$' <<<"$out"
ok $? "job 4242.0 over HTTP: the slow lane"
is "$(http --json job 4242.0 --bucket 3 | json 'j["steps"][0]["throughput"]["buckets"][0]["gbps"]')" 30.933 \
	"--json over HTTP: the API's document"
is "$(http --json status | json 'j["hints_pending"], j["database"]["ok"]')" "4 True" "status --json over HTTP"
is "$(FABRICIQ_CONTROLLER=$url "$cli" --json clock | json 'len(j["clock"])')" 4 "FABRICIQ_CONTROLLER picks the controller"

http job 4242.9 2>"$CTL_LOG.err"; is $? 3 "an unknown step over HTTP: exit 3"
grep -q 'job 4242 has no step 9 known to fabriciq (HTTP 404)' "$CTL_LOG.err"; ok $? "... with the API's words"
http job "4242'; drop table fabriciq.jobs; --" 2>"$CTL_LOG.err"; is $? 2 "SQL in the job id over HTTP: exit 2"
grep -q "job must be JOB or JOB.STEP.*not '4242'; drop table fabriciq.jobs; --'" "$CTL_LOG.err"
ok $? "... the id reached the API intact (URL-encoded on the way) and was refused"
http job "4242 0" 2>/dev/null; is $? 2 "a space in the job id: exit 2"
http jobs --limit 0 2>"$CTL_LOG.err"; is $? 2 "jobs --limit 0 over HTTP: exit 2"
is "$(q 'select count(*) from fabriciq.jobs')" 1 "... the jobs table is intact"
# Query values with '&', '+' or '%' must reach the API as they were given
# (controller/http.c hands libmicrohttpd's decoded arguments to the API).
a=$(http --json events --since 2020-01-01T00:00:00+00:00 --node 'gpu03&limit=1' 2>/dev/null | json 'len(j["events"])' 2>/dev/null || echo refused)
b=$(direct --json events --since 2020-01-01T00:00:00+00:00 --node 'gpu03&limit=1' 2>&1 | json 'len(j["events"])' 2>&1)
is "$a" "$b" "'&' and '+' in query values reach the API intact"
st=$(curl -s -o "$T/body" -w '%{http_code}' "$url/api/v1/events?lim%69t=1&since=2020-01-01T00:00:00%2B00:00")
is "$st" 200 "a percent-encoded name and value over HTTP: 200"
is "$(json 'len(j["events"])' <"$T/body" 2>&1)" 1 "... decoded (limit=1 applied)"
st=$(curl -s -o "$T/body" -w '%{http_code}' "$url/api/v1/events?limit=1&limit=2")
is "$st" 400 "a parameter given twice over HTTP: 400"
grep -q "query parameter 'limit' given twice" "$T/body"; ok $? "... saying so" || diag "$(cat "$T/body")"
st=$(curl -s -o "$T/body" -w '%{http_code}' "$url/api/v1/events?node=$(printf 'x%.0s' $(seq 300))")
is "$st" 400 "a value over 256 bytes over HTTP: 400"
"$cli" --controller "$url/nope" status 2>/dev/null; is $? 3 "a wrong URL prefix: HTTP 404, exit 3"

# Authentication. code PATH [CURL ARGS]: the HTTP status of a plain GET.
code() { local p=$1; shift; curl -s -o "$T/body" -w '%{http_code}' "$@" "$url$p"; }
mint() { munge -S "$T/munge.socket" -s "$1" "${@:2}"; }
for p in /api/v1/jobs /api/v1/jobs/4242.0 /api/v1/anomalies /api/v1/hints; do
	is "$(code "$p")" 401 "GET $p without a credential: 401"
done
grep -q 'needs a munge credential' "$T/body"; ok $? "... saying what it needs"
is "$(curl -s -D - -o /dev/null "$url/api/v1/hints" | tr -d '\r' | grep -i '^WWW-Authenticate:')" "WWW-Authenticate: MUNGE" \
	"... with WWW-Authenticate: MUNGE"
for p in /api/v1/status /api/v1/nodes /api/v1/links /api/v1/events /api/v1/clock /metrics; do
	is "$(code "$p")" 200 "GET $p without a credential: 200 (the fabric's state is open)"
done
cred=$(mint /api/v1/hints)
is "$(code /api/v1/hints -H "Authorization: MUNGE $cred")" 200 "a root credential minted for /api/v1/hints: 200"
is "$(code /api/v1/hints -H "Authorization: MUNGE $cred")" 401 "... the same credential again: 401 (replayed)"
grep -q 'Replayed credential' "$T/body"; ok $? "... saying so" || diag "$(cat "$T/body")"
is "$(code /api/v1/jobs -H "Authorization: MUNGE $(mint /api/v1/hints)")" 401 "a credential minted for another path: 401"
grep -q 'minted for another path than /api/v1/jobs' "$T/body"; ok $? "... saying so" || diag "$(cat "$T/body")"
is "$(code /api/v1/hints -H "Authorization: MUNGE MUNGE:AwQFAAB:")" 401 "a forged credential: 401"
is "$(code /api/v1/hints -H "Authorization: Basic cm9vdDpyb290")" 401 "another scheme: 401"
# Another uid: the CLI as nobody (65534), through the same munged.
chmod 0711 "$T"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$cli" --controller "$url" --munge-socket "$T/munge.socket" "$@"; }
nobody hints >/dev/null 2>"$T/err"; is $? 1 "hints as uid 65534: exit 1"
grep -q 'uid 65534 is not an administrator of the API (root or controller.api_admin_uids) (HTTP 403)' "$T/err"
ok $? "... HTTP 403, saying why" || diag "$(cat "$T/err")"
nobody job 4242.0 >/dev/null 2>&1; is $? 1 "job as uid 65534: exit 1"
out=$(nobody status 2>&1); is $? 0 "status as uid 65534: exit 0 (open)"
"$cli" --controller "$url" --munge-socket /nonexistent/munge.socket hints >/dev/null 2>"$T/err"; is $? 1 "hints with no munged to mint: exit 1"
grep -q 'no credential sent: munge encode' "$T/err"; ok $? "... saying why no credential was sent" || diag "$(cat "$T/err")"
# A step's summary (the job-end line's counts) for its owner: job 4242
# belongs to uid 1000. as UID PATH: the status of a GET with UID's credential.
as() { code "$2" -H "Authorization: MUNGE $(setpriv --reuid="$1" --regid="$1" --clear-groups munge -S "$T/munge.socket" -s "$2")"; }
is "$(as 1000 /api/v1/jobs/4242.0/summary)" 200 "the owner (uid 1000) gets its step's summary: 200"
want=$(direct --json job 4242.0 | json '"%d %d" % (len(j["steps"][0]["incidents"]), len(j["steps"][0]["failovers"]))')
is "$(json '"%d %d %s %d/%d" % (j["incidents"], j["failovers"], j["complete"], j["nodes_ended"], j["node_count"])' <"$T/body")" \
	"$want False 0/4" "... the report's incidents and failovers ($want), no node has ended the running step"
is "$(as 65534 /api/v1/jobs/4242.0/summary)" 404 "another user (uid 65534): 404, as for a step that does not exist"
grep -q 'job 4242 has no step 0 known to fabriciq' "$T/body"; ok $? "... in the same words" || diag "$(cat "$T/body")"
is "$(as 1000 /api/v1/jobs/4242.0)" 403 "the owner is no administrator: the full report stays 403"
is "$(code /api/v1/jobs/4242.0/summary)" 401 "a summary without a credential: 401"
is "$(as 0 /api/v1/jobs/4242/summary)" 400 "a summary of a whole job: 400 (one step)"
is "$(as 0 /api/v1/jobs/4242.1/summary)" 200 "root gets any step's summary"
# (refusals are logged at most 10 a second: the first one surely)
grep -q 'http: GET /api/v1/jobs refused (401): /api/v1/jobs needs a munge credential' "$CTL_LOG"
ok $? "the controller logged the first refusal, with why"
ctl_down
ctl_up "api_admin_uids=4000,65534" || { echo "Bail out! the controller did not restart"; exit 1; }
url=http://127.0.0.1:$HTTP_PORT
out=$(nobody hints 2>&1); is $? 0 "with controller.api_admin_uids = 4000,65534: hints as uid 65534: exit 0"
is "$(nobody hints)" "$(http hints)" "... the same table as root's"
ctl_down
ctl_up "api_admin_uids=65534x" 2>/dev/null; is $? 1 "a bad controller.api_admin_uids: the controller does not start"
grep -q "controller.api_admin_uids: '65534x' is not a uid" "$CTL_LOG"; ok $? "... saying why" || diag "$(tail -2 "$CTL_LOG")"
ctl_up || { echo "Bail out! the controller did not restart"; exit 1; }
url=http://127.0.0.1:$HTTP_PORT

# The daemon's database goes away: HTTP 503, exit 1.
$FQ_TEST_PG_CTL -m immediate -w stop >/dev/null
http status 2>"$CTL_LOG.err"; is $? 1 "database down behind the controller: exit 1"
grep -q 'database unavailable.*(HTTP 503)' "$CTL_LOG.err"; ok $? "... saying so" || diag "$(cat "$CTL_LOG.err")"
ctl_down
http --timeout 2 status 2>/dev/null; is $? 1 "controller stopped: exit 1"
done_testing
