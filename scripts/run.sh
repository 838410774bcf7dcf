#!/usr/bin/env bash
# The main job: builds wctmon, starts the bundled demo process that deadlocks and shows what
# `wctmon analyze` finds in it (chains, the cycle, captured registers and stacks).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh default >/dev/null
bin=build/default

"$bin/tests/wctmon-demo" >/dev/null &
demo=$!
trap 'kill -9 "$demo" 2>/dev/null || true' EXIT
echo "demo process: pid $demo; waiting for it to deadlock..."
for _ in $(seq 100); do
  if "$bin/service/wctmon" analyze --pid "$demo" >/dev/null 2>&1; then sleep 0.1; else break; fi
done
set +e
"$bin/service/wctmon" analyze --pid "$demo" --capture "$@"
status=$?
set -e
echo "wctmon exit code: $status (3 = deadlock found)"
[[ $status -eq 3 ]]
