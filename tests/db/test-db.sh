#!/bin/sh
# test-db (the db library) against a private PostgreSQL.
exec "$(dirname "$0")/with-postgres.sh" "${top_builddir:-.}/tests/db/test-db"
