#!/bin/sh
# Regenerates configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --force --install --warnings=all
# automake's TAP driver is not installed by autoreconf; every test uses it.
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/tap-driver.sh
