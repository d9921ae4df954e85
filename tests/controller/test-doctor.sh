#!/usr/bin/env bash
# `fabriciq doctor` with no agent on this machine, a private munged
# (tests/unit/with-munged.sh) and this build's plugins: the agent check
# fails naming why (no status file; a status whose pid has exited), the
# checks that need the agent fail with it, munge round-trips (and fails on
# a socket where no munged listens), the SPANK plugin is found through a
# plugstack include and loads, the NCCL plugin loads; exit 1 and --json;
# usage errors exit 2. The symbol lists doctor checks are the .sym files'.
# The whole pass with a running agent is tests/testbed/test-doctor.sh.
if [ -z "${FQ_TEST_MUNGE_SOCKET:-}" ]; then
	exec "$(dirname "$0")/../unit/with-munged.sh" "$0" "$@"
fi
src=${top_srcdir:-$(dirname "$0")/../..}
B=${top_builddir:-.}
. "$src/tests/lib/tap.sh"
cli=$B/controller/fabriciq
[ -x "$cli" ] || skip_all "$cli not built"
command -v python3 >/dev/null || skip_all "python3 not installed (JSON checks)"
tmp=$(mktemp -d /tmp/fq-doctor.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/plugstack.conf.d"
echo "required $B/spank/.libs/spank_fabriciq.so" >"$tmp/plugstack.conf.d/fabriciq.conf"
echo "include $tmp/plugstack.conf.d/*.conf" >"$tmp/plugstack.conf"
doctor() {
	"$cli" -m "$FQ_TEST_MUNGE_SOCKET" doctor -c /dev/null -s "status_file=$tmp/status.json" -s "run_dir=$tmp" \
		-p "$tmp/plugstack.conf" -n "$B/nccl-plugin/.libs/libnccl-net-fabriciq.so" "$@"
}
# has TEXT PATTERN DESC: TEXT has a line matching PATTERN (grep).
has() { grep -q -- "$2" <<<"$1"; ok $? "$3" || diag "$1"; }
# result CHECK: that check's result and message from the JSON on stdin.
result() { python3 -c 'import json, sys; print(*[c["result"] + " " + c["message"] for c in json.load(sys.stdin)["checks"] if c["check"] == sys.argv[1]])' "$1"; }

out=$(doctor --json); is $? 1 "no agent: exit 1"
has "$(result agent <<<"$out")" "^fail fabriciq-agent is not running here: no status file $tmp/status.json" \
	"agent: fails, naming the status file"
has "$(result clock <<<"$out")" "^fail no running agent" "clock: fails with the agent"
has "$(result nics <<<"$out")" "^fail no running agent" "nics: fails with the agent"
has "$(result controller <<<"$out")" "^skip no controller configured" "controller: skipped without agent.controller"
has "$(result munge <<<"$out")" "^pass credential encoded and decoded through $FQ_TEST_MUNGE_SOCKET" "munge: round trip"
has "$(result spank <<<"$out")" "^pass $B/spank/.libs/spank_fabriciq.so in $tmp/plugstack.conf loads" \
	"spank: found through the include, loads, exports its entry points"
has "$(result nccl <<<"$out")" "^pass .*libnccl-net-fabriciq.so loads and exports ncclNetPlugin_v8..v12" "nccl: loads"
is "$(python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["ok"], j["failed"])' <<<"$out")" "False 3" \
	"--json: ok false, 3 failed"

# a status file left by an agent that has exited
sh -c 'exit 0' & dead=$!
wait $dead
printf '{"node":"n9","pid":%d,"realtime_ns":%d,"nics":[]}\n' $dead "$(date +%s%N)" >"$tmp/status.json"
out=$(doctor -s controller=ctl:7100); is $? 1 "an agent that exited: exit 1"
has "$out" "^FAIL  agent       fabriciq-agent is not running: pid $dead (status file $tmp/status.json) has exited" \
	"... the agent line says it exited"
has "$out" "^FAIL  controller  no running agent to reach the controller ctl:7100" "... and the controller line why"
has "$out" "^fabriciq doctor: 4 of 7 checks failed$" "... and the count"

out=$("$cli" -m "$tmp/no-munged" doctor -c /dev/null -s "status_file=$tmp/status.json" --json)
has "$(result munge <<<"$out")" "^fail munge round trip through $tmp/no-munged failed" "munge: fails where no munged listens"

"$cli" doctor --clock-budget soon >/dev/null 2>&1; is $? 2 "a bad --clock-budget: exit 2"
"$cli" doctor now >/dev/null 2>&1; is $? 2 "an argument: exit 2"
"$cli" doctor -c /dev/null -s bogus=1 >/dev/null 2>&1; is $? 2 "an unknown agent setting: exit 2"

# the symbols doctor asks for are those the plugins' version scripts export
syms() { sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$1"; }
for s in $(syms "$src/nccl-plugin/abi/libnccl-net-fabriciq.sym") $(syms "$src/spank/spank_fabriciq.sym"); do
	grep -q "\"$s\"" "$src/controller/cli/doctor.c" || missing+=" $s"
done
is "${missing:-}" "" "doctor checks every symbol the version scripts name"
done_testing
