#!/usr/bin/env bash
# The main job: builds wctmon, starts the monitoring service on its default configuration
# (config/wctmon.json), starts the bundled demo process that deadlocks, and shows the service
# catching it: the incident with its chains and captured evidence, then its resolution once the
# demo is stopped. `wctmon analyze` on the same process shows the one-shot view.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh default >/dev/null
bin=build/default
config=config/wctmon.json

"$bin/service/wctmon" validate-config "$config"
"$bin/service/wctmon" run --config "$config" 2>run-service.log &
service=$!
demo=
cleanup() {
  [[ -n $demo ]] && kill -9 "$demo" 2>/dev/null || true
  kill -TERM "$service" 2>/dev/null || true
  wait "$service" 2>/dev/null || true
}
trap cleanup EXIT

"$bin/tests/wctmon-demo" >/dev/null &
demo=$!
echo "service pid $service; demo process pid $demo; waiting for the service to catch the deadlock..."
for _ in $(seq 100); do
  if "$bin/service/wctmon" incidents --config "$config" --state open | grep -q "pid $demo "; then break; fi
  sleep 0.1
done
echo
"$bin/service/wctmon" incidents --config "$config" --state open --limit 1
echo
"$bin/service/wctmon" analyze --pid "$demo" --brief || true
echo
kill -9 "$demo"
demo=
sleep 2
echo "after the demo was stopped:"
"$bin/service/wctmon" incidents --config "$config" --limit 1
echo
echo "service log: run-service.log; journal: journalctl -t wctmon"
