#!/usr/bin/env bash
# Runs every test on a fresh or warm machine: installs what is missing, checks formatting,
# builds and runs unit, integration and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/check-format.sh
scripts/build.sh default
ctest --preset default -j "$(nproc)"
