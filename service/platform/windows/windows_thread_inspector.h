#pragma once

#include <cstddef>
#include <mutex>

#include "core/ports/thread_inspector.h"

namespace wctmon::windows_platform {

/// Captures threads with SuspendThread + GetThreadContext (Wow64SuspendThread and
/// Wow64GetThreadContext for a 32-bit process), copies the top of the stack while the thread is
/// suspended, resumes it at once and walks the stack from the copy afterwards with DbgHelp
/// (StackWalk64, SymFromAddr), so that each thread is held for as short a time as possible.
/// Threads of this process are refused: a suspended thread of our own could hold a lock the
/// capture itself needs (the heap's, DbgHelp's) and hang it.
class WindowsThreadInspector final : public ThreadInspector {
 public:
  /// How much of the stack is copied while a thread is suspended.
  static constexpr std::size_t kStackCopyBytes = 64 * 1024;
  static constexpr std::size_t kMaxFrames = 64;

  [[nodiscard]] std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) override;
};

/// DbgHelp is single-threaded: every call into it in this process, from any component, holds
/// this mutex.
[[nodiscard]] std::mutex& dbgHelpMutex();

}  // namespace wctmon::windows_platform
