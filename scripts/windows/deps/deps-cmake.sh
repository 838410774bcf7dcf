# shellcheck shell=bash
# <prefix>/wctmon-deps.cmake, which finds every dependency in the prefix, and gRPC's plugin
# target pointing at the host's grpc_cpp_plugin. A recipe of scripts/windows/build-deps.sh
# (deps/lib.sh says how recipes are run).
# shellcheck disable=SC2154 # the driver's variables

# Some lines of the files written below are longer than 100 columns: their text is part of the
# cache key and of the prefix, so they are wrapped only with an edit that builds every dependency
# again anyway.
write_deps_cmake() {
  cat >"$stage/wctmon-deps.cmake" <<'EOF'
# Finds every Windows dependency of wctmon in this prefix (written by scripts/windows/build-deps.sh).
# Configure with -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake -DWCTMON_WINDOWS_PREFIX=<this directory>,
# then include() this file after project(), or copy the lines that are needed.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)                     # ZLIB::ZLIB, the mingw sysroot's (libz-mingw-w64-dev)
find_package(OpenSSL 3 REQUIRED)                # OpenSSL::SSL OpenSSL::Crypto
find_package(absl CONFIG REQUIRED)              # absl::*
find_package(Protobuf REQUIRED)                 # protobuf::libprotobuf; Protobuf_PROTOC_EXECUTABLE is the host's
find_package(gRPC CONFIG REQUIRED)              # gRPC::grpc++ gRPC::grpc++_reflection gRPC::grpc_cpp_plugin (host)
find_package(SQLite3 REQUIRED)                  # SQLite::SQLite3
find_package(prometheus-cpp CONFIG REQUIRED)    # prometheus-cpp::core prometheus-cpp::pull
find_package(GTest REQUIRED)                    # GTest::gtest GTest::gtest_main GTest::gmock GTest::gmock_main
find_package(Boost 1.74 REQUIRED)               # Boost::boost: Asio (headers only)
find_package(nlohmann_json 3.10 REQUIRED)       # nlohmann_json::nlohmann_json
find_package(fmt REQUIRED)                      # fmt::fmt = fmt::fmt-header-only (FMT_HEADER_ONLY=1)
find_package(spdlog REQUIRED)                   # spdlog::spdlog, header-only (FMT_HEADER_ONLY=1)
find_package(CLI11 CONFIG REQUIRED)             # CLI11::CLI11
find_program(WCTMON_PROTOC protoc REQUIRED)     # host protoc, same version as libprotobuf here
EOF
  # gRPC without codegen exports no plugin target: gRPC::grpc_cpp_plugin becomes the host's plugin
  # (same version), so that find_package(gRPC CONFIG) gives the project the target it uses on Linux.
  local grpc_cmake="$stage/lib/cmake/grpc"
  cat >"$grpc_cmake/gRPCHostPlugin.cmake" <<'EOF'
# gRPC::grpc_cpp_plugin is the host's (same gRPC version): it runs at build time (build-deps.sh).
if(NOT TARGET gRPC::grpc_cpp_plugin)
  find_program(WCTMON_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  add_executable(gRPC::grpc_cpp_plugin IMPORTED)
  set_target_properties(gRPC::grpc_cpp_plugin PROPERTIES IMPORTED_LOCATION "${WCTMON_GRPC_CPP_PLUGIN}")
endif()
EOF
  grep -q gRPCHostPlugin "$grpc_cmake/gRPCConfig.cmake" ||
    cat >>"$grpc_cmake/gRPCConfig.cmake" <<'EOF'
include(${CMAKE_CURRENT_LIST_DIR}/gRPCHostPlugin.cmake)
EOF
}
