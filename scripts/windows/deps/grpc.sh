# shellcheck shell=bash
# gRPC: the secure libraries with grpc++_reflection and channelz, no plugin (the host's generates
# the code). A recipe of scripts/windows/build-deps.sh (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

build_grpc() {
  extract grpc
  local src="$work/src/grpc"
  # The third_party submodules are empty in Debian's tarball: every dependency is a package of this
  # prefix; these three exist so that configure does not try to download them.
  mkdir -p "$src/third_party/envoy-api" "$src/third_party/googleapis" "$src/third_party/xds"
  # Not built nor installed: the insecure variants (grpc_unsecure, grpc++_unsecure compile a third
  # of gRPC's sources again) and grpc_plugin_support (for writing protoc plugins; it needs
  # libprotoc).
  # The two quoted texts below are longer than 100 columns: their text is part of the cache key,
  # so they are wrapped only with an edit that builds every dependency again anyway.
  perl -0pi -e '$n += s/if\(gRPC_INSTALL\)\n  install\(TARGETS (grpc_unsecure|grpc\+\+_unsecure|grpc_plugin_support) EXPORT gRPCTargets\n.*?\nendif\(\)\n//sg;
    END { exit($n == 3 ? 0 : 1) }' "$src/CMakeLists.txt" ||
    die "gRPC's CMakeLists.txt changed: install rules"
  printf 'set_target_properties(grpc_unsecure grpc++_unsecure grpc_plugin_support PROPERTIES EXCLUDE_FROM_ALL ON)\n' \
    >>"$src/CMakeLists.txt"
  # Codegen stays on for the libraries made of generated code (grpc++_reflection, grpcpp_channelz):
  # cross-compiling, gRPC runs the host's protoc and grpc_cpp_plugin for them; no plugin is built.
  # Protobuf through CMake's FindProtobuf (as wctmon finds it): it gives the well-known .proto
  # directory that protoc needs; Protobuf_PROTOC_LIBRARY only satisfies gRPC's reference to
  # libprotoc (grpc_plugin_support).
  local plugin plugins=()
  for plugin in CPP CSHARP NODE OBJECTIVE_C PHP PYTHON RUBY; do
    plugins+=("-DgRPC_BUILD_GRPC_${plugin}_PLUGIN=OFF")
  done
  cmake_dep grpc "$src" -DWCTMON_WIN32_WINNT= -DCMAKE_CXX_STANDARD=17 \
    -DgRPC_BUILD_CODEGEN=ON "${plugins[@]}" -DgRPC_BUILD_TESTS=OFF -DgRPC_BUILD_CSHARP_EXT=OFF \
    -DgRPC_INSTALL=ON -DgRPC_ABSL_PROVIDER=package -DgRPC_CARES_PROVIDER=package \
    -DgRPC_PROTOBUF_PROVIDER=package -DgRPC_PROTOBUF_PACKAGE_TYPE=MODULE \
    -DProtobuf_PROTOC_LIBRARY="$stage/lib/libprotobuf.a" -DgRPC_RE2_PROVIDER=package \
    -DgRPC_SSL_PROVIDER=package -DgRPC_ZLIB_PROVIDER=package -DgRPC_BENCHMARK_PROVIDER=none \
    -DgRPC_USE_PROTO_LITE=OFF -Dre2_DIR="$stage/lib/cmake/re2"
  rm -f "$stage"/lib/pkgconfig/grpc*_unsecure.pc
}
