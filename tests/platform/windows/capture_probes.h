// What the Windows capture tests read of threads and of their captures: the threads of a
// process, a thread's suspend count, a capture's registers and frames, and all of it in words
// for a failure's message.
#pragma once

#include <windows.h>
// tlhelp32.h needs windows.h first.
#include <tlhelp32.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

#include "model/wait_model.h"

namespace wctmon::windows_platform::testing {

inline ThreadRef ref(DWORD pid, DWORD tid) {
  return ThreadRef{Pid{static_cast<std::int32_t>(pid)}, Tid{static_cast<std::int32_t>(tid)}};
}

/// The threads of `pid` as Toolhelp32 lists them.
inline std::set<DWORD> threadsOf(DWORD pid) {
  std::set<DWORD> out;
  const HANDLE snapshot = ::CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  if (snapshot == INVALID_HANDLE_VALUE) return out;
  THREADENTRY32 entry{};
  entry.dwSize = sizeof(entry);
  for (BOOL more = ::Thread32First(snapshot, &entry); more != FALSE;
       more = ::Thread32Next(snapshot, &entry)) {
    if (entry.th32OwnerProcessID == pid) out.insert(entry.th32ThreadID);
  }
  ::CloseHandle(snapshot);
  return out;
}

/// The suspend count of a thread, read the only way Windows offers: SuspendThread returns the
/// count it had, and ResumeThread puts it back.
inline DWORD suspendCount(DWORD tid) {
  const HANDLE thread = ::OpenThread(THREAD_SUSPEND_RESUME, FALSE, tid);
  if (thread == nullptr) return static_cast<DWORD>(-1);
  const DWORD previous = ::SuspendThread(thread);
  ::ResumeThread(thread);
  ::CloseHandle(thread);
  return previous;
}

/// The value of register `name` of a capture; 0 when it has none of that name.
inline std::uint64_t registerOf(const ThreadCapture& c, const std::string& name) {
  for (const auto& r : c.registers) {
    if (r.name == name) return r.value;
  }
  return 0;
}

/// Whether a frame of the capture is in a function whose name holds `part`.
inline bool hasFunction(const ThreadCapture& c, const std::string& part) {
  return std::any_of(c.frames.begin(), c.frames.end(), [&](const StackFrame& f) {
    return f.function.find(part) != std::string::npos;
  });
}

/// A capture in words: its thread, architecture, error and note, registers and frames.
inline std::string describe(const ThreadCapture& c) {
  std::string out = "thread " + std::to_string(c.thread.tid.value) + " " + c.architecture +
                    " error '" + c.error + "' note '" + c.note + "'\n ";
  for (const auto& r : c.registers) {
    char value[32];
    std::snprintf(value, sizeof(value), "0x%llx", static_cast<unsigned long long>(r.value));
    out += " " + r.name + "=" + value;
  }
  out += "\n";
  for (const auto& f : c.frames) {
    char pc[32];
    std::snprintf(pc, sizeof(pc), "0x%llx", static_cast<unsigned long long>(f.pc));
    out += std::string("  ") + pc + " " + (f.function.empty() ? "??" : f.function) + " +" +
           std::to_string(f.offset) + " (" + f.module + ")" +
           (f.file.empty() ? "" : " at " + f.file + ":" + std::to_string(f.line)) + "\n";
  }
  return out;
}

}  // namespace wctmon::windows_platform::testing
