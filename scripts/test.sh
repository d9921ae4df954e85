#!/bin/sh
# The whole test suite, from a fresh Debian 12 machine: installs what is
# missing, builds with warnings as errors, checks formatting, runs `make
# check` (unit and testbed integration tests, TAP) and prints one summary
# line. Integration tests need root and namespaces; without them they skip
# and say why.
set -u
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
scripts/build.sh || exit 1
rc=0
make check-format || rc=1
make -j"$(nproc)" check >build-check.log 2>&1 || rc=1
# Every test result, with its reason when it failed or skipped.
cat build-check.log | grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR):' || true
for f in $(find . -name '*.log' -path '*tests*' ! -name test-suite.log); do
	if grep -q '^not ok' "$f" 2>/dev/null; then
		echo "---- $f"; cat "$f"
	fi
done
pass=$(grep -h '^:test-result: PASS' $(find . -name '*.trs') 2>/dev/null | wc -l)
fail=$(grep -hE '^:test-result: (FAIL|ERROR|XPASS)' $(find . -name '*.trs') 2>/dev/null | wc -l)
skip=$(grep -h '^:test-result: SKIP' $(find . -name '*.trs') 2>/dev/null | wc -l)
[ "$fail" -eq 0 ] || rc=1
[ "$pass" -gt 0 ] || { echo "tests: no test ran" >&2; rc=1; }
echo "tests: $pass passed, $fail failed, $skip skipped"
exit $rc
