#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time from its seed corpus (a new
# crash fails the test and leaves the input in the log). Skips, with the
# reason, when the build found no clang with libFuzzer.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/munged.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
secs=${FQ_FUZZ_SECONDS:-20}
targets="frame config probe ud ibhandle chunk hello recv accept api-query session spool ctl-spool topology qpcheck proftag"
for t in $targets; do
	[ -x "$top_builddir/tests/fuzz/fuzz-$t" ] ||
		skip_all "fuzz targets not built (configure found no clang with -fsanitize=fuzzer: apt-get install clang libclang-rt-14-dev)"
done
# fuzz-session authenticates for real when a munged runs: a private one.
MUNGE_DIR=$(mktemp -d /tmp/fq-fuzz-munge.XXXXXX)
trap 'munged_stop; rm -rf "$MUNGE_DIR"' EXIT
if munged_start "$MUNGE_DIR"; then
	export FQ_FUZZ_MUNGE_SOCKET=$MUNGE_SOCKET
else
	diag "no munged ($MUNGED_ERR): fuzz-session covers the path before authentication only"
fi
plan 16
for t in $targets; do
	work=$(mktemp -d)
	out=$("$top_builddir/tests/fuzz/fuzz-$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 \
		-artifact_prefix="$work/" "$work" "$top_srcdir/tests/fuzz/corpus/$t" 2>&1)
	rc=$?
	runs=$(grep -oE 'Done [0-9]+ runs' <<<"$out" | awk '{print $2}')
	ok $rc "fuzz-$t: ${runs:-?} inputs in ${secs}s, no crash" ||
		{ printf '%s\n' "$out" | tail -30 | sed 's/^/# /'; for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do [ -f "$f" ] && diag "input: $(od -An -tx1 "$f" | tr -d '\n' | head -c 400)"; done; }
	rm -rf "$work"
done
