# shellcheck shell=bash
# prometheus-cpp: core and pull (on civetweb). A recipe of scripts/windows/build-deps.sh
# (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_prometheus_cpp() {
  extract prometheus-cpp
  cmake_dep prometheus-cpp "$work/src/prometheus-cpp" -DENABLE_PULL=ON -DENABLE_PUSH=OFF \
    -DENABLE_COMPRESSION=OFF -DENABLE_TESTING=OFF -DUSE_THIRDPARTY_LIBRARIES=OFF \
    -DGENERATE_PKGCONFIG=OFF
}
