# The tests of the Windows build, cross-compiled and run under Wine (CMAKE_CROSSCOMPILING_EMULATOR,
# set by scripts/build-windows.sh) or natively on Windows: the platform layer against a scripted
# WCT and against real processes that deadlock, and the platform-neutral core and model.
find_package(GTest REQUIRED)
include(GoogleTest)

# Programs that really deadlock: two threads on two critical sections, or on two mutex handles.
# DWARF 4: Wine's DbgHelp does not read gcc 12's default DWARF 5, and the stacks name these
# functions.
add_executable(wctmon-wct-fixture fixtures/windows/wct_fixture.cpp)
if(NOT MSVC)
  target_compile_options(wctmon-wct-fixture PRIVATE -O1 -gdwarf-4 -fno-omit-frame-pointer)
endif()
target_link_libraries(wctmon-wct-fixture PRIVATE wctmon_warnings)

# The same fixture as a 32-bit program, a WOW64 target of the 64-bit capture and dump: compiled
# apart by mingw-w64's i686 compiler (plain Win32, static, no dependency of the 64-bit build).
set(WCTMON_WOW64_FIXTURE "")
if(NOT MSVC)
  find_program(WCTMON_I686_CXX NAMES i686-w64-mingw32-g++-posix i686-w64-mingw32-g++
               DOC "mingw-w64's i686 C++ compiler, for the 32-bit fixture (scripts/bootstrap.sh)")
  if(NOT WCTMON_I686_CXX)
    message(FATAL_ERROR "no i686-w64-mingw32-g++: scripts/bootstrap.sh installs "
                        "g++-mingw-w64-i686-posix, which builds the 32-bit (WOW64) fixture")
  endif()
  set(WCTMON_WOW64_FIXTURE ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/wctmon-wct-fixture32.exe)
  add_custom_command(
    OUTPUT ${WCTMON_WOW64_FIXTURE}
    COMMAND ${WCTMON_I686_CXX} -std=c++20 -O1 -gdwarf-4 -fno-omit-frame-pointer -Wall -Wextra
            -Werror -static -o ${WCTMON_WOW64_FIXTURE}
            ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/windows/wct_fixture.cpp
    DEPENDS fixtures/windows/wct_fixture.cpp
    COMMENT "Building the 32-bit fixture wctmon-wct-fixture32.exe (i686)"
    VERBATIM)
  add_custom_target(wctmon-wct-fixture32 ALL DEPENDS ${WCTMON_WOW64_FIXTURE})
endif()

# The SCM as the service's tests ask it where Wine's sc.exe cannot (control, polling with
# timings, the configuration of failure actions and privileges).
add_executable(wctmon-scm-control fixtures/windows/scm_control.cpp)
if(NOT MSVC)
  target_link_options(wctmon-scm-control PRIVATE -municode)
endif()
target_link_libraries(wctmon-scm-control PRIVATE wctmon_warnings advapi32)

# A service that gets stuck starting (START_PENDING once, then a critical section held by
# another of its threads until the test releases it) and a program whose window thread stops
# pumping while it waits on an event: what the pending-service and hung-window tests watch.
add_executable(wctmon-pending-service fixtures/windows/pending_service.cpp)
if(NOT MSVC)
  target_link_options(wctmon-pending-service PRIVATE -municode)
endif()
target_link_libraries(wctmon-pending-service PRIVATE wctmon_warnings advapi32)
add_executable(wctmon-hung-window fixtures/windows/hung_window.cpp)
target_link_libraries(wctmon-hung-window PRIVATE wctmon_warnings user32)

# A capturer that dies mid-capture (an unhandled exception, an abort, an exit): the last-chance
# handlers must resume every thread it held suspended.
add_executable(wctmon-capture-crash platform/windows/capture_crash_main.cpp)
target_link_libraries(wctmon-capture-crash PRIVATE wctmon_platform wctmon_warnings)

# The WCT source on a scripted WCT and on the system's, the session contract (tests/contract) on
# the scripted WCT, the thread inspector, the hot-spot sampler and the process catalog on the
# fixture (found beside the test); the SCM status source and the window prober with their
# trackers on the fixtures above.
add_executable(wctmon_windows_tests
  platform/windows/hot_spot_sampler_test.cpp
  platform/windows/hung_window_test.cpp
  platform/windows/pending_service_test.cpp
  platform/windows/process_catalog_test.cpp
  platform/windows/session_contract_test.cpp
  platform/windows/thread_inspector_test.cpp
  platform/windows/wct_source_test.cpp)
target_include_directories(wctmon_windows_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(wctmon_windows_tests PRIVATE wctmon_platform GTest::gtest_main
                      wctmon_warnings)
add_dependencies(wctmon_windows_tests wctmon-wct-fixture wctmon-capture-crash
                 wctmon-pending-service wctmon-hung-window)
# The capture of a 32-bit process's threads (Wow64SuspendThread, Wow64GetThreadContext).
if(WCTMON_WOW64_FIXTURE)
  target_sources(wctmon_windows_tests PRIVATE platform/windows/wow64_capture_test.cpp)
  add_dependencies(wctmon_windows_tests wctmon-wct-fixture32)
endif()
# Discovered when ctest runs, not at build time: under Wine the first start of a prefix is slow.
gtest_discover_tests(wctmon_windows_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120
                     PROPERTIES LABELS windows TIMEOUT 120)

# The service's Windows side: the SCM status and control handler's decisions, and the Event Log
# sink against the message table of wctmond.exe (built beside the test).
add_executable(wctmon_windows_service_tests
  platform/windows/event_log_test.cpp
  platform/windows/scm_status_test.cpp
  platform/windows/service_config_test.cpp)
target_include_directories(wctmon_windows_service_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(wctmon_windows_service_tests PRIVATE wctmon_platform_service
                      GTest::gtest_main wctmon_warnings)
add_dependencies(wctmon_windows_service_tests wctmond)
gtest_discover_tests(wctmon_windows_service_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120
                     PROPERTIES LABELS windows TIMEOUT 120)

# The platform-neutral core and model, built by the Windows compiler and run on Windows, and the
# session contract on the fake source.
add_executable(wctmon_windows_core_tests
  core/alert_rate_limiter_test.cpp
  core/analyzer_test.cpp
  core/cmdline_pattern_test.cpp
  core/glob_test.cpp
  core/hung_window_tracker_test.cpp
  core/incident_tracker_test.cpp
  core/listen_address_test.cpp
  core/pending_service_tracker_test.cpp
  core/session_contract_test.cpp
  core/strict_json_test.cpp
  core/wait_graph_test.cpp
  model/enum_names_test.cpp
  model/format_test.cpp)
target_include_directories(wctmon_windows_core_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(wctmon_windows_core_tests PRIVATE wctmon_core nlohmann_json::nlohmann_json
                      GTest::gtest_main wctmon_warnings)
gtest_discover_tests(wctmon_windows_core_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120
                     PROPERTIES LABELS windows TIMEOUT 120)

# The metrics' figures on Windows: the service's own process (GetProcessTimes,
# GetProcessMemoryInfo, GetProcessHandleCount) and each target's.
add_executable(wctmon_windows_api_tests api/process_figures_test.cpp api/target_figures_test.cpp)
target_include_directories(wctmon_windows_api_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(wctmon_windows_api_tests PRIVATE wctmon_metrics GTest::gtest_main
                      wctmon_warnings)
gtest_discover_tests(wctmon_windows_api_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120
                     PROPERTIES LABELS windows TIMEOUT 120)

# The HTTPS clients' trust on Windows: the certificate store ROOT.
add_executable(wctmon_windows_runtime_tests runtime/system_cas_windows_test.cpp)
target_include_directories(wctmon_windows_runtime_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(wctmon_windows_runtime_tests PRIVATE wctmon_http OpenSSL::SSL
                      OpenSSL::Crypto crypt32 GTest::gtest_main wctmon_warnings)
gtest_discover_tests(wctmon_windows_runtime_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120
                     PROPERTIES LABELS windows TIMEOUT 120)

# The Windows executables under Wine next to the native Linux ones (validate-config alike,
# analyze where WCT is missing, wctctl.exe to the Linux service and the Linux wctctl to
# wctmond.exe): needs the Linux build (WCTMON_LINUX_BUILD, set by scripts/build-windows.sh).
set(WCTMON_LINUX_BUILD "" CACHE PATH "A native Linux build of wctmon, for the interop test")
if(WCTMON_LINUX_BUILD)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  add_test(NAME windows.interop
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/windows_interop.py
                   ${CMAKE_BINARY_DIR}/bin ${WCTMON_LINUX_BUILD} ${PROJECT_SOURCE_DIR})
  set_tests_properties(windows.interop PROPERTIES LABELS windows TIMEOUT 300)
  # wctmond.exe under Wine's SCM: controls, status, failures, --configure-service.
  add_test(NAME windows.service
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/windows_service.py
                   ${CMAKE_BINARY_DIR}/bin ${WCTMON_LINUX_BUILD} ${PROJECT_SOURCE_DIR})
  set_tests_properties(windows.service PROPERTIES LABELS windows TIMEOUT 300)
  # wctmond.exe in the foreground watching a service stuck START_PENDING and a window that
  # stops answering: their incidents open and resolve, turned on by a reload.
  add_test(NAME windows.watchers
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/windows_watchers.py
                   ${CMAKE_BINARY_DIR}/bin ${WCTMON_LINUX_BUILD} ${PROJECT_SOURCE_DIR})
  set_tests_properties(windows.watchers PROPERTIES LABELS windows TIMEOUT 300)
  # wctmond.exe in the foreground finding a thread that spins (a busy incident, its function
  # named) and not one that works through changing data.
  add_test(NAME windows.busy
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/windows_busy.py
                   ${CMAKE_BINARY_DIR}/bin ${WCTMON_LINUX_BUILD} ${PROJECT_SOURCE_DIR})
  # Alone: a busy thread is one that gets its share of a core, which it cannot while other tests
  # (the fuzzers, the other services) keep both cores of a small machine busy.
  set_tests_properties(windows.busy PROPERTIES LABELS windows TIMEOUT 300 RUN_SERIAL TRUE)
  # The MSI: its tables, then install, upgrade and uninstall under Wine's msiexec. It uses the
  # shipped configuration's ports (7787, 7788), which no other test takes.
  if(WCTMON_MSI)
    add_test(NAME windows.msi
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/windows_msi.py
                     ${CMAKE_BINARY_DIR}/bin ${WCTMON_LINUX_BUILD} ${PROJECT_SOURCE_DIR}
                     ${WCTMON_MSI})
    set_tests_properties(windows.msi PROPERTIES LABELS windows TIMEOUT 600)
  endif()
endif()

# Fuzzing under Wine. libFuzzer has no MinGW build: the replay driver replays each corpus, then
# mutates it blindly for WCTMON_FUZZ_SECONDS (tests/fuzz/replay_main.cpp). WCT's answers are the
# Windows build's own input; the configuration is read by both builds.
set(WCTMON_FUZZ_SECONDS 30 CACHE STRING "How long the test command fuzzes each target")
add_library(wctmon_fuzz_support STATIC fuzz/fuzz_support.cpp fuzz/replay_main.cpp)
target_include_directories(wctmon_fuzz_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(wctmon_fuzz_support PRIVATE wctmon_warnings)
foreach(target wct_translate:wctmon_platform config:wctmon_core)
  string(REPLACE ":" ";" target "${target}")
  list(GET target 0 name)
  list(GET target 1 library)
  add_executable(wctmon_fuzz_${name} fuzz/${name}_fuzz.cpp)
  target_link_libraries(wctmon_fuzz_${name} PRIVATE ${library} wctmon_fuzz_support wctmon_warnings)
  add_test(NAME FuzzMutate.${name}
           COMMAND wctmon_fuzz_${name} --mutate ${WCTMON_FUZZ_SECONDS} --seed 1
                   --artifact ${CMAKE_BINARY_DIR}/fuzz-${name}-crash
                   ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${name})
  math(EXPR timeout "${WCTMON_FUZZ_SECONDS} + 120")
  set_tests_properties(FuzzMutate.${name} PROPERTIES LABELS windows TIMEOUT ${timeout})
endforeach()
