# shellcheck shell=bash
# civetweb, the HTTP server of prometheus-cpp's pull endpoint. A recipe of
# scripts/windows/build-deps.sh (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_civetweb() {
  extract civetweb
  # No TLS: the metrics endpoint is plain HTTP, and civetweb would load OpenSSL DLLs at run time.
  cmake_dep civetweb "$work/src/civetweb" -DCIVETWEB_BUILD_TESTING=OFF -DCIVETWEB_ENABLE_CXX=ON \
    -DCIVETWEB_ENABLE_SERVER_EXECUTABLE=OFF -DCIVETWEB_INSTALL_EXECUTABLE=OFF \
    -DCIVETWEB_ENABLE_SSL=OFF -DCIVETWEB_ENABLE_WEBSOCKETS=ON -DCIVETWEB_ENABLE_ASAN=OFF \
    -DCIVETWEB_ENABLE_IPV6=ON
}
