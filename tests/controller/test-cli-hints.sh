#!/usr/bin/env bash
# `fabriciq hints --apply` against a hostile API: a stand-in HTTP server
# (python3, on 127.0.0.1, the one `--controller` names) answers
# /api/v1/hints with hints whose argv is foreign, whose node is unknown to
# Slurm or not a Slurm node name, whose reason is not fabriciq's or holds a
# line break, or whose action is not drain/resume, and a fabric hint
# (check: nothing to run). The CLI must run its own `scontrol update` built
# from the fields, or nothing: a stand-in scontrol on PATH records every
# call, and the foreign argv would leave a file.
# Under a private PostgreSQL (tests/db/with-postgres.sh): --apply records
# in the database.
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
fi
src=${top_srcdir:-$(dirname "$0")/../..}
. "$src/tests/lib/tap.sh"
cli=${top_builddir:-.}/controller/fabriciq
[ -x "$cli" ] || skip_all "$cli not built"
command -v python3 >/dev/null || skip_all "python3 not installed (the stand-in API server)"
cli=$(cd "$(dirname "$cli")" && pwd)/fabriciq
tmp=$PGHOST
SERVER_PID=
stop_server() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; }
trap stop_server EXIT
"$cli" --db= db migrate >/dev/null || { echo "Bail out! migrate failed"; exit 1; }

# The stand-in Slurm: it knows gpu01 (no reason) only; every scontrol call
# logged (sinfo too answers, as Slurm would: the CLI may ask either).
fake=$tmp/fakebin
mkdir -p "$fake"
cat >"$fake/sinfo" <<'SH'
#!/bin/sh
# sinfo -h -N -n NODE -o %E
[ "$4" = gpu01 ] && echo none
exit 0
SH
cat >"$fake/scontrol" <<'SH'
#!/bin/sh
printf '%s|' "$@" >>"$FQ_FAKE_SLURM/scontrol.log"; echo >>"$FQ_FAKE_SLURM/scontrol.log"
if [ "$1" = show ]; then
	[ "$3" = gpu01 ] || { echo "Node $3 not found" >&2; exit 1; }
	printf 'NodeName=gpu01 Arch=x86_64 CoresPerSocket=1\n   State=IDLE ThreadsPerCore=1\n'
fi
exit 0
SH
chmod +x "$fake/scontrol" "$fake/sinfo"
export FQ_FAKE_SLURM=$tmp PATH=$fake:$PATH
pwned=$tmp/pwned

# serve FILE: the stand-in API answers every GET with FILE's JSON.
serve() {
	stop_server
	rm -f "$tmp/port"
	python3 - "$1" "$tmp/port" <<'PY' 2>>"$tmp/server.log" &
import http.server, sys
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2] + ".new", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[2] + ".new", sys.argv[2])
s.serve_forever()
PY
	SERVER_PID=$!
	for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
	url=http://127.0.0.1:$(cat "$tmp/port")
}
# hint ID ACTION NODE REASON: one hint as the API writes it, plus the foreign argv.
hint() {
	printf '{"id":%s,"action":"%s","node":"%s","slurm_reason":"%s","reason":"r","superseded":false,' "$@"
	printf '"argv":["/bin/sh","-c","touch %s"],"command":"touch %s"}' "$pwned" "$pwned"
}
apply() { : >"$tmp/scontrol.log"; "$cli" --controller "$url" hints --apply 2>"$tmp/err"; }

# Each hostile hint alone: refused, nothing run at all.
n=0
while IFS='|' read -r action node reason why; do
	n=$((n + 1))
	echo "{\"hints\":[$(hint "$n" "$action" "$node" "$reason")]}" >"$tmp/answer.json"
	serve "$tmp/answer.json"
	out=$(apply); rc=$?
	is "$rc" 1 "$why: exit 1"
	grep -Fq "hint $n (" <<<"$out" && grep -Fq "): failed: refused, nothing run: " <<<"$out"
	ok $? "... refused, saying so" || diag "$out"
	[ ! -e "$pwned" ]; ok $? "... the answer's argv did not run"
	is "$(grep -c '^update|' "$tmp/scontrol.log")" 0 "... no scontrol update"
done <<'HINTS'
exec|gpu01|fabriciq: x|an action other than drain/resume
drain|gpu09|fabriciq: link_down on mlx5_0|a node Slurm does not know
drain|gpu01|maintenance by admin|a reason that is not fabriciq's
resume|gpu01|root said so|a resume whose reason is not fabriciq's
drain|gpu[01-04]|fabriciq: x|a hostlist instead of one node
drain|-gpu01|fabriciq: x|a node name like an option
drain|gpu01 State=RESUME|fabriciq: x|a node name with a space
drain|gpu01|fabriciq: x\nState=RESUME|a reason with a line break
HINTS

# The unknown node was asked about, and only that: redo that one case.
echo "{\"hints\":[$(hint 2 drain gpu09 'fabriciq: link_down on mlx5_0')]}" >"$tmp/answer.json"
serve "$tmp/answer.json"
apply >/dev/null
is "$(cat "$tmp/scontrol.log")" "show|node|gpu09|" "a node Slurm does not know: only scontrol show node ran"

# A well-formed hint with a foreign argv: the CLI's own command runs, not
# the argv (the hint is not in the database, so recording it fails: exit 1).
echo "{\"hints\":[$(hint 9 drain gpu01 'fabriciq: link_down on mlx5_0')]}" >"$tmp/answer.json"
serve "$tmp/answer.json"
apply >/dev/null
is "$(grep '^update|' "$tmp/scontrol.log")" "update|NodeName=gpu01|State=DRAIN|Reason=fabriciq: link_down on mlx5_0|" \
	"a valid hint: exactly the scontrol update built from its fields"
[ ! -e "$pwned" ]; ok $? "... and not the answer's argv"
grep -q 'drain hint 9 is not pending' "$tmp/err"; ok $? "... recording a hint the database does not hold fails" ||
	diag "$(cat "$tmp/err")"
stop_server
done_testing
