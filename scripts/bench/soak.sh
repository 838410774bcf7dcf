#!/usr/bin/env bash
# The one-hour churn soak of the service (scripts/bench/soak.py; not part of the test command):
#   scripts/bench/soak.sh [--minutes 60] [--rate 2000] [--deadlock-every 180] [--out build/soak]
# Builds the default preset, installs python3-matplotlib for the plot when it is missing, then
# runs the soak as root (the service samples every process of the system it is told to).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/bootstrap.sh
if ! dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null | grep -q "install ok installed"; then
  apt-get update -q && apt-get install -y -q --no-install-recommends python3-matplotlib
fi
cmake --preset default >/dev/null
cmake --build --preset default --target wctmon wctmond wctctl wctmon-fixture >/dev/null
# Debian's Python: its grpcio and matplotlib.
exec /usr/bin/python3 scripts/bench/soak.py "$@"
