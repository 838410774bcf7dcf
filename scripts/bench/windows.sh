#!/usr/bin/env bash
# Figures of the Windows build (build/windows, scripts/build-windows.sh), under wine64:
#   1. the size of wctmon.exe, wctctl.exe and wctmond.exe (as built, and stripped);
#   2. start-up: `wctmon.exe validate-config config/wctmon.json` under Wine, next to the native
#      `wctmon validate-config` (build/default), median and min-max of --runs runs each,
#      interleaved, after one warm-up run, against one persistent wineserver;
#   3. the stop time per thread of a capture under Wine (SuspendThread -> GetThreadContext ->
#      ResumeThread, bare and the inspector's whole stop), 200 stops per round, --rounds rounds.
#
# Usage: scripts/bench/windows.sh [--runs N] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/windows/wine-session.sh
source scripts/windows/wine-session.sh

runs=20
rounds=3
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: scripts/bench/windows.sh [--runs N] [--rounds N]" >&2; exit 2 ;;
  esac
done

bin=build/windows/bin
native=build/default/service/wctmon
wine=${WINE:-/usr/lib/wine/wine64}
for f in "$bin/wctmon.exe" "$bin/wctctl.exe" "$bin/wctmond.exe" "$native"; do
  [[ -x $f ]] || { echo "windows.sh: $f is missing (scripts/build-windows.sh, scripts/build.sh)" >&2; exit 1; }
done
export WINEPREFIX=${WINEPREFIX:-$PWD/build/windows/wineprefix} WINEDEBUG=-all

echo "1. sizes (MiB; static executables, debug information included / stripped)"
for exe in wctmon.exe wctctl.exe wctmond.exe; do
  stripped=$(mktemp)
  x86_64-w64-mingw32-strip -o "$stripped" "$bin/$exe"
  awk -v name="$exe" -v a="$(stat -c %s "$bin/$exe")" -v b="$(stat -c %s "$stripped")" \
    'BEGIN { printf "   %-12s %7.1f / %5.1f\n", name, a / 1048576, b / 1048576 }'
  rm -f "$stripped"
done

echo "2. start-up: validate-config config/wctmon.json, $runs runs each, interleaved (ms)"
# The same file with a state directory that is absolute on Windows (a drive letter).
config_copy=$(mktemp --suffix=.json)
trap 'rm -f "$config_copy"; wine_session_stop "$wine"' EXIT
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["state_dir"] = "C:\\ProgramData\\wctmon"; json.dump(c, open(sys.argv[2], "w"))' \
  config/wctmon.json "$config_copy"
config_win="Z:$(tr / '\\' <<<"$config_copy")"
# One persistent wineserver with the prefix's services up, as the tests run: what is timed is the
# program's start, not Wine's.
wine_session_start "$wine"
"$wine" "$bin/wctmon.exe" validate-config "$config_win" >/dev/null  # one warm-up run
python3 - "$runs" "$wine" "$bin/wctmon.exe" "$config_win" "$native" config/wctmon.json <<'PY'
import statistics, subprocess, sys, time
runs, wine, exe, config_win, native, config = int(sys.argv[1]), *sys.argv[2:]
times = {"wctmon.exe under Wine": [], "wctmon (Linux)": []}
for _ in range(runs):
    for name, cmd in (("wctmon.exe under Wine", [wine, exe, "validate-config", config_win]),
                      ("wctmon (Linux)", [native, "validate-config", config])):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times[name].append((time.perf_counter() - t0) * 1000)
for name, v in times.items():
    print(f"   {name:<22} median {statistics.median(v):7.1f}  ({min(v):.1f}-{max(v):.1f})")
PY

echo "3. stop time per thread under Wine, $rounds rounds of 200 stops"
for ((i = 0; i < rounds; ++i)); do
  "$wine" "$bin/wctmon_windows_tests.exe" --gtest_filter='*StopTimeIsMeasured' 2>&1 |
    grep -o 'stop time over.*' | sed 's/^/   /'
done
