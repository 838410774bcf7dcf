#!/usr/bin/env bash
# Runs every test on a fresh or warm machine: installs what is missing, checks formatting and
# the direction of includes (scripts/check-deps.sh), builds, proves the lock rules with Clang's
# thread-safety analysis (scripts/check-thread-safety.sh), runs unit, integration and
# end-to-end tests (default preset), then the Windows build, cross-compiled and tested under
# wine64 (scripts/build-windows.sh; WCTMON_SKIP_WINDOWS=1 skips it for a quick local run), then
# the unit and integration tests again under AddressSanitizer + UBSan (debug preset,
# build/debug), building only what those need; last, every fuzz target for WCTMON_FUZZ_SECONDS
# (30 by default) with clang's libFuzzer (fuzz preset, build/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/check-format.sh
scripts/check-deps.sh
scripts/build.sh default
scripts/check-thread-safety.sh build/default
ctest --preset default -j "$(nproc)"

if [[ ${WCTMON_SKIP_WINDOWS:-0} == 1 ]]; then
  echo "test.sh: the Windows build and its tests are skipped (WCTMON_SKIP_WINDOWS=1)"
else
  echo "test.sh: the Windows build, cross-compiled, and its tests under wine64 (build/windows)"
  scripts/build-windows.sh
fi

echo "test.sh: unit and integration tests under ASan + UBSan (debug preset, build/debug)"
cmake --preset debug >/dev/null
cmake --build --preset debug --target wctmon_unit_integration_tests
labels='^(unit|integration)$'
# An executable missing from wctmon_unit_integration_tests would go unchecked here while
# passing above: every unit/integration test of the default preset must be in the debug one.
names() { ctest --preset "$1" -N -L "$labels" | sed -n 's/^ *Test *#[0-9]*: //p' | sort; }
missing=$(comm -23 <(names default) <(names debug))
if [[ -n $missing ]]; then
  echo "test.sh: not built in the debug preset (add the executable to" \
    "wctmon_unit_integration_tests in tests/CMakeLists.txt):" >&2
  echo "$missing" >&2
  exit 1
fi
# UBSan reports and carries on by default: a report must fail the test.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --preset debug -L "$labels" -j "$(nproc)"

seconds=${WCTMON_FUZZ_SECONDS:-30}
echo "test.sh: every fuzz target for $seconds s (fuzz preset: clang + libFuzzer, ASan + UBSan, build/fuzz)"
cmake --preset fuzz -DWCTMON_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build --preset fuzz --target wctmon_fuzz_targets
ctest --preset fuzz -L fuzz -j "$(nproc)"
