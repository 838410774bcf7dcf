#!/usr/bin/env bash
# scripts/check-deps.sh passes on the repository ($1) and fails, saying why, where it has nothing
# to check (a copy of the scripts outside a git work tree): a check that checks nothing is no pass.
set -euo pipefail
repo=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$(bash "$repo/scripts/check-deps.sh" 2>&1) || fail "on the repository: $out"
grep -q "every include of [1-9][0-9]* files" <<<"$out" || fail "no count of files checked: $out"
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$repo/scripts" "$copy/"
if out=$(cd "$copy" && GIT_CEILING_DIRECTORIES=$copy bash scripts/check-deps.sh 2>&1); then
  fail "passed with nothing to check: $out"
fi
grep -q "cannot list the sources" <<<"$out" || fail "no reason given: $out"
echo "check-deps: passes on the repository, fails with nothing to check"
