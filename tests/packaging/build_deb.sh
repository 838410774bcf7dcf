#!/usr/bin/env bash
# Builds the Debian package (and its -dbgsym) from the build tree $1 into $2, once for every
# packaging test that needs it (the ctest fixture wctmon_deb).
set -euo pipefail
build=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
cpack --config "$build/CPackConfig.cmake" -B "$out" >/dev/null
ls "$out"/wctmon_*.deb "$out"/wctmon-dbgsym_*.ddeb
