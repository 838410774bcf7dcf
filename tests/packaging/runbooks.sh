#!/usr/bin/env bash
# Checks that every alert of the rules file ($1) has a runbook_url, and that each one points at
# a heading of the README ($2) that the package installs: the anchor is the heading's GitHub
# slug (lower case, punctuation but - and _ dropped, spaces as -).
set -euo pipefail
rules=$1
readme=$2
prefix=file:///usr/share/doc/wctmon/README.md#
fail() { echo "FAIL: $*"; exit 1; }

mapfile -t alerts < <(sed -n 's/^ *- alert: *//p' "$rules")
mapfile -t urls < <(sed -n 's/^ *runbook_url: *//p' "$rules")
((${#alerts[@]} > 0)) || fail "no alerts in $rules"
((${#alerts[@]} == ${#urls[@]})) ||
  fail "${#alerts[@]} alerts but ${#urls[@]} runbook_url annotations in $rules"
slugs=$(sed -n 's/^#\{1,6\} \+//p' "$readme" | tr '[:upper:]' '[:lower:]' |
  sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g')
for i in "${!alerts[@]}"; do
  alert=${alerts[$i]}
  url=${urls[$i]}
  [[ $url == "$prefix"* ]] || fail "$alert: runbook_url $url is not under $prefix"
  anchor=${url#"$prefix"}
  [[ $anchor == "${alert,,}" ]] || fail "$alert: runbook_url points at #$anchor, not at its own section"
  grep -qx -- "$anchor" <<<"$slugs" || fail "$alert: no README heading for #$anchor"
done
echo "runbooks OK: ${#alerts[@]} alerts, each with its README section"
