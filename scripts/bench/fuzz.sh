#!/usr/bin/env bash
# Fuzzes every target of tests/fuzz (or those named) for SECONDS each (default 600), JOBS at a
# time (default: the number of cores), with clang's libFuzzer under ASan + UBSan (fuzz preset,
# build/fuzz). Prints one line per target: executions, executions per second, corpus size and
# crashes; a crash's input is kept in build/fuzz/tests/fuzz/artifacts (add it to the target's
# corpus, tests/fuzz/corpus/NAME, with the fix, so that every build replays it).
#   scripts/bench/fuzz.sh [--jobs N] [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=$(nproc)
if [[ ${1:-} == --jobs ]]; then
  jobs=$2
  shift 2
fi
seconds=${1:-600}
shift || true
scripts/bootstrap.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target wctmon_fuzz_targets >/dev/null
bin=build/fuzz/tests
logs=build/fuzz/tests/fuzz/logs
mkdir -p "$logs"
targets=("$@")
if ((${#targets[@]} == 0)); then
  for exe in "$bin"/wctmon_fuzz_*; do targets+=("${exe##*/wctmon_fuzz_}"); done
fi

run() {
  local name=$1
  local found=build/fuzz/tests/fuzz/corpus/$name
  mkdir -p "$found" build/fuzz/tests/fuzz/artifacts
  "$bin/wctmon_fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/tests/fuzz/artifacts/$name-" \
    "$found" "tests/fuzz/corpus/$name" >"$logs/$name.log" 2>&1 || true
}
export -f run
export bin logs seconds
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run {}'

printf '%-16s %14s %10s %8s %8s\n' target executions exec/s corpus crashes
failed=0
for name in "${targets[@]}"; do
  log=$logs/$name.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "build/fuzz/tests/fuzz/corpus/$name" "tests/fuzz/corpus/$name" -type f | wc -l)
  crashes=$(grep -c -E '^==[0-9]+==ERROR|runtime error:|invariant broken|^SUMMARY: libFuzzer' "$log" || true)
  printf '%-16s %14s %10s %8s %8s\n' "$name" "${execs:-?}" "${rate:-?}" "$corpus" "$crashes"
  [[ $crashes == 0 && -n $execs ]] || failed=1
done
exit "$failed"
