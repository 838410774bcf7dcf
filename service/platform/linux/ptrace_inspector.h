#pragma once

#include <cstddef>
#include <string>

#include "core/ports/thread_inspector.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {

/// Captures threads with PTRACE_SEIZE + PTRACE_INTERRUPT + PTRACE_GETREGSET, copies the top of
/// the stack while the thread is stopped, detaches at once and unwinds from the copy afterwards,
/// so that each thread is stopped for as short a time as possible. A thread whose system call a
/// stop could change (a write that has moved some bytes returns short) is never stopped: its
/// evidence is read from /proc and its memory instead, and the capture says so.
class PtraceInspector final : public ThreadInspector {
 public:
  /// How much of the stack is copied while a thread is stopped.
  static constexpr std::size_t kStackCopyBytes = 64 * 1024;
  static constexpr std::size_t kMaxFrames = 64;

  [[nodiscard]] std::vector<ThreadCapture> capture(std::span<const ThreadRef> threads) override;

 private:
  [[nodiscard]] ThreadCapture captureOne(ThreadRef thread);
  [[nodiscard]] static ThreadCapture captureWithoutStopping(ThreadRef thread,
                                                            const SyscallState& sc,
                                                            std::string hazard);
};

}  // namespace wctmon::linux_platform
