#!/bin/sh
# test-munge against a private munged.
exec "$(dirname "$0")/with-munged.sh" "${top_builddir:-.}/tests/unit/test-munge"
