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
  prometheus-cpp-dev        # the metrics endpoint (registry, text format; its civetweb serves it)
  prometheus                # promtool tests the alerting rules; a real server scrapes in a test
  prometheus-alertmanager   # the Alertmanager alert sink's test posts to a real one
  lintian                   # the Debian package is checked to policy (tests/packaging/lintian.sh)
  man-db file               # man -l renders the man pages; CPack's dbgsym split reads file(1)
  libgtest-dev
  libbenchmark-dev          # Google Benchmark: scripts/bench's micro-benchmarks (wctmon-match-bench)
  libre2-dev                # the targets' command-line expressions (RE2; gRPC's own dependency)
  libdw-dev libelf-dev      # libdw's pkg-config file requires libelf
  libsqlite3-dev libsystemd-dev
  libssl-dev                # HTTPS liveness probes (Asio's TLS) and the dumps' SHA-256
  openssl                   # the HTTPS probe's test serves with openssl s_server
  curl                      # the probes' end-to-end test reads the metrics
  gdb                       # scripts/bench/analyze.sh times gdb's backtraces; dumps are opened in it
  lldb                      # the dumps' tests open them in lldb too
  libc6-dbg                 # captures unwind through libc with its debug file, as on servers that have it
  util-linux                # setpriv and flock in the tests
  clang-format              # scripts/check-format.sh
  clang-14 libfuzzer-14-dev  # the fuzz targets (fuzz preset, scripts/bench/fuzz.sh)
  python3                   # tests and benchmarks
  python3-grpcio            # the API's tests drive it from an independent client
  python3-yaml              # wctctl's test reads its -o yaml back with a YAML reader
  zsh fish                  # the completion scripts' tests complete with them
  systemd                   # systemd-journald and journalctl: the alerts tests run a private one
  g++-mingw-w64-x86-64-posix libz-mingw-w64-dev  # the Windows cross-build (scripts/build-windows.sh)
  g++-mingw-w64-i686-posix  # the 32-bit fixture: a WOW64 target for the Windows tests
  wine64                    # the Windows tests run under it
  wine32:i386               # its 32-bit half: Wine runs the 32-bit fixture beside 64-bit wctmon
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
apt_install=("${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends --no-remove)

# Packages of another architecture (wine32:i386) need it added before the package lists are read.
foreign=()
for p in "${missing[@]}"; do
  if [[ $p == *:* ]]; then foreign+=("$p"); fi
done
for p in "${foreign[@]}"; do
  arch=${p##*:}
  if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    "${sudo_cmd[@]}" dpkg --add-architecture "$arch"
  fi
done

# A mirror may serve one architecture's index of a suite out of step with its signed Release
# (apt: "File has unexpected size"): apt keeps the other lists and says so; the install below
# tells whether it mattered.
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "bootstrap: some package lists could not be read (above); installing from the others" >&2
fi

# An i386 library must have the very version of its amd64 twin (Multi-Arch: same). When the
# mirror's i386 security index is unreadable, the amd64 twins' candidates (security updates) have
# no i386 match and apt refuses: install then from the release itself (-t CODENAME, complete for
# both architectures), and hold each library apt would otherwise remove at the version both
# architectures have, a downgrade if need be. Never removes a package (--no-remove).
install_matching_foreign() {
  local codename native arch pins=() clashing p v
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  native=$(dpkg --print-architecture)
  arch=${foreign[0]##*:}
  local args=(-t "$codename" --allow-downgrades "$@")
  # The libraries apt would remove, or says it cannot install, in a trial run.
  for _ in 1 2 3 4 5; do
    clashing=$(apt-get install -s -y --no-install-recommends "${args[@]}" "${pins[@]}" 2>&1 |
      sed -n -e 's/^Remv \([^ :]*\).*/\1/p' \
        -e "s/.*Depends: \([^ :]*\):$arch .*not going to be installed.*/\1/p" | sort -u || true)
    [[ -n $clashing ]] || break
    for p in $clashing; do
      v=$(apt-cache policy "$p:$arch" | sed -n 's/^ *Candidate: //p')
      [[ -n $v && $v != "(none)" ]] || continue
      pins+=("$p:$arch=$v")
      if dpkg-query -W "$p:$native" >/dev/null 2>&1; then pins+=("$p:$native=$v"); fi
    done
  done
  echo "bootstrap: installing from $codename${pins[*]:+, holding ${pins[*]}}" >&2
  "${apt_install[@]}" "${args[@]}" "${pins[@]}"
}

if ! "${apt_install[@]}" "${missing[@]}"; then
  if ((${#foreign[@]} == 0)); then exit 1; fi
  install_matching_foreign "${missing[@]}"
fi
