#!/usr/bin/env bash
# The agent's spool through 13 node crashes, 12 at random moments and one
# after 5 bulk frames not yet flushed (tests/agent/spool-crash.c), on
# tb-crashfs (tests/testbed/tb-crashfs.c), which keeps only what fsync and
# fsyncdir made durable. Mounted in a mount namespace of its own: nothing
# outside sees it, and it goes with the namespace even if the test dies.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
CFS=$top_builddir/tests/testbed/tb-crashfs
SC=$top_builddir/tests/agent/spool-crash
ROUNDS=${SPOOL_CRASH_ROUNDS:-12}

if [ -z "${CRASHFS_NS:-}" ]; then
	[ -x "$CFS" ] || skip_all "tests/testbed/tb-crashfs not built (fuse3 missing: apt-get install libfuse3-dev)"
	[ -x "$SC" ] || skip_all "tests/agent/spool-crash not built"
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (a FUSE mount in a mount namespace)"
	[ -c /dev/fuse ] || skip_all "no /dev/fuse (the kernel's fuse module)"
	unshare -m --propagation private true 2>/dev/null || skip_all "cannot create a mount namespace here"
	CRASHFS_NS=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi

D=$(mktemp -d "${TMPDIR:-/tmp}/spoolcrash.XXXXXX")
mkdir "$D/backing" "$D/spool"
"$CFS" "$D/backing" "$D/spool" >"$D/crashfs.log" 2>&1 &
FSPID=$!
trap 'kill -TERM $FSPID 2>/dev/null; wait $FSPID 2>/dev/null; umount -l "$D/spool" 2>/dev/null; rm -rf "$D"' EXIT
for ((i = 0; i < 50; i++)); do grep -q ' on ' "$D/crashfs.log" && break; sleep 0.1; done
grep -q ' on ' "$D/crashfs.log" || skip_all "tb-crashfs did not mount: $(cat "$D/crashfs.log")"

"$SC" "$D/spool" "$FSPID" "$D/crashfs.log" "$ROUNDS"
rc=$?
sed 's/^/# /' "$D/crashfs.log"
exit $rc
