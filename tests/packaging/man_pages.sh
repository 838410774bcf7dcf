#!/usr/bin/env bash
# The man pages render with man -l, without a warning from groff (as lintian runs them), and each
# has the NAME line whatis and apropos read.
set -euo pipefail
dir=$1
for page in "$dir"/wctmon.8 "$dir"/wctmond.8 "$dir"/wctctl.1; do
  name=$(basename "${page%.*}")
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
  if [[ -n $warnings ]]; then
    echo "FAIL: $page: $warnings"
    exit 1
  fi
  text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>&1)
  grep -q "^NAME" <<<"$text" || { echo "FAIL: $page has no NAME section"; exit 1; }
  grep -qE "^ +$name - " <<<"$text" || { echo "FAIL: $page: no '$name - ...' line"; exit 1; }
  echo "$page: OK"
done
