#!/usr/bin/env bash
# contrib/: the bash completion of fabriciq completes the commands the CLI
# has (its --help list), each command's options and some values; the NHC
# check passes a node whose doctor passes and, when a check fails, calls
# NHC's die with that check's line.
src=${top_srcdir:-$(dirname "$0")/../..}
B=${top_builddir:-.}
. "$src/tests/lib/tap.sh"
cli=$B/controller/fabriciq
[ -x "$cli" ] || skip_all "$cli not built"

# bash-completion's helpers, as far as the completion uses them
_init_completion() {
	words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
	cur=${words[cword]} prev=${words[cword - 1]}
}
_filedir() { COMPREPLY=(FILES); }
complete() { :; }
. "$src/contrib/bash-completion/fabriciq"
# completes WORD...: the candidates for the last word of "fabriciq WORD...".
completes() {
	COMP_WORDS=(fabriciq "$@") COMP_CWORD=$#
	COMPREPLY=()
	_fabriciq
	echo "${COMPREPLY[*]}"
}

want=$("$cli" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]*\) .*/\1/p' | tr '\n' ' ')
is "$(completes '')" "${want% }" "every command of fabriciq --help, in its order"
is "$(completes st)" "status" "a command's prefix"
is "$(completes --j)" "--json" "a global option"
is "$(completes -c http://x do)" "doctor" "the command after a global option's value"
is "$(completes doctor --cl)" "--clock-budget" "doctor's options"
is "$(completes doctor --plugstack '')" "FILES" "... a file after --plugstack"
is "$(completes links --state '')" "up down unknown" "links --state's values"
is "$(completes db '')" "migrate" "db's subcommand"
is "$(completes status --)" "--json --help" "--json after the command"

# NHC: die CODE MESSAGE marks the node down with MESSAGE
die() { nhc_died="$1 $2"; }
. "$src/contrib/nhc/fabriciq.nhc"
tmp=$(mktemp -d /tmp/fq-nhc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
FABRICIQ=$cli
nhc_died=
check_fabriciq -c /dev/null -s "status_file=$tmp/none.json" -s "run_dir=$tmp"; rc=$?
is $rc 1 "a failing doctor: the check fails"
is "$nhc_died" "1 fabriciq: FAIL agent fabriciq-agent is not running here: no status file $tmp/none.json (No such file or directory)" \
	"... NHC's die gets the first failing check's line"
nhc_died=
check_fabriciq --frob; rc=$?
is "$rc ${nhc_died%%:*}" "1 1 fabriciq" "a doctor that cannot run fails the check too"
grep -q "could not run (exit 2)" <<<"$nhc_died"; ok $? "... saying so: $nhc_died"
printf '#!/bin/sh\necho "PASS  agent  fine"\n' >"$tmp/fabriciq" && chmod +x "$tmp/fabriciq"
FABRICIQ=$tmp/fabriciq
nhc_died=
check_fabriciq; rc=$?
is "$rc:$nhc_died" "0:" "a passing doctor: the check passes, die not called"
done_testing
