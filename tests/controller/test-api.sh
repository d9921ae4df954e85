#!/usr/bin/env bash
# The JSON API (controller/api.c) against a private PostgreSQL holding the
# fixture of test-api-fixture.sh; the checks are in test-api.c. Last, the
# server is stopped under the test's connection (503 expected).
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
fi
here=${top_srcdir:-$(dirname "$0")/../..}/tests/controller
. "$here/test-api-fixture.sh"
bin=${top_builddir:-.}/tests/controller/test-api
migrate=${top_builddir:-.}/db/fabriciq-db
[ -x "$bin" ] && [ -x "$migrate" ] || { echo "1..0 # SKIP $bin or $migrate not built"; exit 0; }
"$migrate" migrate >/dev/null || { echo "Bail out! migrate failed"; exit 1; }
load_fixture || { echo "Bail out! fixture failed to load"; exit 1; }
FQ_TEST_PG_STOP="$FQ_TEST_PG_CTL -m immediate -w stop >/dev/null" \
	exec "$bin"
