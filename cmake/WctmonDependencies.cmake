# Every dependency comes from Debian packages (scripts/bootstrap.sh installs them); for Windows,
# cross-built from Debian's sources into a prefix (scripts/windows/build-deps.sh) that the
# toolchain file cmake/mingw-w64-x86_64.cmake searches, under the same package and target names.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
if(NOT WIN32)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
endif()

find_program(WCTMON_PROTOC protoc REQUIRED)
