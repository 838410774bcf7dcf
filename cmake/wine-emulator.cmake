# Part of cmake/mingw-w64-x86_64.cmake: how tests and try_run() executables run on this host.
#
# Tests and try_run() executables run under Wine when it is installed, unless the caller names its own
# emulator (-DCMAKE_CROSSCOMPILING_EMULATOR="env;WINEPREFIX=...;wine64"): a cache entry, never a normal
# variable that would hide the caller's. Debian's wine64 package keeps its loader out of PATH.
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  find_program(WCTMON_WINE64 NAMES wine64 PATHS /usr/lib/wine)
  if(WCTMON_WINE64)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${WCTMON_WINE64}" CACHE STRING "Runs the target's programs on this host")
  endif()
endif()
