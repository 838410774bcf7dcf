// Says what each blocked thread of a process waits on, by the system call it is in: futex waits
// go together to futex_waits.cpp, descriptors to descriptor_waits.cpp, children and SysV
// semaphores to process_waits.cpp; sleeps, event waits, signals and the kernel's own waits are
// named here. A thread stopped by a signal or a tracer waits for that, not for its call.
#include "platform/linux/wait_classifier.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <functional>
#include <vector>

#include "platform/linux/descriptor_waits.h"
#include "platform/linux/futex_waits.h"
#include "platform/linux/process_waits.h"
#include "platform/linux/python_lock_waits.h"
#include "platform/linux/syscall_names.h"
#include "platform/linux/wait_classifier_internal.h"

namespace wctmon::linux_platform {

WaitObject noOwner(ObjectType type, std::string name, std::string detail) {
  WaitObject w;
  w.type = type;
  w.status = ObjectStatus::kBlocked;
  w.name = std::move(name);
  w.detail = std::move(detail);
  w.key = std::hash<std::string>{}(w.name);
  return w;
}

std::optional<std::chrono::milliseconds> timeoutAt(WaitLookup& lookup, std::uint64_t addr,
                                                   bool absolute, clockid_t clock) {
  if (addr == 0) return std::nullopt;
  timespec ts{};
  std::array<std::byte, sizeof(timespec)> bytes{};
  if (lookup.readMemory(addr, bytes) != MemoryAccess::kOk) return std::nullopt;
  std::memcpy(&ts, bytes.data(), sizeof(ts));
  // Whatever the target's memory holds: a value no kernel would accept is no timeout (and must
  // not overflow the arithmetic below). 2^40 s is some 35,000 years.
  constexpr std::int64_t kMaxSeconds = std::int64_t{1} << 40;
  if (ts.tv_sec < 0 || ts.tv_sec > kMaxSeconds || ts.tv_nsec < 0 || ts.tv_nsec >= 1'000'000'000) {
    return std::nullopt;
  }
  auto value = std::chrono::milliseconds(static_cast<std::int64_t>(ts.tv_sec) * 1000 +
                                         ts.tv_nsec / 1'000'000);
  if (absolute) {
    value -= std::chrono::duration_cast<std::chrono::milliseconds>(lookup.now(clock));
    if (value.count() < 0) value = {};
  }
  return value;
}

namespace {

std::optional<std::chrono::milliseconds> millisecondsArg(std::uint64_t arg) {
  const auto ms = static_cast<std::int32_t>(arg);
  if (ms < 0) return std::nullopt;  // infinite
  return std::chrono::milliseconds(ms);
}

/// Classifies the waits of the threads of one process.
class Classifier {
 public:
  Classifier(Pid pid, WaitLookup& lookup)
      : pid_(pid), lookup_(lookup), python_(pid, lookup), futexes_(pid, lookup, python_) {}

  void classify(std::span<TaskReading> threads) {
    std::vector<TaskReading*> futex_waiters;
    for (auto& thread : threads) {
      if (thread.sample.status != ObjectStatus::kBlocked || !thread.syscall) continue;
      if (thread.sample.state != RunState::kDiskSleep &&
          thread.syscall->kind == SyscallState::Kind::kInSyscall &&
          (thread.syscall->number == SYS_futex || futexes_.isRestartedFutexWait(*thread.syscall))) {
        thread.syscall->number = SYS_futex;
        futex_waiters.push_back(&thread);
        continue;
      }
      thread.sample.wait = classifyOne(thread);
    }
    futexes_.classify(futex_waiters);
    python_.attachFrames(threads);
    for (auto& thread : threads) {
      if (!thread.sample.wait) continue;
      if (thread.sample.state == RunState::kTraced && thread.syscall &&
          thread.syscall->kind == SyscallState::Kind::kInSyscall &&
          thread.sample.wait->type != ObjectType::kKernelWait) {
        const auto tid = thread.sample.id.tid.value;
        if (lookup_.heldByUs(tid)) {
          // Held a moment by this service's own capture, then let go on in the same call: it is
          // where it was. Seen as stopped, a deadlock it is in would break for that sample, and
          // the threads waiting on it would look hung.
          thread.sample.state = RunState::kSleeping;
        } else if (const auto tracer = lookup_.tracerOf(tid)) {
          // A debugger (gdb -p) or strace holds it in the middle of its call, which it goes back
          // to when let go: the wait, and a deadlock it is in, go on.
          thread.sample.state = RunState::kSleeping;
          auto& detail = thread.sample.wait->detail;
          detail = detail.str() + (detail.empty() ? "" : "; ") +
                   "held in a tracing stop by process " + std::to_string(tracer->value) +
                   " (a debugger or strace), still in this call";
        }
      }
      if (thread.sample.state == RunState::kSleeping) thread.sample.wait->alertable = true;
      // A stopped thread waits for SIGCONT (or its tracer), not for the object of the system
      // call it was in: once continued it may find the pipe drained or the lock free. Its chain
      // ends here, as a hang that SIGCONT ends, and the call it was in is said alongside.
      if ((thread.sample.state == RunState::kStopped || thread.sample.state == RunState::kTraced) &&
          thread.sample.wait->type != ObjectType::kKernelWait) {
        const auto& was = *thread.sample.wait;
        const bool job_control = thread.sample.state == RunState::kStopped;
        auto stopped = noOwner(ObjectType::kKernelWait, job_control ? "stopped" : "tracing stop",
                               std::string(job_control ? "stopped by a signal; SIGCONT resumes it"
                                                       : "stopped by a tracer") +
                                   "; it was in: " + toString(was.type) + " " + was.name);
        stopped.key = was.key;
        thread.sample.wait = std::move(stopped);
      }
    }
  }

 private:
  /// The wait of a blocked thread that is not in a futex wait, by its state and system call.
  WaitObject classifyOne(const TaskReading& thread) {
    const auto& sc = *thread.syscall;
    const auto state = thread.sample.state;
    if (state == RunState::kDiskSleep) {
      return noOwner(ObjectType::kKernelWait,
                     thread.wchan.empty() ? "uninterruptible" : thread.wchan,
                     sc.kind == SyscallState::Kind::kInSyscall
                         ? "uninterruptible sleep (D) in syscall " + std::to_string(sc.number)
                         : "uninterruptible sleep (D) outside a syscall");
    }
    if ((state == RunState::kStopped || state == RunState::kTraced) &&
        sc.kind != SyscallState::Kind::kInSyscall) {
      return noOwner(ObjectType::kKernelWait,
                     state == RunState::kStopped ? "stopped" : "tracing stop",
                     state == RunState::kStopped ? "stopped by a signal; SIGCONT resumes it"
                                                 : "stopped by a tracer");
    }
    if (sc.kind == SyscallState::Kind::kNotInSyscall) {
      return noOwner(ObjectType::kKernelWait, thread.wchan.empty() ? "kernel" : thread.wchan,
                     "sleeping outside a syscall");
    }
    const auto& a = sc.args;
    switch (sc.number) {
      case SYS_wait4:
        return wait4Wait(pid_, lookup_, static_cast<std::int32_t>(a[0]));
      case SYS_waitid:
        return waitidWait(pid_, lookup_, static_cast<int>(a[0]), static_cast<std::int32_t>(a[1]));
      case SYS_flock:
        return flockWait(pid_, lookup_, static_cast<int>(a[0]), static_cast<int>(a[1]));
      case SYS_fcntl: {
        const auto cmd = static_cast<int>(a[1]);
        if (cmd == kFSetLkw || cmd == kFOfdSetLkw) {
          return fcntlLockWait(pid_, lookup_, static_cast<int>(a[0]), cmd == kFOfdSetLkw, a[2]);
        }
        break;
      }
      case SYS_read:
      case SYS_readv:
      case SYS_pread64:
      case SYS_preadv:
      case SYS_preadv2:
      case SYS_recvfrom:
      case SYS_recvmsg:
      case SYS_recvmmsg:
        return descriptorWait(lookup_, static_cast<int>(a[0]), true);
      case SYS_write:
      case SYS_writev:
      case SYS_pwrite64:
      case SYS_pwritev:
      case SYS_pwritev2:
      case SYS_sendto:
      case SYS_sendmsg:
      case SYS_sendmmsg:
        return descriptorWait(lookup_, static_cast<int>(a[0]), false);
      case SYS_accept:
      case SYS_accept4:
      case SYS_connect:
        return noOwner(ObjectType::kSocketIo, descriptorName(lookup_, static_cast<int>(a[0])),
                       sc.number == SYS_connect ? "connect" : "accept");
      case SYS_nanosleep: {
        auto w = noOwner(ObjectType::kSleep, "nanosleep", "sleeping");
        w.timeout = timeoutAt(lookup_, a[0], false, CLOCK_MONOTONIC);
        return w;
      }
      case SYS_clock_nanosleep: {
        auto w = noOwner(ObjectType::kSleep, "clock_nanosleep", "sleeping");
        w.timeout = timeoutAt(lookup_, a[2], (a[1] & 1) != 0, static_cast<clockid_t>(a[0]));
        return w;
      }
      case SYS_poll:
      case SYS_ppoll:
      case SYS_select:
      case SYS_pselect6:
      case SYS_epoll_wait:
      case SYS_epoll_pwait:
      case SYS_epoll_pwait2: {
        auto w = noOwner(ObjectType::kPoll, "event wait", "waiting for any of its event sources");
        if (sc.number == SYS_poll) w.timeout = millisecondsArg(a[2]);
        if (sc.number == SYS_epoll_wait || sc.number == SYS_epoll_pwait) {
          w.timeout = millisecondsArg(a[3]);
        }
        return w;
      }
      case SYS_open:
        return openWait(lookup_, AT_FDCWD, a[0], static_cast<int>(a[1]));
      case SYS_openat:
        return openWait(lookup_, static_cast<int>(a[0]), a[1], static_cast<int>(a[2]));
      case SYS_pause:
      case SYS_rt_sigsuspend:
      case SYS_rt_sigtimedwait:
        return noOwner(ObjectType::kSignalWait, "signal", "waiting for a signal");
      case SYS_semop:
      case SYS_semtimedop: {
        auto w = sysvSemaphoreWait(lookup_, static_cast<int>(a[0]), a[1], a[2]);
        if (sc.number == SYS_semtimedop) {
          w.timeout = timeoutAt(lookup_, a[3], false, CLOCK_MONOTONIC);
        }
        return w;
      }
      case SYS_futex_waitv:
        return noOwner(ObjectType::kFutex, "futex_waitv", "waiting on several futexes");
      default:
        break;
    }
    return noOwner(ObjectType::kUnknown, syscallName(sc.number),
                   "blocked in a system call wctmon does not model");
  }

  Pid pid_;
  WaitLookup& lookup_;
  PythonLockWaits python_;
  FutexWaits futexes_;
};

}  // namespace

void classifyWaits(Pid pid, std::span<TaskReading> threads, WaitLookup& lookup) {
  Classifier(pid, lookup).classify(threads);
}

WaitObject kernelThreadWait(std::string_view wchan) {
  return noOwner(ObjectType::kKernelWait,
                 wchan.empty() || wchan == "0" ? "kernel thread" : std::string(wchan),
                 "a kernel thread: it runs only in the kernel, there is nothing to "
                 "analyse in user space");
}

}  // namespace wctmon::linux_platform
