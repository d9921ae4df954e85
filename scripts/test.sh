#!/bin/sh
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, builds with warnings as errors, checks formatting, runs `make
# check` (unit, fuzz and emulated-cluster integration tests, TAP), runs the
# unit tests again under AddressSanitizer + UBSan, runs `make distcheck`
# (the tarball: build, unit tests, install, uninstall), builds and installs
# the Debian packages into a fresh Debian 12 root (make check-packaging),
# and prints one summary line. Integration tests need root and namespaces;
# without them they skip and say why.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/deps.sh || exit 1
scripts/build.sh || exit 1
scripts/build.sh --asan || exit 1
rc=0
make -C build -s check-format || rc=1
# Build the test programs in parallel, then run the tests one at a time:
# the emulated-cluster tests measure timing (detection, queueing) and must
# not share the two cores with each other.
make -C build -j"$(nproc)" check TESTS= >/dev/null 2>&1
make -C build check >build/check.out 2>&1 || rc=1
make -C build-asan -j"$(nproc)" check-unit >build-asan/check.out 2>&1 || rc=1
# The tarball builds, passes the unit tests, installs and uninstalls
# (3 min on 2 idle cores: 1m26s user, 24s sys).
if make -C build distcheck >build/distcheck.out 2>&1; then
	echo "distcheck: ok"
else
	echo "distcheck: FAILED (log: build/distcheck.out)"; tail -20 build/distcheck.out; rc=1
fi

# The Debian packages as a site installs them: built, installed by apt into a
# fresh Debian 12 root and checked there, then one `srun --fabriciq` job on
# the emulated cluster through the installed plugins and daemons
# (tests/packaging/test-debs.sh; skips without root or the Debian registry).
# Not in `make check`: 65 s on 2 quiet cores (package build 38 s, the root
# 21 s, the cluster's job 4 s), 6 minutes on 2 loaded ones (build 220 s,
# root 103 s).
if make -C build -s check-packaging >build/packaging.out 2>&1; then
	echo "packaging: ok"
else
	echo "packaging: FAILED (log: build/tests/packaging/test-debs.log)"; rc=1
fi

# Every test that did not pass: its log's end, then its name. The names come
# last, just above the summary, so that the tail of this output names them.
failed=$(grep -lE '^:test-result: (FAIL|ERROR|XPASS)' $(find build build-asan -name '*.trs') /dev/null 2>/dev/null)
for t in $failed; do
	echo "---- ${t%.trs}.log (its last 60 lines)"; tail -60 "${t%.trs}.log"
done
for b in build build-asan; do
	grep -E '^(FAIL|ERROR|XPASS):' "$b/check.out" 2>/dev/null | sed "s|^|$b: |"
done
trs=$(find build build-asan -name '*.trs')
pass=$(cat $trs /dev/null | grep -c '^:test-result: PASS')
fail=$(cat $trs /dev/null | grep -cE '^:test-result: (FAIL|ERROR|XPASS)')
skip=$(cat $trs /dev/null | grep -c '^:test-result: SKIP')
[ "$fail" -eq 0 ] || rc=1
[ "$pass" -gt 0 ] || { echo "tests: no test ran" >&2; rc=1; }
echo "tests: $pass passed, $fail failed, $skip skipped"
exit $rc
