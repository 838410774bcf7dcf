# shellcheck shell=bash
# c-ares, gRPC's resolver. A recipe of scripts/windows/build-deps.sh (deps/lib.sh says how recipes
# are run).
# shellcheck disable=SC2154 # the driver's variables

build_c_ares() {
  extract c-ares
  # Debian's backport of the CVE-2023-31130 fix uses INADDRSZ, which only <arpa/nameser.h> defines;
  # upstream's fix uses c-ares' own NS_INADDRSZ.
  sed -i 's/\bINADDRSZ\b/NS_INADDRSZ/g' "$work/src/c-ares/src/lib/inet_net_pton.c"
  cmake_dep c-ares "$work/src/c-ares" -DWCTMON_WIN32_WINNT= -DCARES_STATIC=ON -DCARES_SHARED=OFF \
    -DCARES_BUILD_TOOLS=OFF -DCARES_BUILD_TESTS=OFF -DCARES_BUILD_CONTAINER_TESTS=OFF
}
