#!/usr/bin/env bash
# Cross-builds wctmon for x86-64 Windows with mingw-w64 (build/windows: wctmon.exe, wctmond.exe,
# wctctl.exe and the Windows tests) and runs those tests under wine64. The Windows dependencies
# are built once into a cache outside the repository (scripts/windows/build-deps.sh).
#
#   scripts/build-windows.sh            build, then run the tests under Wine
#   scripts/build-windows.sh --no-test  build only
#
# The interop test also runs the native Linux build (build/default: scripts/build.sh makes it).
# Environment: WCTMON_WINDOWS_DEPS_CACHE (where the dependencies are cached), WINE (default
# /usr/lib/wine/wine64).
set -euo pipefail
cd "$(dirname "$0")/.."

run_tests=1
case "${1:-}" in
  --no-test) run_tests=0 ;;
  "") ;;
  *)
    echo "usage: scripts/build-windows.sh [--no-test]" >&2
    exit 2
    ;;
esac

prefix=$(scripts/windows/build-deps.sh | tail -1)
build=build/windows
wine=${WINE:-/usr/lib/wine/wine64}
wineprefix="$PWD/$build/wineprefix"
# Every test program runs under Wine in one prefix of the build's own, quietly.
emulator="env;WINEPREFIX=$wineprefix;WINEDEBUG=-all;$wine"

# Another prefix (new dependency versions) invalidates what an earlier configure found in the old
# one: configure afresh then. The prefix of the last configure that succeeded is kept beside it.
fresh=()
if [[ -f $build/CMakeCache.txt && $(cat "$build/deps-prefix" 2>/dev/null) != "$prefix" ]]; then
  echo "build-windows.sh: the dependencies are now $prefix: configuring $build afresh"
  fresh=(--fresh)
fi
cmake "${fresh[@]}" -S . -B "$build" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake \
  -DWCTMON_WINDOWS_PREFIX="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWCTMON_WERROR=ON \
  -DCMAKE_CROSSCOMPILING_EMULATOR="$emulator" \
  -DWCTMON_LINUX_BUILD="$PWD/build/default" >/dev/null
printf '%s\n' "$prefix" >"$build/deps-prefix"
cmake --build "$build"

((run_tests)) || exit 0
export WINEPREFIX=$wineprefix WINEDEBUG=-all
# One wineserver for every test (scripts/windows/wine-session.sh).
# shellcheck source=scripts/windows/wine-session.sh
source scripts/windows/wine-session.sh
wine_session_start "$wine"
status=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" || status=$?
wine_session_stop "$wine"
exit "$status"
