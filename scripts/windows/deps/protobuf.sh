# shellcheck shell=bash
# protobuf's library; protoc is the host's. A recipe of scripts/windows/build-deps.sh (deps/lib.sh
# says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_protobuf() {
  extract protobuf
  # libprotobuf only: the host's protoc (same version) generates code for the Windows build.
  cmake_dep protobuf "$work/src/protobuf" -Dprotobuf_BUILD_TESTS=OFF \
    -Dprotobuf_BUILD_PROTOC_BINARIES=OFF -Dprotobuf_BUILD_LIBPROTOC=OFF \
    -Dprotobuf_BUILD_EXAMPLES=OFF -Dprotobuf_WITH_ZLIB=OFF -Dprotobuf_BUILD_SHARED_LIBS=OFF
}
