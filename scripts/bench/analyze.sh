#!/usr/bin/env bash
# Builds wctmon and runs the analysis benchmark (see analyze.py); extra arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh default >/dev/null
exec python3 scripts/bench/analyze.py --build build/default "$@"
