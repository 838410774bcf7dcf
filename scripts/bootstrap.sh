#!/usr/bin/env bash
# Installs every Debian package wctmon needs to build and test. Idempotent: does nothing
# when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  ccache                    # a fresh clone compiles from the cache (cmake/WctmonCcache.cmake)
  git                       # scripts/check-format.sh and check-deps.sh list the tracked files
  libboost-dev nlohmann-json3-dev libcli11-dev
  libspdlog-dev libfmt-dev  # spdlog's CMake package finds fmt's
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc  # the API (wctmond's server, wctctl)
  prometheus-cpp-dev        # the metrics endpoint (registry and pull exposer)
  prometheus                # promtool tests the alerting rules; a real server scrapes in a test
  libgtest-dev
  libdw-dev libelf-dev      # libdw's pkg-config file requires libelf
  libsqlite3-dev libsystemd-dev
  gdb                       # scripts/bench/analyze.sh times gdb's backtraces; dumps are opened in it
  lldb                      # the dumps' tests open them in lldb too
  libc6-dbg                 # captures unwind through libc with its debug file, as on servers that have it
  util-linux                # setpriv and flock in the tests
  clang-format              # scripts/check-format.sh
  clang-14 libfuzzer-14-dev  # the fuzz targets (fuzz preset, scripts/bench/fuzz.sh)
  python3                   # tests and benchmarks
  python3-grpcio            # the API's tests drive it from an independent client
  systemd                   # systemd-journald and journalctl: the alerts tests run a private one
  g++-mingw-w64-x86-64-posix libz-mingw-w64-dev  # the Windows cross-build (scripts/build-windows.sh)
  wine64                    # the Windows tests run under it
  wixl msitools             # the MSI (scripts/windows/build-msi.sh) and its checks (msiinfo)
  rustc                     # the engine's tests run Rust programs (std::sync waits)
  openjdk-17-jdk-headless   # the engine's tests run Java programs (HotSpot's parked pools)
  golang-go                 # the engine's tests run Go programs (goroutines read from the runtime)
  postgresql                # the engine's tests run a PostgreSQL server (process titles)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
