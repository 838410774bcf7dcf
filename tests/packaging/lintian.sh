#!/usr/bin/env bash
# lintian on the Debian packages built in $1 (build_deb.sh), the package and its -dbgsym: no
# error, no warning (informational and pedantic notes are printed, not counted).
set -euo pipefail
out=$1
status=0
for package in "$out"/wctmon_*.deb "$out"/wctmon-dbgsym_*.ddeb; do
  report=$(lintian --no-cfg --info --pedantic "$package" 2>&1 |
    grep -v "^running with root privileges" || true)
  [[ -z $report ]] || echo "$report"
  errors=$(grep -cE '^E: ' <<<"$report" || true)
  warnings=$(grep -cE '^W: ' <<<"$report" || true)
  echo "lintian: $errors errors, $warnings warnings on $(basename "$package")"
  ((errors + warnings == 0)) || status=1
done
exit $status
