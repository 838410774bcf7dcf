#!/usr/bin/env bash
# Runs every test on a fresh or warm machine: installs what is missing, checks formatting,
# builds and runs unit, integration and end-to-end tests (default preset), then the unit and
# integration tests again under AddressSanitizer + UBSan (debug preset, build/debug), building
# only what those need.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/check-format.sh
scripts/build.sh default
ctest --preset default -j "$(nproc)"

echo "test.sh: unit and integration tests under ASan + UBSan (debug preset, build/debug)"
cmake --preset debug >/dev/null
cmake --build --preset debug --target wctmon_unit_integration_tests
labels='^(unit|integration)$'
# An executable missing from wctmon_unit_integration_tests would go unchecked here while
# passing above: both presets must list the same tests.
count() { ctest --preset "$1" -N -L "$labels" | sed -n 's/^Total Tests: //p'; }
if [[ $(count default) != "$(count debug)" ]]; then
  echo "test.sh: the debug preset has $(count debug) unit/integration tests, the default one" \
    "$(count default): add the missing executable to wctmon_unit_integration_tests" \
    "(tests/CMakeLists.txt)" >&2
  exit 1
fi
# UBSan reports and carries on by default: a report must fail the test.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --preset debug -L "$labels" -j "$(nproc)"
