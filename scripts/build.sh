#!/usr/bin/env bash
# Installs the dependencies (once) and builds wctmon with the given CMake preset (default: default).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/bootstrap.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
