# CMake toolchain: Windows x86-64 built on Debian with mingw-w64 (posix threads), fully static.
#
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake -DWCTMON_WINDOWS_PREFIX=<deps prefix> ...
#
# WCTMON_WINDOWS_PREFIX (cache variable, or the environment variable of that name) is the prefix that
# scripts/windows/build-deps.sh prints: libraries, headers and CMake packages are searched only there and in
# the mingw sysroot; programs (protoc, grpc_cpp_plugin) only on the host, since they run at build time.

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(_wctmon_triple x86_64-w64-mingw32)
# The -posix compilers use winpthreads: std::thread, std::mutex and gRPC's threads need them.
set(CMAKE_C_COMPILER ${_wctmon_triple}-gcc-posix)
set(CMAKE_CXX_COMPILER ${_wctmon_triple}-g++-posix)
set(CMAKE_RC_COMPILER ${_wctmon_triple}-windres)

if(NOT DEFINED WCTMON_WINDOWS_PREFIX AND DEFINED ENV{WCTMON_WINDOWS_PREFIX})
  set(WCTMON_WINDOWS_PREFIX "$ENV{WCTMON_WINDOWS_PREFIX}")
endif()
set(WCTMON_WINDOWS_PREFIX "${WCTMON_WINDOWS_PREFIX}" CACHE PATH
    "Prefix of the Windows dependencies (scripts/windows/build-deps.sh prints it)")
# try_compile() projects read the toolchain again: hand them the prefix too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES WCTMON_WINDOWS_PREFIX WCTMON_WIN32_WINNT)

set(CMAKE_FIND_ROOT_PATH /usr/${_wctmon_triple})
if(WCTMON_WINDOWS_PREFIX)
  list(APPEND CMAKE_FIND_ROOT_PATH "${WCTMON_WINDOWS_PREFIX}")
endif()
# Libraries, headers and packages only from the target roots (never the host's /usr/include or Linux
# libraries); programs only from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_FIND_USE_PACKAGE_REGISTRY OFF)
set(CMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY OFF)

# pkg-config (FindPkgConfig) sees the target's .pc files only, never the host's.
set(_wctmon_pkg_config_libdir "/usr/${_wctmon_triple}/lib/pkgconfig")
if(WCTMON_WINDOWS_PREFIX)
  set(_wctmon_pkg_config_libdir "${WCTMON_WINDOWS_PREFIX}/lib/pkgconfig:${_wctmon_pkg_config_libdir}")
endif()
set(ENV{PKG_CONFIG_LIBDIR} "${_wctmon_pkg_config_libdir}")
set(ENV{PKG_CONFIG_PATH} "")
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# Windows 10 API level for the project. WCT needs Vista (0x0600); the dependencies that define their own
# level keep it (gRPC and c-ares 0x0600, OpenSSL 0x0601): build-deps.sh passes -DWCTMON_WIN32_WINNT= to them.
if(NOT DEFINED WCTMON_WIN32_WINNT)
  set(WCTMON_WIN32_WINNT 0x0A00)
endif()
set(_wctmon_defines "")
if(WCTMON_WIN32_WINNT)
  set(_wctmon_defines "-D_WIN32_WINNT=${WCTMON_WIN32_WINNT} -DWINVER=${WCTMON_WIN32_WINNT}")
endif()
# -mbig-obj: large translation units (generated protobuf code, gRPC) exceed COFF's 32k section limit.
set(CMAKE_C_FLAGS_INIT "${_wctmon_defines}")
set(CMAKE_CXX_FLAGS_INIT "${_wctmon_defines} -Wa,-mbig-obj")

# Static executables: libstdc++, libgcc and winpthread inside the .exe, nothing to ship beside it.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")

# The sysroot has libz.dll.a beside libz.a, and CMake prefers import libraries on Windows: ask the find
# modules for static libraries, or the program would need zlib1.dll.
set(ZLIB_USE_STATIC_LIBS ON)
set(OPENSSL_USE_STATIC_LIBS ON)

# Static link order: OpenSSL's libcrypto (and c-ares, gRPC, Asio) reference ws2_32, mswsock, crypt32, bcrypt
# and iphlpapi, which must come after them on the command line (else: undefined WspiapiGetAddrInfo,
# gai_strerrorA); CMake puts the standard libraries last of all. The tail keeps CMake's defaults for Windows-GNU.
set(_wctmon_system_libs
    "-lws2_32 -lmswsock -lcrypt32 -lbcrypt -liphlpapi -luser32 -ladvapi32"
    "-lkernel32 -lgdi32 -lwinspool -lshell32 -lole32 -loleaut32 -luuid -lcomdlg32")
string(JOIN " " _wctmon_system_libs ${_wctmon_system_libs})
set(CMAKE_C_STANDARD_LIBRARIES "${_wctmon_system_libs}" CACHE STRING "Libraries linked last into every C target")
set(CMAKE_CXX_STANDARD_LIBRARIES "${_wctmon_system_libs}" CACHE STRING "Libraries linked last into every C++ target")

# How the target's programs run on this host (Wine): its own file, outside the dependencies' cache key.
include("${CMAKE_CURRENT_LIST_DIR}/wine-emulator.cmake")
