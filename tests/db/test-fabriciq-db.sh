#!/usr/bin/env bash
# fabriciq-db against a private PostgreSQL: commands, --json, exit codes,
# two migrators at once, refusal of a newer schema.
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$(dirname "$0")/with-postgres.sh" "$0" "$@"
fi
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/tap.sh"
tool=${top_builddir:-.}/db/fabriciq-db
[ -x "$tool" ] || skip_all "$tool not built"
psql() { command psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

"$tool" --help | grep -q '^Usage: fabriciq-db'; ok $? "--help prints the usage"
"$tool" >/dev/null 2>&1; is $? 2 "no command: exit 2"
"$tool" frobnicate 2>/dev/null; is $? 2 "unknown command: exit 2"
"$tool" --bogus status 2>/dev/null; is $? 2 "unknown option: exit 2"
out=$("$tool" -d "host=$PGHOST/nonexistent" status 2>&1); is $? 1 "unreachable server: exit 1"
case $out in *"cannot connect to PostgreSQL"*nonexistent*) ok 0 "... saying why";; *) ok 1 "... saying why: $out";; esac

"$tool" status >/dev/null; is $? 4 "status of an empty database: exit 4 (needs migration)"

# The schema version this code knows: one sql/NNN_*.sql per migration.
v=$(ls "${top_srcdir:-$(dirname "$0")/../..}"/sql/[0-9][0-9][0-9]_*.sql | wc -l)
f=$((v + 1))

# Two migrators at once on a fresh database: the advisory lock serialises them.
psql -d postgres -c 'create database race'
"$tool" -d dbname=race migrate >"$PGHOST/m1.out" 2>&1 & p1=$!
"$tool" -d dbname=race migrate >"$PGHOST/m2.out" 2>&1 & p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
is "$r1 $r2" "0 0" "two concurrent migrators both succeed"
is "$(psql -d race -c 'select count(*), count(distinct version) from fabriciq.schema_version')" "$v|$v" \
	"... and each migration is applied once"
grep -q "nothing applied" "$PGHOST/m1.out" "$PGHOST/m2.out"; ok $? "... the second found nothing to do"

is "$("$tool" --json migrate)" "{\"schema_version\":$v,\"applied\":$v}" "migrate --json from empty"
is "$("$tool" --json migrate)" "{\"schema_version\":$v,\"applied\":0}" "migrate again: nothing applied"
"$tool" status >"$PGHOST/status.out"; is $? 0 "status: exit 0 when up to date"
grep -q "^schema version: $v (this fabriciq: $v, up to date)" "$PGHOST/status.out"; ok $? "... says so"
day=$(date -u +%Y%m%d)
grep -q "^lane_windows  *lane_windows_p$day " "$PGHOST/status.out"; ok $? "... lists today's lane_windows partition"
json=$("$tool" --json status)
case $json in "{\"schema_version\":$v,\"code_version\":$v,\"state\":\"up to date\",\"partitions\":[{"*) ok 0 "status --json";;
*) ok 1 "status --json"; diag "$json";; esac
is "$("$tool" --json maintain)" '{"created":0,"dropped":0}' "maintain right after migrate: nothing to do"
psql -c "drop table fabriciq.probe_windows_p$day"
is "$("$tool" maintain)" 'partitions: 1 created, 0 dropped' "maintain recreates a missing partition"

psql -c "insert into fabriciq.schema_version (version, name) values ($f, 'from the future')"
err=$("$tool" migrate 2>&1); is $? 3 "a newer schema: migrate exits 3"
case $err in *"version $f, newer than this fabriciq knows (version $v)"*) ok 0 "... naming both versions";;
*) ok 1 "... naming both versions"; diag "$err";; esac
"$tool" status >/dev/null; is $? 3 "... status exits 3 too"
is "$(psql -c 'select count(*) from fabriciq.schema_version')" $f "... and nothing was changed"
done_testing
