#!/bin/sh
# test-end-report against a private munged.
exec "$(dirname "$0")/../unit/with-munged.sh" "${top_builddir:-.}/tests/spank/test-end-report"
