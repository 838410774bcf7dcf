#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "model/ids.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {

/// A thread held in a ptrace stop. The thread is released when this goes out of scope, on every
/// path, re-delivering any signal that arrived while it was held. PTRACE_SEIZE (not ATTACH) is
/// used because it does not send SIGSTOP: the stop comes from PTRACE_INTERRUPT, so nothing is
/// left for the target to see, and without PTRACE_O_EXITKILL our own death cannot kill it.
class PtraceStop {
 public:
  explicit PtraceStop(int tid) : tid_(tid) {}
  PtraceStop(const PtraceStop&) = delete;
  PtraceStop& operator=(const PtraceStop&) = delete;
  ~PtraceStop() { release(); }

  /// Seizes and stops the thread; returns an error text, empty on success.
  [[nodiscard]] std::string stop();
  /// Releases the thread; returns how long it was held.
  std::chrono::nanoseconds release();
  [[nodiscard]] bool stopped() const { return stopped_; }

 private:
  using Clock = std::chrono::steady_clock;
  int tid_;
  bool seized_ = false;
  bool stopped_ = false;
  int pending_signal_ = 0;
  Clock::time_point started_;
  std::chrono::nanoseconds held_{0};
};

/// The process tracing `thread` (TracerPid), 0 when none is.
[[nodiscard]] std::int32_t tracerOf(ThreadRef thread);

/// What /proc/PID/task/TID/syscall says of `thread`; nullopt when it cannot be read.
[[nodiscard]] std::optional<SyscallState> syscallOf(ThreadRef thread);

/// Why stopping the thread could change what it does, or empty when a stop is harmless. A
/// ptrace stop interrupts the system call the thread sleeps in; most calls are restarted by the
/// kernel as if nothing happened, but a write or send that has moved some bytes returns the short
/// count, and calls like epoll_wait or a recv with a timeout fail with EINTR. Only calls known to
/// restart cleanly, and a thread outside any call, are stopped.
[[nodiscard]] std::string stopHazard(ThreadRef thread, const std::optional<SyscallState>& sc);

}  // namespace wctmon::linux_platform
