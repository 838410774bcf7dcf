#!/usr/bin/env bash
# systemd-analyze security on the unit file: its overall exposure must stay at or under the
# figure reached (README, "The systemd unit"). What is left is what the service needs: ptrace
# and reading other users' files (CAP_SYS_PTRACE, CAP_DAC_*), CAP_SETUID/SETGID (a JVM's attach
# as its user), CAP_NET_ADMIN (taskstats), the network (API, metrics, probes on loopback).
set -euo pipefail
unit=$1
max=${2:-3.0}
report=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1)
grep "✗" <<<"$report" || true
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$report")
[[ -n $exposure ]] || { echo "FAIL: no exposure figure in: $report"; exit 1; }
echo "exposure: $exposure (at most $max)"
awk -v e="$exposure" -v m="$max" 'BEGIN { exit !(e <= m) }' || { echo "FAIL: above $max"; exit 1; }
