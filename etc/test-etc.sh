#!/usr/bin/env bash
# The files `make install` puts in /etc and the unit directory against the
# programs they configure: the shipped fabriciq.conf loads in the agent and
# the controller as shipped (all commented) and with every setting
# uncommented (no key in it that the daemons refuse), and the generated
# units and plugstack line name the installed paths, no template left;
# fabriciq.conf(5), generated, has every key the daemons have.
. "$(dirname "$0")/../tests/lib/tap.sh"
B=$top_builddir
conf=$top_srcdir/etc/fabriciq.conf
plan 8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check "the agent loads fabriciq.conf as shipped" "$B/slurmd-agent/fabriciq-agent" -c "$conf" --dump-config
sed -E 's/^#([a-z]+\.[a-z_]+ =)/\1/' "$conf" >"$tmp/all.conf"
n=$(grep -c '^[a-z]' "$tmp/all.conf")
check "the agent loads it with its $n settings uncommented" "$B/slurmd-agent/fabriciq-agent" -c "$tmp/all.conf" --dump-config
check "the controller too" "$B/controller/fabriciq-controller" -c "$tmp/all.conf" --dump-config
[ "$(grep -c "^ExecStart=/.*/fabriciq-agent -c /.*/fabriciq/fabriciq.conf$" "$B/slurmd-agent/fabriciq-agent.service")" -eq 1 ] &&
	grep -q "^Type=notify$" "$B/slurmd-agent/fabriciq-agent.service"
ok $? "the agent's unit: Type=notify, ExecStart by absolute paths"
grep -q "^User=fabriciq$" "$B/controller/fabriciq-controller.service" &&
	grep -q "^ProtectSystem=strict$" "$B/controller/fabriciq-controller.service"
ok $? "the controller's unit: user fabriciq, ProtectSystem=strict"
is "$(cat "$B"/slurmd-agent/fabriciq-agent.service "$B"/controller/fabriciq-controller.service "$B"/etc/plugstack-fabriciq.conf | grep -c '@[a-z]*@')" 0 \
	"no @dir@ left in the units and the plugstack line"
grep -Eq "^#optional /.*/fabriciq/spank_fabriciq.so libdir=/.*/fabriciq( |$)" "$B/etc/plugstack-fabriciq.conf"
ok $? "the plugstack line, commented out, names the installed plugin by absolute path"
# fabriciq.conf(5): one entry per key of each daemon (--dump-config lists
# them all), in the daemons' order
keys() { "$B/slurmd-agent/fabriciq-agent" -c /dev/null --dump-config; "$B/controller/fabriciq-controller" -c /dev/null --dump-config; }
want=$(keys | awk '{ print $1 }' | tr '\n' ' ')
man5=$B/doc/fabriciq.conf.5
[ -f "$man5" ] || man5=$top_srcdir/doc/fabriciq.conf.5 # a tarball's, up to date
got=$(sed -n 's/^\.B \([a-z]*\.[a-z_]*\)$/\1/p' "$man5" | tr '\n' ' ')
is "$got" "$want" "fabriciq.conf(5) documents every key of the agent and the controller ($(wc -w <<<"$want"))"
