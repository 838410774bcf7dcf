# Compiles through ccache when it is installed, so that a fresh clone (CI's) builds from the cache
# what an earlier build of the same sources compiled. The cache is ccache's own unless
# WCTMON_CCACHE_DIR names one (default /var/cache/wctmon/ccache, beside the Windows dependencies,
# when this user may write there). -DWCTMON_CCACHE=OFF compiles directly.
option(WCTMON_CCACHE "Compile through ccache when it is installed" ON)
find_program(WCTMON_CCACHE_PROGRAM ccache)
if(NOT WCTMON_CCACHE OR NOT WCTMON_CCACHE_PROGRAM)
  return()
endif()

set(_wctmon_ccache_default_dir "")
if(DEFINED ENV{WCTMON_CCACHE_DIR})
  set(_wctmon_ccache_default_dir "$ENV{WCTMON_CCACHE_DIR}")
else()
  # Only where this user may create it: a developer without root keeps ccache's default.
  execute_process(COMMAND sh -c "mkdir -p /var/cache/wctmon/ccache && test -w /var/cache/wctmon/ccache"
                  RESULT_VARIABLE _wctmon_ccache_unwritable OUTPUT_QUIET ERROR_QUIET)
  if(_wctmon_ccache_unwritable EQUAL 0)
    set(_wctmon_ccache_default_dir /var/cache/wctmon/ccache)
  endif()
endif()
set(WCTMON_CCACHE_DIR "${_wctmon_ccache_default_dir}" CACHE PATH
    "ccache's directory for wctmon's builds (empty: ccache's own)")

# One object serves every clone, wherever it is: paths inside objects (debug information, __FILE__)
# are relative to the source tree (./service/...), so ccache may take paths relative to it and
# leave the build directory out of its hash.
set(_wctmon_ccache_env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=true)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options("-ffile-prefix-map=${CMAKE_SOURCE_DIR}=.")
endif()
if(WCTMON_CCACHE_DIR)
  # Three builds (default, debug, windows) of one clone take about 1.2 GB of objects.
  list(APPEND _wctmon_ccache_env CCACHE_DIR=${WCTMON_CCACHE_DIR} CCACHE_MAXSIZE=10G)
endif()
set(_wctmon_launcher ${CMAKE_COMMAND} -E env ${_wctmon_ccache_env} ${WCTMON_CCACHE_PROGRAM})
set(CMAKE_C_COMPILER_LAUNCHER "${_wctmon_launcher}")
set(CMAKE_CXX_COMPILER_LAUNCHER "${_wctmon_launcher}")
