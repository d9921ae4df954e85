#!/usr/bin/env bash
# with-munged.sh TEST: run TEST with a private munged (tests/lib/munged.sh),
# its socket in FQ_TEST_MUNGE_SOCKET, stopped on exit. Skips (TAP) with the
# reason when munged cannot run here.
set -u
. "$(dirname "$0")/../lib/munged.sh"
test=$1
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root to run a private munged"; exit 0; }
dir=$(mktemp -d /tmp/fq-munge.XXXXXX)
chmod 0700 "$dir"
trap 'munged_stop; rm -rf "$dir"' EXIT
munged_start "$dir" --origin=127.0.0.1 || { echo "1..0 # SKIP $MUNGED_ERR"; exit 0; }
FQ_TEST_MUNGE_SOCKET=$MUNGE_SOCKET "$test"
