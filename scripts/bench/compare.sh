#!/usr/bin/env bash
# The service's figures for this build next to an earlier one, in one run on one machine: the
# steady state at 500 processes (CPU % of one core, RSS) and the detection latency (p50/p99) by
# service.py, `wctmon analyze` of a 1,000-thread process by analyze.py, and status reads while
# captures and commits run by wctmon-status-bench (each build's own, in alternating rounds).
# Build the earlier version first, e.g.:
#   git worktree add /tmp/base REV && (cd /tmp/base && cmake --preset default &&
#     cmake --build --preset default)
# Usage: scripts/bench/compare.sh BASELINE_BUILD_DIR [BUILD_DIR] [--quick]
# --quick: fewer rounds (a look, not figures to quote). Needs root and a quiet machine: ~25 min.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $# -lt 1 ]]; then
  echo "usage: scripts/bench/compare.sh BASELINE_BUILD_DIR [BUILD_DIR] [--quick]" >&2
  exit 2
fi
baseline=$1
build=build/default
quick=0
for arg in "${@:2}"; do
  case $arg in
    --quick) quick=1 ;;
    *) build=$arg ;;
  esac
done
for dir in "$baseline" "$build"; do
  if [[ ! -x $dir/scripts/bench/wctmon-status-bench || ! -x $dir/tests/wctmon-fixture ]]; then
    echo "compare.sh: $dir is not a built tree (no wctmon-status-bench or wctmon-fixture)" >&2
    exit 2
  fi
done

rounds=5 runs=25 analyze_runs=9 status_rounds=3
if [[ $quick == 1 ]]; then rounds=1 runs=5 analyze_runs=3 status_rounds=1; fi

echo "== service: steady state at 500 processes x 40 threads, detection latency"
python3 scripts/bench/service.py --build "$build" --baseline "$baseline" --processes 500 \
  --threads 40 --seconds 30 --rounds "$rounds" --runs "$runs"

echo "== analyze: one process of 1,000 threads"
python3 scripts/bench/analyze.py --build "$build" --baseline "$baseline" --threads 1000 \
  --runs "$analyze_runs" --gdb-runs 0 --capture-runs 2

echo "== status reads while 20 captures and commits run"
for ((round = 1; round <= status_rounds; ++round)); do
  for dir in "$baseline" "$build"; do
    echo "-- round $round: $dir"
    "$dir/scripts/bench/wctmon-status-bench" "$dir/tests/wctmon-fixture" 20
  done
done
