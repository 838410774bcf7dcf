#!/usr/bin/env bash
# Installs every Debian package wctmon needs to build and test. Idempotent: does nothing
# when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libdw-dev libelf-dev libsqlite3-dev libsystemd-dev
  gdb util-linux procps clang-format python3
  systemd  # systemd-journald and journalctl: the alerts tests run a private journald
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
