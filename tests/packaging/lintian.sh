#!/usr/bin/env bash
# lintian on the Debian package built in $1 (build_deb.sh): no error, no warning (its
# informational and pedantic notes are printed, not counted).
set -euo pipefail
out=$1
deb=$(ls "$out"/wctmon_*.deb)
report=$(lintian --no-cfg --info --pedantic "$deb" 2>&1 | grep -v "^running with root privileges" || true)
echo "$report"
if grep -qE "^[EW]: " <<<"$report"; then
  echo "lintian: $(grep -cE '^E: ' <<<"$report") errors, $(grep -cE '^W: ' <<<"$report") warnings"
  exit 1
fi
echo "lintian: 0 errors, 0 warnings on $(basename "$deb")"
