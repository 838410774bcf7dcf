# shellcheck shell=bash
# The header-only libraries, copied from the host's packages: Boost (Asio and the libraries it
# includes), nlohmann/json, spdlog + fmt (header-only) and CLI11, each with a CMake package.
# A recipe of scripts/windows/build-deps.sh (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

# Boost: the directories of every Boost library that Asio's public headers include when compiled for
# this target (found by the compiler itself), plus the top-level headers; the host's /usr/include is
# never exposed.
copy_boost() {
  local tu="$work/build/boost/asio_all.cpp" deps="$work/build/boost/asio_all.d"
  mkdir -p "$work/build/boost" "$stage/include/boost"
  {
    local h
    for h in /usr/include/boost/asio.hpp /usr/include/boost/asio/*.hpp \
      /usr/include/boost/asio/ssl/*.hpp; do
      printf '#include <%s>\n' "${h#/usr/include/}"
    done
  } >"$tu"
  mkdir -p "$work/build/boost/only"
  ln -sfn /usr/include/boost "$work/build/boost/only/boost"
  "$triple-g++-posix" -std=c++20 -D_WIN32_WINNT=0x0A00 -I"$work/build/boost/only" \
    -I"$stage/include" -M -MG "$tu" >"$deps"
  local dirs
  mapfile -t dirs < <(grep -o '/only/boost/[^ ]*/[^ ]*' "$deps" | sed 's|^/only/boost/||' |
    awk -F/ '{ print ($1 == "numeric") ? $1 "/" $2 : $1 }' | sort -u)
  echo "Boost libraries copied: ${dirs[*]}"
  (cd /usr/include/boost && cp -a --parents "${dirs[@]}" "$stage/include/boost/" &&
    find . -maxdepth 1 -type f -exec cp -a {} "$stage/include/boost/" \;)
}

# A CMake package for a header-only library (name, version, then `target|definitions` pairs).
write_header_only_package() {
  local name=$1 version=$2
  shift 2
  local dir="$stage/lib/cmake/$name"
  mkdir -p "$dir"
  {
    echo "# Header-only $name $version in this prefix (written by scripts/windows/build-deps.sh)."
    # shellcheck disable=SC2016 # CMake's ${...}, written as is
    echo 'get_filename_component(_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)'
    local spec target defs
    for spec in "$@"; do
      target="${spec%%|*}"
      defs="${spec#*|}"
      echo "if(NOT TARGET $target)"
      echo "  add_library($target INTERFACE IMPORTED)"
      # One line, continued at column 0: spaces there would be part of it.
      echo "  set_target_properties($target PROPERTIES \
INTERFACE_INCLUDE_DIRECTORIES \"\${_prefix}/include\""
      [[ -z $defs ]] || echo "    INTERFACE_COMPILE_DEFINITIONS \"$defs\""
      echo "  )"
      echo "endif()"
    done
  } >"$dir/${name}Config.cmake"
  cat >"$dir/${name}ConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
}

# The upstream part of an installed host package's version (no epoch, no Debian revision).
upstream_version() {
  local version="${host_version[$1]}"
  version="${version#*:}"
  printf '%s' "${version%%[+~-]*}"
}

build_headers() {
  copy_boost
  mkdir -p "$stage/include"
  cp -a /usr/include/nlohmann /usr/include/spdlog /usr/include/fmt /usr/include/CLI \
    "$stage/include/"
  # spdlog and fmt header-only: FMT_HEADER_ONLY pulls fmt's implementation into the headers;
  # Debian's spdlog headers define SPDLOG_FMT_EXTERNAL (tweakme.h) and without SPDLOG_COMPILED_LIB
  # they are header-only too.
  write_header_only_package fmt "$(upstream_version libfmt-dev)" \
    "fmt::fmt-header-only|FMT_HEADER_ONLY=1" "fmt::fmt|FMT_HEADER_ONLY=1"
  write_header_only_package spdlog "$(upstream_version libspdlog-dev)" \
    "spdlog::spdlog_header_only|FMT_HEADER_ONLY=1;SPDLOG_FMT_EXTERNAL" \
    "spdlog::spdlog|FMT_HEADER_ONLY=1;SPDLOG_FMT_EXTERNAL"
  write_header_only_package nlohmann_json "$(upstream_version nlohmann-json3-dev)" \
    "nlohmann_json::nlohmann_json|"
  write_header_only_package CLI11 "$(upstream_version libcli11-dev)" "CLI11::CLI11|"
}
