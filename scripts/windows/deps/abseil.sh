# shellcheck shell=bash
# abseil, for gRPC, in C++17 as gRPC builds. A recipe of scripts/windows/build-deps.sh (deps/lib.sh
# says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_abseil() {
  extract abseil
  cmake_dep abseil "$work/src/abseil" -DCMAKE_CXX_STANDARD=17 -DABSL_PROPAGATE_CXX_STD=ON \
    -DABSL_ENABLE_INSTALL=ON
}
