#include "platform/linux/ptrace_stop.h"

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "platform/linux/syscall_names.h"

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

std::int32_t tracerOf(ThreadRef thread) {
  const auto path = "/proc/" + std::to_string(thread.pid.value) + "/task/" +
                    std::to_string(thread.tid.value) + "/status";
  return static_cast<std::int32_t>(readStatusField(AT_FDCWD, path, "TracerPid").value_or(0));
}

std::string stopHazard(ThreadRef thread, const std::optional<SyscallState>& sc) {
  if (!sc || sc->kind != SyscallState::Kind::kInSyscall) return {};
  const auto fdIsPipe = [&](std::uint64_t fd) {
    std::array<char, 64> link{};
    const auto path = "/proc/" + std::to_string(thread.pid.value) + "/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(path.c_str(), link.data(), link.size() - 1);
    if (n <= 0) return false;
    struct stat st {};
    return std::string_view(link.data(), static_cast<std::size_t>(n)).starts_with("pipe:[") ||
           (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
  };
  switch (sc->number) {
    case SYS_futex:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_flock:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_open:
    case SYS_openat:
      return {};
    case SYS_fcntl:
      if (sc->args[1] == F_SETLKW || sc->args[1] == F_OFD_SETLKW) return {};
      break;
    case SYS_read:
    case SYS_readv:
      // A read that blocks on a pipe has read nothing yet: it restarts whole.
      if (fdIsPipe(sc->args[0])) return {};
      break;
    default:
      break;
  }
  return "it is in " + syscallName(sc->number) +
         "(), which a stop could cut short (a write that has moved some bytes returns a short "
         "count; some calls fail with EINTR)";
}

std::optional<SyscallState> syscallOf(ThreadRef thread) {
  std::array<char, 256> buf{};
  const auto path = "/proc/" + std::to_string(thread.pid.value) + "/task/" +
                    std::to_string(thread.tid.value) + "/syscall";
  const long n = readSmallFile(AT_FDCWD, path.c_str(), buf);
  if (n <= 0) return std::nullopt;
  return parseSyscall(std::string_view(buf.data(), static_cast<std::size_t>(n)));
}

}  // namespace wctmon::linux_platform
