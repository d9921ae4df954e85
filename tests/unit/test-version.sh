#!/usr/bin/env bash
# Every fabriciq program answers --version (NAME VERSION, exit 0) and
# follows one exit-code scheme: 2 for a usage or configuration error
# (fabriciq-agent said 1 for a bad setting while the controller said 2).
src=${top_srcdir:-$(dirname "$0")/../..}
B=${top_builddir:-.}
. "$src/tests/lib/tap.sh"
v=$(sed -n 's/^AC_INIT(\[fabriciq\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac")
for p in slurmd-agent/fabriciq-agent controller/fabriciq-controller controller/fabriciq db/fabriciq-db \
	tools/collbench/fabriciq-collbench; do
	[ -x "$B/$p" ] || skip_all "$B/$p not built"
done
for p in slurmd-agent/fabriciq-agent controller/fabriciq-controller controller/fabriciq db/fabriciq-db \
	tools/collbench/fabriciq-collbench "$src/tests/testbed/fabriciq-testbed"; do
	name=${p##*/}
	[ "${p#/}" = "$p" ] && p=$B/$p
	out=$("$p" --version); rc=$?
	case $out in "$name $v"*) is $rc 0 "$name --version: $out" ;; *) ok 1 "$name --version: '$out'" ;; esac
	"$p" --no-such-option >/dev/null 2>&1; is $? 2 "$name: an unknown option exits 2"
done
for d in fabriciq-agent:slurmd-agent fabriciq-controller:controller; do
	"$B/${d#*:}/${d%:*}" -c /dev/null -s no_such_key=1 2>/dev/null; is $? 2 "${d%:*}: an unknown setting exits 2"
done
printf 'agent.probe_interval = fast\n' >"${TMPDIR:-/tmp}/fq-version-$$.conf"
"$B/slurmd-agent/fabriciq-agent" -c "${TMPDIR:-/tmp}/fq-version-$$.conf" 2>/dev/null; is $? 2 "fabriciq-agent: a bad value exits 2"
rm -f "${TMPDIR:-/tmp}/fq-version-$$.conf"
"$B/slurmd-agent/fabriciq-agent" --help | grep -q -- --foreground; is $? 1 "fabriciq-agent's usage offers no --foreground"
done_testing
