# shellcheck shell=bash
# OpenSSL 3: libssl and libcrypto, for gRPC's TLS. A recipe of scripts/windows/build-deps.sh
# (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_openssl() {
  extract openssl
  local src="$work/src/openssl"
  # The directories compiled into libcrypto (openssl.cnf, engines, providers) are Windows paths,
  # OpenSSL's own defaults there, never this machine's build path (Configure would put a relative
  # --openssldir under the prefix): they are make variables, set on the command line. _WIN32_WINNT
  # as in the trial that ran.
  local dirs=("OPENSSLDIR=C:/Program Files/Common Files/SSL"
    "ENGINESDIR=C:/Program Files/OpenSSL/lib/engines-3"
    "MODULESDIR=C:/Program Files/OpenSSL/lib/ossl-modules")
  (cd "$src" && CC=gcc-posix ./Configure mingw64 "--cross-compile-prefix=$triple-" no-shared \
    no-tests "--prefix=$stage" --libdir=lib -D_WIN32_WINNT=0x0601 &&
    make -j "$jobs" build_libs "${dirs[@]}" && make install_dev "${dirs[@]}")
}
