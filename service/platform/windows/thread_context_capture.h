#pragma once

// The capture of one thread of another process while it is held suspended: its registers
// (GetThreadContext, Wow64GetThreadContext for a 32-bit process) and a copy of the top of its
// stack, taken in as short a hold as possible. Its stack is walked afterwards, from the copy
// (dbghelp_stack_walker.h).

#include <windows.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ports/thread_inspector.h"
#include "platform/windows/handle.h"

namespace wctmon::windows_platform {

/// The process of the threads asked for, opened once per capture call.
struct CaptureTarget {
  Pid pid;
  Handle process;
  bool wow64 = false;
  /// The process has exited: its threads are gone.
  bool gone = false;
  /// Why none of its threads can be captured; empty when they can.
  std::string error;
  /// Why their stacks cannot be read (no PROCESS_VM_READ); empty when they can.
  std::string stack_error;
};

/// Opens `pid` for the capture of its threads: refuses this process, and says when the process
/// has exited, cannot be opened, or its memory cannot be read (registers only, then).
[[nodiscard]] CaptureTarget openTarget(Pid pid);

/// A thread's registers and the top of its stack, as they were while it was suspended.
struct HeldThread {
  ThreadCapture capture;
  Handle thread;
  CONTEXT context{};
  WOW64_CONTEXT wow64_context{};
  std::uint64_t sp = 0;
  std::vector<std::byte> stack;
};

/// Suspends `ref`, takes its registers and the top of its stack, and resumes it; the capture's
/// error says why it could not be, when it could not.
[[nodiscard]] HeldThread holdThread(const CaptureTarget& target, ThreadRef ref);

}  // namespace wctmon::windows_platform
