#!/usr/bin/env bash
# The main job: builds wctmon, starts the monitoring service on its default configuration
# (config/wctmon.json), starts the bundled demo process that deadlocks, and shows the service
# catching it: the incident with its chains and captured evidence, then its resolution once the
# demo is stopped. Ends with what to type next, as it works on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/default
config=config/wctmon.json
log=run-service.log
wctmon=$bin/service/wctmon

scripts/bootstrap.sh
echo "building wctmon in $bin (the first build takes a few minutes)..."
cmake --preset default >/dev/null
cmake --build --preset default --target wctmon wctmond wctmon-demo
echo

# The field of the incident (proto3 JSON on stdin) whose pid is $1: "id", "state", ...
incident_field() {
  python3 -c '
import json, sys
pid, field = int(sys.argv[1]), sys.argv[2]
data = json.load(sys.stdin)
for i in data.get("incidents", [data]):
    if i.get("pid") == pid:
        print(i.get(field, ""))
        break
' "$@"
}

"$wctmon" validate-config "$config"
"$wctmon" run --config "$config" 2>"$log" &
service=$!
demo=
cleanup() {
  # Waiting in a group with stderr closed keeps bash from announcing the killed job ("Killed"):
  # the announcement comes once the wait itself is over.
  if [[ -n $demo ]]; then
    kill -9 "$demo" 2>/dev/null || true
    { wait "$demo"; } 2>/dev/null || true
  fi
  kill -TERM "$service" 2>/dev/null || true
  { wait "$service"; } 2>/dev/null || true
}
trap cleanup EXIT

for _ in $(seq 100); do
  grep -q "service started" "$log" 2>/dev/null && break
  if ! kill -0 "$service" 2>/dev/null; then
    echo "the service did not start; its log ($log):" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "service started (pid $service), watching the processes $config selects; its log: $log"
sed -n 's/^[^ ]* [a-z]* \(alerts .*\)$/  \1/p' "$log"

"$bin/tests/wctmon-demo" >/dev/null &
demo=$!
echo "demo started (pid $demo): two threads take two mutexes in opposite order and deadlock"
echo "waiting for the service to catch it..."
id=
for _ in $(seq 150); do
  id=$("$wctmon" incidents --config "$config" --state open --json 2>/dev/null |
    incident_field "$demo" id) || true
  [[ -n $id ]] && break
  sleep 0.1
done
if [[ -z $id ]]; then
  echo "the service did not report the deadlock within 15 s; its log ($log):" >&2
  cat "$log" >&2
  exit 1
fi
echo
"$wctmon" incidents --config "$config" --state open --limit 1
echo
summary=$("$wctmon" analyze --pid "$demo" | head -n 1 || true)
echo "the same process checked once, without the service: wctmon analyze --pid $demo"
echo "  $summary"
echo

kill -9 "$demo"
{ wait "$demo"; } 2>/dev/null || true
echo "demo killed; the service resolves the incident at its next sample..."
state=
for _ in $(seq 50); do
  state=$("$wctmon" incidents --config "$config" --id "$id" --json | incident_field "$demo" state) ||
    true
  [[ $state == INCIDENT_STATE_RESOLVED ]] && break
  sleep 0.1
done
resolution=$("$wctmon" incidents --config "$config" --id "$id" --json |
  incident_field "$demo" resolution)
demo=
if [[ $state == INCIDENT_STATE_RESOLVED ]]; then
  echo "incident #$id resolved: $resolution"
else
  echo "incident #$id still open after 5 s (see $log)"
fi

echo
echo "next:"
hint() { printf '  %-72s # %s\n' "$1" "$2"; }
hint "$wctmon incidents --config $config --id $id" "the whole record: every frame and register"
hint "$wctmon incidents --config $config" "every incident recorded"
hint "$wctmon analyze --pid PID" "any process, once"
hint "cat $log" "what the service said"
# Only what works here: the service said where its alerts went.
if grep -q "alerts go to journald" "$log"; then
  hint "journalctl -t wctmon" "its alerts"
  hint "journalctl MESSAGE_ID=c2519431cd9d4f02bf613503ae34abfb" "every deadlock alert"
elif grep -q "alerts go to syslog" "$log"; then
  if [[ -r /var/log/syslog ]]; then
    hint "grep wctmon /var/log/syslog" "its alerts"
  else
    echo "  its alerts went to syslog (/dev/log): see where this machine's syslog daemon writes them"
  fi
elif grep -q "alerts are off" "$log"; then
  echo "  its alerts are off ($config: alerts.sink is none)"
else
  echo "  its alerts were not delivered: neither journald nor syslog runs here (the incidents are"
  echo "  all in the store, as above)"
fi
