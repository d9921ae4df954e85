#!/usr/bin/env bash
# The fabriciq CLI against a private PostgreSQL holding the API fixture
# (test-api-fixture.sh), in direct mode (--db: the API in-process): tables,
# --json, exit codes, `hints --apply` with a stand-in scontrol on PATH
# (they record their argv and keep each node's Slurm reason in a file),
# `db migrate`, and an unreachable controller.
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
fi
src=${top_srcdir:-$(dirname "$0")/../..}
. "$src/tests/lib/tap.sh"
. "$src/tests/controller/test-api-fixture.sh"
cli=${top_builddir:-.}/controller/fabriciq
[ -x "$cli" ] || skip_all "$cli not built"
command -v python3 >/dev/null || skip_all "python3 not installed (JSON checks)"
cli=$(cd "$(dirname "$cli")" && pwd)/fabriciq
export TZ=UTC
psql() { command psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
fq() { "$cli" --db= "$@"; }
# json EXPR: evaluates EXPR on the JSON document read from stdin (as j).
json() { python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"; }
tmp=$PGHOST

"$cli" --help | grep -q '^Usage: fabriciq \[OPTIONS\] COMMAND'; ok $? "--help"
for c in status nodes links jobs job events anomalies incidents incident hints clock topology db doctor; do
	out=$("$cli" "$c" --help); rc=$?
	case $out in "Usage: fabriciq [OPTIONS] $c"*) is $rc 0 "$c --help";; *) ok 1 "$c --help: $out";; esac
done
"$cli" >/dev/null 2>&1; is $? 2 "no command: exit 2"
"$cli" frob 2>/dev/null; is $? 2 "unknown command: exit 2"
"$cli" --frob status 2>/dev/null; is $? 2 "unknown option: exit 2"
fq jobs --frob 2>/dev/null; is $? 2 "unknown command option: exit 2"
fq jobs --open 2>/dev/null; is $? 2 "an option of another command: exit 2"
"$cli" --timeout=-1 status 2>/dev/null; is $? 2 "bad --timeout: exit 2"

v=$("$cli" --version | sed -n 's/.*(schema version \([0-9]*\))$/\1/p')
out=$(fq db migrate); is "$out" "schema migrated to version $v ($v migrations applied)" "db migrate: fresh database"
out=$(fq --json db migrate); is "$out" "{\"schema_version\":$v,\"applied\":0}" "db migrate --json: nothing to apply"
load_fixture || { echo "Bail out! fixture failed to load"; exit 1; }

out=$(fq status); is $? 0 "status: exit 0"
# (the documents differ only in their times)
untimed() { json '{k: v for k, v in j.items() if "time" not in k and k != "controller"}'; }
is "$(fq status --json | untimed)" "$(fq --json status | untimed)" "status --json: --json after the command as before it"
is "$(fq jobs --limit 1 --json | json 'len(j["jobs"])')" 1 "jobs --limit 1 --json: the command's options and --json mixed"
grep -q '^anomalies      2 open, 1 critical$' <<<"$out"; ok $? "status: open anomalies"
grep -q '^drain hints    4 pending, 0 fabric hints (what to check)$' <<<"$out"; ok $? "status: pending hints"
grep -q '^clocks         no reports 1, ok 1, stale 1, unsynchronised 1$' <<<"$out"; ok $? "status: clocks"

out=$(fq nodes)
grep -Eq '^gpu04  0\.1\.0  [0-9-]{10} [0-9:]{8}  3h00m  no reports      eth0\* r0 10G, mlx5_0 r0 100G, mlx5_1 r1 100G$' <<<"$out"
ok $? "nodes: aligned row with age and NICs" || diag "$out"

out=$(fq links --state down)
is "$(wc -l <<<"$out")" 2 "links --state down: header and one path"
grep -Eq '^gpu03/mlx5_1  gpu04/mlx5_1  down ' <<<"$out"; ok $? "links: the down path"
out=$(fq links)
grep -Eq '^gpu01/mlx5_0  gpu02/mlx5_0  up .*  3  +3  +5\.0 %   5\.5 us   8\.0 us  10\.0 us$' <<<"$out"
ok $? "links: flaps, loss and delays with units" || diag "$out"

out=$(fq jobs)
grep -Eq '^4242\.0  control  .*  running  +-  +4  +4  11\.60 GB  30\.9 Gbit/s  32\.0 Gbit/s  96\.7 %    66\.7 %   4\.0 us  +2  +1$' <<<"$out"
ok $? "jobs: step 0 with its efficiency" || diag "$out"
is "$(fq jobs --running | wc -l)" 2 "jobs --running: one step"
is "$(fq --json jobs --limit 1 | json 'len(j["jobs"]), j["truncated"]')" "1 True" "jobs --json --limit 1"

out=$(fq job 4242.0); is $? 0 "job 4242.0: exit 0"
grep -q '^  moved 11.60 GB at 30.9 Gbit/s; best interval 32.0 Gbit/s (efficiency 96.7 %)$' <<<"$out"; ok $? "job: summary"
sed -n '/^Slowest lanes/,/^$/p' <<<"$out" | sed -n 3p | grep -Eq '^0->1/1  tcp   gpu01/mlx5_1  gpu02/mlx5_1  1\.10 GB +3  30\.0 us  49\.0 us +94\.0 us +2 +21$'
ok $? "job: the slow lane first among the slowest" || diag "$out"
grep -Eq '^   3      0  gpu04  mlx5_0  1003$' <<<"$out"; ok $? "job: rank 3 on gpu04"
grep -Eq '  3\.60 GB  3\.60 GB/s  28\.8 Gbit/s +8 +94\.0 us$' <<<"$out"; ok $? "job: throughput of the slow interval"
grep -Fq '0 (gpu01), 1 (gpu02)  lane 0->1/1 p99 94 us vs job median 4 us' <<<"$out"; ok $? "job: anomaly with its ranks and nodes"
grep -Eq '^ *[0-9]+  lane_outlier  gpu01/mlx5_1 -> gpu02/mlx5_1 +1  .* open +0,1 +32.0 Gbit/s +30.4 Gbit/s +1  - +lane 0->1/1' \
	<<<"$out"; ok $? "job: the incident, its throughput before and during, lanes failed over" || diag "$out"
awk '/^Incidents$/ { i = NR } /^Ranks$/ { r = NR } END { exit !(i && i < r) }' <<<"$out"; ok $? "job: incidents first"
grep -Fq "3 flaps/h: it's \"bad\" \\ ; drop table x; -- <b>&amp; é 日本" <<<"$out"; ok $? "job: a stored string shown verbatim"
grep -Eq '  0->1 +1  gpu01/mlx5_1 -> gpu02/mlx5_1  no-progress  sender +250\.0 ms  4\.19 MB  300\.0 ms$' <<<"$out"
ok $? "job: one failover (its failback row is its end), out 300 ms" || diag "$out"
grep -q '^Lanes (8 of 8)$' <<<"$out"; ok $? "job: all lanes"
grep -Fxq '  network class: latency; paced lanes: 2 (cap lowest 10.0 Mbit/s, median 15.0), throttled 2.0 lane-s (most 1.0 s); rate given by the controller to 1 lane(s) (lowest 10.0 Mbit/s, median 10.0) for 0.5 lane-s (most 0.5 s)' \
	<<<"$out"; ok $? "job: its network class and pacing" || diag "$(grep 'network class' <<<"$out")"
is "$(fq job 4242.0 --lanes 2 | grep -c '^Lanes (2 of 8)$')" 1 "job --lanes 2"
is "$(fq --json job 4242.0 --bucket 3 | json 'j["steps"][0]["throughput"]["buckets"][0]["gbps"]')" 30.933 "job --bucket 3 --json"
is "$(fq --json job 4242 | json '[s["step_id"] for s in j["steps"]]')" "[0, 1]" "job 4242: both steps"
fq job 4242.9 2>"$tmp/err"; is $? 3 "job 4242.9: exit 3 (not found)"
grep -q 'job 4242 has no step 9' "$tmp/err"; ok $? "... saying so"
fq job 99 2>/dev/null; is $? 3 "unknown job: exit 3"
fq job "4242'; drop table fabriciq.jobs; --" 2>"$tmp/err"; is $? 2 "SQL in the job id: exit 2"
grep -q "job must be JOB or JOB.STEP" "$tmp/err"; ok $? "... the API refused it (400)"
fq job 2>/dev/null; is $? 2 "job without an id: exit 2"
is "$(psql -c 'select count(*) from fabriciq.jobs')" 1 "... and the jobs table is intact"

out=$(fq events --since 12m)
is "$(wc -l <<<"$out")" 3 "events --since 12m: the last flap (down, up)"
fq events --since yesterday 2>"$tmp/err"; is $? 2 "events --since yesterday: exit 2"
grep -q 'since must be an RFC 3339 time' "$tmp/err"; ok $? "... saying why"
is "$(fq --json events --node gpu03 | json 'j["events"][0]["nic_level"]')" True "events --node gpu03 --json"

out=$(fq anomalies --open)
is "$(wc -l <<<"$out")" 3 "anomalies --open: two"
grep -Eq '^ 1  lane_outlier  warning .* open +gpu01/mlx5_1 -> gpu02/mlx5_1  4242\.0 \(0,1\)  lane 0->1/1' <<<"$out"
ok $? "anomalies: job and ranks" || diag "$out"
psql -c "insert into fabriciq.anomalies (kind, severity, start_time, summary) values
	('path_delay', 'info', now() - interval '1 day', E'esc \033[31mred\033[0m')"
fq anomalies | grep -q 'esc ?\[31mred?\[0m$'; ok $? "anomalies: terminal escapes in stored strings are neutralised"
is "$(fq --json anomalies | json 'j["anomalies"][3]["summary"]')" "$(printf 'esc \033[31mred\033[0m')" "... --json keeps them verbatim"

out=$(fq incidents --open)
is "$(wc -l <<<"$out")" 4 "incidents --open: the three open anomalies, each an incident"
id=$(fq --json incidents | json '[i["id"] for i in j["incidents"] if i["kind"] == "lane_outlier"][0]')
out=$(fq incident "$id")
grep -q "^incident $id: lane_outlier (warning), gpu01/mlx5_1 -> gpu02/mlx5_1$" <<<"$out" &&
	grep -q '^  jobs hit: 4242\.0 (0,1)$' <<<"$out" && grep -Eq ' began +'"$id"' +lane_outlier ' <<<"$out"
ok $? "incident ID: what, the jobs hit and its timeline" || diag "$out"
fq incident x 2>/dev/null; is $? 2 "incident x: exit 2"
fq incident 99999999 2>/dev/null; is $? 3 "an unknown incident: exit 3 (not found)"

out=$(fq clock)
grep -Eq '^gpu03  unsynchronised  .*  50\.0 us +30\.0 us +0 +1 +40\.0 us$' <<<"$out"; ok $? "clock: an unsynchronised node" || diag "$out"

# hints and --apply, with a stand-in scontrol.
out=$(fq hints)
grep -Fq 'scontrol update NodeName=gpu03 State=DRAIN Reason="fabriciq: link_down on mlx5_1"' <<<"$out"; ok $? "hints: the drain command"
grep -Eq '^ 5  .*gpu0\$\(reboot\)  drain .* refused: bad node name .gpu0\$\(reboot\)' <<<"$out"; ok $? "hints: a bad node name is refused"
grep -Fq 'gpu0$(reboot) State' <<<"$out"; ok $((!$?)) "... and has no command"
fake=$tmp/fakebin
mkdir -p "$fake" "$tmp/slurm"
cat >"$fake/scontrol" <<'SH'
#!/bin/sh
printf '%s|' "$@" >>"$FQ_FAKE_SLURM/scontrol.log"; echo >>"$FQ_FAKE_SLURM/scontrol.log"
if [ "$1" = show ]; then
	# scontrol show node NODE, as Slurm 22.05 prints it (abridged)
	f=$FQ_FAKE_SLURM/reason.$3
	[ -f "$f" ] || { echo "Node $3 not found" >&2; exit 1; }
	printf 'NodeName=%s Arch=x86_64 CoresPerSocket=1\n   State=IDLE ThreadsPerCore=1\n' "$3"
	r=$(cat "$f")
	[ "$r" = none ] || printf '   Reason=%s [root@2026-11-24T17:00:00]\n' "$r"
	printf '   Comment=(null)\n'
	exit 0
fi
node=${2#NodeName=}
[ -f "$FQ_FAKE_SLURM/fail.$node" ] && { echo "scontrol: error: Invalid node state" >&2; exit 1; }
case $3 in
State=DRAIN) printf '%s\n' "${4#Reason=}" >"$FQ_FAKE_SLURM/reason.$node";;
State=RESUME) echo none >"$FQ_FAKE_SLURM/reason.$node";;
esac
SH
chmod +x "$fake/scontrol"
export FQ_FAKE_SLURM=$tmp/slurm PATH=$fake:$PATH
for n in 1 2 3 4; do echo none >"$tmp/slurm/reason.gpu0$n"; done
echo "maintenance by admin" >"$tmp/slurm/reason.gpu01"
pending() { psql -c "select string_agg(id::text, ',' order by id) from fabriciq.drain_hints where applied_at is null"; }

updates() { grep '^update|' "$tmp/slurm/scontrol.log"; }
out=$(fq hints --apply --dry-run); is $? 1 "hints --apply --dry-run: exit 1 (a hint is refused)"
grep -q '^dry run: 1 applied, 2 skipped, 1 failed$' <<<"$out"; ok $? "... would drain gpu03 only" || diag "$out"
is "$(cat "$tmp/slurm/scontrol.log")" "show|node|gpu03|
show|node|gpu01|" "... ran only scontrol show node, for the two hints not superseded or refused"
is "$(pending)" "1,2,3,5" "... recorded nothing"

out=$(fq hints --apply); is $? 1 "hints --apply: exit 1 (a hint is refused)"
is "$(updates)" "update|NodeName=gpu03|State=DRAIN|Reason=fabriciq: link_down on mlx5_1|" \
	"... ran exactly one scontrol, with the exact argv (no shell)"
is "$(cat "$tmp/slurm/reason.gpu03")" "fabriciq: link_down on mlx5_1" "... gpu03 drained with fabriciq's reason"
grep -q "^hint 3 (resume gpu01): skipped: the node's reason is not fabriciq's ('maintenance by admin'): not resumed$" <<<"$out"
ok $? "... an administrator's drain is not resumed" || diag "$out"
grep -q '^hint 2 (drain gpu01): recorded: superseded' <<<"$out"; ok $? "... the superseded drain recorded"
grep -Fq "hint 5 (drain gpu0\$(reboot)): failed: refused, nothing run: bad node name 'gpu0\$(reboot)'" <<<"$out"; ok $? "... the bad node name refused" || diag "$out"
is "$(pending)" "3,5" "... gpu03's drain and the superseded one recorded, the others pending"

echo "fabriciq: flapping mlx5_0" >"$tmp/slurm/reason.gpu01"
out=$(fq --json hints --apply); is $? 1 "hints --apply again, after the node was drained by fabriciq"
is "$(updates | tail -1)" "update|NodeName=gpu01|State=RESUME|" "... resumes it"
is "$(json '[(r["id"], r["outcome"]) for r in j["results"]], j["applied"]' <<<"$out")" \
	"[(3, 'applied'), (5, 'failed')] 1" "... --json reports each hint"
is "$(pending)" "5" "... recorded"

psql -c "insert into fabriciq.drain_hints (node, action, reason, created_at) values ('gpu02', 'drain', 'x', now()), ('gpu04', 'resume', 'y', now())"
echo "fabriciq: old" >"$tmp/slurm/reason.gpu02"
touch "$tmp/slurm/fail.gpu02"
out=$(fq hints --apply 2>"$tmp/err"); is $? 1 "a failing scontrol: exit 1"
grep -q '^hint 6 (drain gpu02): failed: scontrol update NodeName=gpu02 State=DRAIN Reason="fabriciq: x" exited with 1$' <<<"$out"
ok $? "... saying which command failed" || diag "$out"
grep -q '^hint 7 (resume gpu04): recorded: the node is not drained' <<<"$out"; ok $? "... a moot resume is recorded"
is "$(pending)" "5,6" "... the failed hint stays pending"

# Fabric hints: a cable's incident with its hint (8), then its switch's
# taking it in, with its own (9) that job 4242 hit: shown with what to
# check, nothing run for them.
psql <<'SQL'
insert into fabriciq.anomalies (kind, severity, start_time, component, summary)
values ('fabric_loss', 'warning', now() - interval '2 minutes', 'leaf1~spine3', 'leaf1~spine3 dropping packets');
insert into fabriciq.drain_hints (action, component, reason, anomaly_id, created_at)
select 'check', 'leaf1~spine3', 'check the cable leaf1~spine3: both ends'' optics', id, now() - interval '2 minutes'
from fabriciq.anomalies where component = 'leaf1~spine3';
insert into fabriciq.anomalies (kind, severity, start_time, component, summary)
values ('fabric_delay', 'warning', now() - interval '1 minute', 'spine3', 'spine3 congested: 12 delayed paths cross it');
insert into fabriciq.anomaly_jobs select id, 4242, 0, '{0,1}' from fabriciq.anomalies where component = 'spine3';
insert into fabriciq.drain_hints (action, component, reason, anomaly_id, created_at)
select 'check', 'spine3', 'check spine3: its buffer and queue occupancy', id, now() - interval '1 minute'
from fabriciq.anomalies where component = 'spine3';
update fabriciq.anomalies set incident_id = (select id from fabriciq.anomalies where component = 'spine3')
where component = 'leaf1~spine3';
SQL
is "$(pending)" "5,6,8,9" "fabric hints pending"
out=$(fq hints)
grep -Eq '^ 9  .* -  +check  +-  +spine3  +what to check: below  +[0-9]+ fabric_delay  +4242  +fabric: nothing to run$' <<<"$out"
ok $? "hints: a fabric hint's row: no node, its component, its incident, the job it hit" || diag "$out"
grep -Eq '^ 8  .*leaf1~spine3 .* superseded$' <<<"$out"; ok $? "... the cable's superseded by its switch's"
is "$(sed -n '/^Fabric checks/,/^$/p' <<<"$out")" "Fabric checks (a switch or cable at fault, no node: nothing to run):
  spine3 (hint 9, anomaly $(psql -c "select id from fabriciq.anomalies where component = 'spine3'") fabric_delay): check spine3: its buffer and queue occupancy" \
	"... what to check, below the table: spine3's only"
is "$(fq --json hints | json '[(h["id"], h["node"], h["component"], h["superseded"], h["command"], h["refused"]) for h in j["hints"] if h["action"] == "check"]')" \
	"[(8, None, 'leaf1~spine3', True, None, None), (9, None, 'spine3', False, None, None)]" "hints --json: both, with their components"
: >"$tmp/slurm/scontrol.log"
out=$(fq hints --apply --dry-run)
grep -q '^hint 9 (check spine3): would record: a fabric hint, nothing to run: check spine3: its buffer and queue occupancy$' <<<"$out"
ok $? "hints --apply --dry-run: the fabric hint printed, nothing to run" || diag "$out"
out=$(fq hints --apply); is $? 1 "hints --apply (gpu02's scontrol still failing): exit 1"
grep -q '^hint 8 (check leaf1~spine3): recorded: superseded by a later hint for the component, or its incident.s$' <<<"$out"
ok $? "... the cable's hint recorded as superseded" || diag "$out"
grep -q '^hint 9 (check spine3): recorded: a fabric hint, nothing to run: check spine3: ' <<<"$out"
ok $? "... spine3's printed and recorded, handed over" || diag "$out"
grep -q '^0 applied, 2 skipped, 2 failed$' <<<"$out"; ok $? "... counted as skipped" || diag "$out"
is "$(grep -c 'spine3\|check' "$tmp/slurm/scontrol.log")" 0 "... no scontrol call for them"
is "$(pending)" "5,6" "... no longer pending"

# The HTTP client, where no controller listens.
"$cli" --controller http://127.0.0.1:1 status 2>"$tmp/err"; is $? 1 "no controller: exit 1"
grep -q 'controller http://127.0.0.1:1: cannot connect to 127.0.0.1 port 1: Connection refused' "$tmp/err"; ok $? "... saying why"
grep -q 'is fabriciq-controller running there.*--controller URL.*--db CONNINFO' "$tmp/err"; ok $? "... and what to try next"
FABRICIQ_CONTROLLER=ftp://x "$cli" status 2>"$tmp/err"; is $? 1 "FABRICIQ_CONTROLLER with a bad URL: exit 1"
grep -q "bad controller URL 'ftp://x'" "$tmp/err"; ok $? "... saying so"
"$cli" --db "host=$PGHOST/nonexistent" status 2>"$tmp/err"; is $? 1 "--db with no server: exit 1"
done_testing
