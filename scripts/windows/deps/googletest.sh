# shellcheck shell=bash
# GoogleTest and GoogleMock, from the host's /usr/src/googletest. A recipe of
# scripts/windows/build-deps.sh (deps/lib.sh says how recipes are run).

build_googletest() {
  cmake_dep googletest /usr/src/googletest -DBUILD_GMOCK=ON -DINSTALL_GTEST=ON
}
