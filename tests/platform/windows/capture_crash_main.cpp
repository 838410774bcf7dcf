// A capturer that dies in the middle of a capture, for thread_inspector_test.cpp's test of the
// last-chance handlers (service/platform/windows/suspension_record.h):
//   wctmon-capture-crash PID MODE REPORT_FILE
// Captures every thread of PID over and over on four threads with the thread inspector, waits
// until one of them holds a thread of PID suspended, writes "held N" (how many threads it holds
// suspended at that moment) to REPORT_FILE and dies at once by MODE:
//   exception  an access violation that nothing handles
//   abort      std::abort()
//   exit       std::exit(3), the captures still running
#include <windows.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "platform/windows/suspension_record.h"
#include "platform/windows/toolhelp.h"
#include "platform/windows/windows_thread_inspector.h"

namespace {

using wctmon::windows_platform::WindowsThreadInspector;

/// The threads of `pid`, as the Windows engine lists them.
std::vector<wctmon::ThreadRef> threadsOf(DWORD pid) {
  const wctmon::Pid process{static_cast<std::int32_t>(pid)};
  std::vector<wctmon::ThreadRef> out;
  if (auto listed = wctmon::windows_platform::listProcessThreads(process)) {
    for (const DWORD tid : listed->tids) {
      out.push_back({process, wctmon::Tid{static_cast<std::int32_t>(tid)}});
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: wctmon-capture-crash PID exception|abort|exit REPORT_FILE\n");
    return 2;
  }
  // No crash dialog and no debugger started: the process just ends once the handlers ran.
  ::SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
  const auto pid = static_cast<DWORD>(std::strtoul(argv[1], nullptr, 10));
  const std::string mode = argv[2];
  const auto threads = threadsOf(pid);
  if (threads.empty()) return 2;
  for (int i = 0; i < 4; ++i) {
    std::thread([&threads] {
      WindowsThreadInspector inspector;
      for (;;) static_cast<void>(inspector.capture(threads));
    }).detach();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::size_t held = 0;
  while ((held = wctmon::windows_platform::suspendedThreads()) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
  }
  if (std::FILE* report = std::fopen(argv[3], "w")) {
    std::fprintf(report, "held %zu\n", held);
    std::fclose(report);
  }
  if (mode == "exception") {
    ::RaiseException(EXCEPTION_ACCESS_VIOLATION, EXCEPTION_NONCONTINUABLE, 0, nullptr);
  } else if (mode == "abort") {
    std::abort();
  } else if (mode == "exit") {
    std::exit(3);
  }
  return 2;
}
