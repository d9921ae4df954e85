#!/usr/bin/env bash
# Bad input: a one-line error naming the problem, a non-zero exit, and
# nothing half-built left behind.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
tb_setup tb
plan 24

# refuse CMD... WORD: fails, says one line containing WORD, leaves nothing.
refuse() {
	local word=$1 out rc
	shift
	out=$("$TB" "$@" 2>&1)
	rc=$?
	[ $rc -ne 0 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -qi -- "$word" <<<"$out"
	ok $? "'$*' is refused naming '$word'" || diag "rc=$rc: $out"
}
nothing_left() {
	[ ! -e "$FQTB_STATE" ] && ! ip netns list | grep -q "^$TB_PFX-"
	ok $? "$1: nothing left behind"
}

refuse "unknown verb" frobnicate
refuse "--hosts" up --prefix "$TB_PFX" --hosts 17
refuse "--rails" up --prefix "$TB_PFX" --rails 0
refuse "--leaves" up --prefix "$TB_PFX" --hosts 2 --leaves 3
refuse "--spines" up --prefix "$TB_PFX" --spines x
refuse "bad rate" up --prefix "$TB_PFX" --spine-rate fast
refuse "unknown service" up --prefix "$TB_PFX" --services slurm,nfs
refuse "slurm needs munge" up --prefix "$TB_PFX" --services slurm
refuse "unknown option" up --prefix "$TB_PFX" --colour blue
refuse "no testbed" status
PG_BIN=/nonexistent refuse "apt-get install postgresql-15" up --prefix "$TB_PFX" --services postgres
nothing_left "option errors"

# Errors found after building has started must undo it.
printf 'n1 5ms\nn9 1ms\n' >"$FQTB_STATE.offsets"
refuse "offsets:2: unknown host 'n9'" up --prefix "$TB_PFX" --services none --clock-offsets "$FQTB_STATE.offsets"
printf 'n1 -99999s\n' >"$FQTB_STATE.offsets"
refuse "negative" up --prefix "$TB_PFX" --services none --clock-offsets "$FQTB_STATE.offsets"
rm -f "$FQTB_STATE.offsets"
nothing_left "failed up"

check "up (2 hosts, fabric only)" tb up --prefix "$TB_PFX" --hosts 2 --leaves 1 --services none
refuse "unknown link 'n9-rail0'" link down n9 0
refuse "unknown link 'n1-rail7'" link down n1 7
refuse "bad rail" link down n1 eth0
refuse "unknown host 'n3'" exec n3 true
refuse "bad rate" shape leaf1-spine1 fast
refuse "unknown link" shape leaf9-spine1 1gbit
refuse "--count" flap n1 0 --count many --period 100
check "the testbed still works after all that" tb exec n1 ping -c1 -W1 -I 198.19.0.3 198.19.0.5
