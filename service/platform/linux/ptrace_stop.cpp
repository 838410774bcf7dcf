#include "platform/linux/ptrace_stop.h"

#include <sys/ptrace.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

namespace wctmon::linux_platform {

std::string PtraceStop::stop() {
  if (::ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) != 0) {
    return errno == EPERM   ? "permission denied (ptrace)"
           : errno == ESRCH ? "thread exited"
                            : std::string("PTRACE_SEIZE: ") + std::strerror(errno);
  }
  seized_ = true;
  started_ = Clock::now();
  if (::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) != 0) {
    return std::string("PTRACE_INTERRUPT: ") + std::strerror(errno);
  }
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(tid_, &status, __WALL);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return std::string("waitpid: ") + std::strerror(errno);
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    seized_ = false;  // nothing left to detach from
    return "thread exited";
  }
  stopped_ = true;
  // A signal-delivery stop (not our interrupt) holds a signal meant for the target: it is
  // passed on when the thread is released.
  if ((status >> 16) != PTRACE_EVENT_STOP) pending_signal_ = WSTOPSIG(status);
  return {};
}

std::chrono::nanoseconds PtraceStop::release() {
  if (seized_) {
    ::ptrace(PTRACE_DETACH, tid_, nullptr,
             reinterpret_cast<void*>(static_cast<long>(pending_signal_)));
    seized_ = false;
    held_ = Clock::now() - started_;
  }
  return held_;
}

}  // namespace wctmon::linux_platform
