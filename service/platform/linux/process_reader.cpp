#include "platform/linux/process_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>

#include "model/format.h"
#include "platform/linux/glibc_sync.h"
#include "platform/linux/process_memory.h"
#include "platform/linux/syscall_names.h"
#include "platform/linux/unique_fd.h"

namespace wctmon::linux_platform {
namespace {

constexpr int kFSetLkw = 7;      // F_SETLKW (== F_SETLKW64 on 64-bit)
constexpr int kFOfdSetLkw = 38;  // F_OFD_SETLKW
constexpr int kPAll = 0;         // waitid idtypes
constexpr int kPPid = 1;
constexpr int kPPgid = 2;

std::optional<std::chrono::milliseconds> readTimespec(Pid pid, std::uint64_t addr, bool absolute,
                                                      clockid_t clock) {
  if (addr == 0) return std::nullopt;
  timespec ts{};
  std::array<std::byte, sizeof(timespec)> bytes{};
  if (readMemory(pid, addr, bytes) != MemoryAccess::kOk) return std::nullopt;
  std::memcpy(&ts, bytes.data(), sizeof(ts));
  // Whatever the target's memory holds: a value no kernel would accept is no timeout (and must
  // not overflow the arithmetic below). 2^40 s is some 35,000 years.
  constexpr std::int64_t kMaxSeconds = std::int64_t{1} << 40;
  if (ts.tv_sec < 0 || ts.tv_sec > kMaxSeconds || ts.tv_nsec < 0 || ts.tv_nsec >= 1'000'000'000) {
    return std::nullopt;
  }
  const auto toMs = [](const timespec& t) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(t.tv_sec) * 1000 +
                                     t.tv_nsec / 1'000'000);
  };
  auto value = toMs(ts);
  if (absolute) {
    timespec now{};
    ::clock_gettime(clock, &now);
    value -= toMs(now);
    if (value.count() < 0) value = {};
  }
  return value;
}

std::optional<std::chrono::milliseconds> millisecondsArg(std::uint64_t arg) {
  const auto ms = static_cast<std::int32_t>(arg);
  if (ms < 0) return std::nullopt;  // infinite
  return std::chrono::milliseconds(ms);
}

WaitObject noOwner(ObjectType type, std::string name, std::string detail) {
  WaitObject w;
  w.type = type;
  w.status = ObjectStatus::kBlocked;
  w.name = std::move(name);
  w.detail = std::move(detail);
  w.key = std::hash<std::string>{}(w.name);
  return w;
}

std::optional<std::int32_t> processGroup(Pid pid) {
  auto stat = readProcessStat(pid);
  return stat ? std::optional(stat->pgrp) : std::nullopt;
}

std::optional<Pid> parentOf(Pid pid) {
  auto stat = readProcessStat(pid);
  return stat ? std::optional(Pid{stat->ppid}) : std::nullopt;
}

/// Resolves the waits of the threads of one process.
class WaitResolver {
 public:
  WaitResolver(SampleContext& context, Pid pid, int task_fd, TaskList& tasks)
      : context_(context), pid_(pid), task_fd_(task_fd), tasks_(tasks) {}

  void resolve(std::vector<TaskReading>& threads) {
    std::vector<TaskReading*> futex_waiters;
    for (auto& raw : threads) {
      if (raw.sample.status != ObjectStatus::kBlocked || !raw.syscall) continue;
      if (raw.sample.state != RunState::kDiskSleep &&
          raw.syscall->kind == SyscallState::Kind::kInSyscall && raw.syscall->number == SYS_futex) {
        futex_waiters.push_back(&raw);
        continue;
      }
      raw.sample.wait = classify(raw);
    }
    resolveFutexes(futex_waiters);
    for (auto& raw : threads) {
      if (!raw.sample.wait) continue;
      if (raw.sample.state == RunState::kSleeping) raw.sample.wait->alertable = true;
      // A stopped thread waits for SIGCONT (or its tracer), not for the object of the system
      // call it was in: once continued it may find the pipe drained or the lock free. Its chain
      // ends here, as a hang that SIGCONT ends, and the call it was in is said alongside.
      if ((raw.sample.state == RunState::kStopped || raw.sample.state == RunState::kTraced) &&
          raw.sample.wait->type != ObjectType::kKernelWait) {
        const auto& was = *raw.sample.wait;
        const bool job_control = raw.sample.state == RunState::kStopped;
        auto stopped = noOwner(ObjectType::kKernelWait, job_control ? "stopped" : "tracing stop",
                               std::string(job_control ? "stopped by a signal; SIGCONT resumes it"
                                                       : "stopped by a tracer") +
                                   "; it was in: " + toString(was.type) + " " + was.name);
        stopped.key = was.key;
        raw.sample.wait = std::move(stopped);
      }
    }
  }

 private:
  bool isLive(std::int32_t tid, bool process_shared) {
    if (tasks_.contains(tid)) return true;
    return process_shared && context_.processOfThread(tid).has_value();
  }

  ThreadRef ownerRef(std::int32_t tid) {
    if (tasks_.contains(tid)) return ThreadRef{pid_, Tid{tid}};
    const auto owner_pid = context_.processOfThread(tid);
    return ThreadRef{owner_pid.value_or(Pid{tid}), Tid{tid}};
  }

  /// Why a private lock's owner cannot unlock it: gone, or a thread of another process, which
  /// is what a child that forked while another thread held the lock sees.
  std::string missingOwner(std::int32_t owner_tid) {
    const auto owner_pid = context_.processOfThread(owner_tid);
    const auto tid = std::to_string(owner_tid);
    if (!owner_pid || *owner_pid == pid_) return ", owner thread " + tid + " has exited";
    const auto where = std::to_string(owner_pid->value);
    if (parentOf(pid_) == *owner_pid) {
      return ", inherited locked through fork(): its owner, thread " + tid +
             ", lives in the parent process " + where +
             ", not in this one, so nothing here can unlock it";
    }
    return ", owner thread " + tid + " is not in this process (it is a thread of process " + where +
           "), so nothing here can unlock it";
  }

  void resolveFutexes(const std::vector<TaskReading*>& waiters) {
    if (waiters.empty()) return;
    std::vector<std::uint64_t> uaddrs;
    uaddrs.reserve(waiters.size());
    for (const auto* raw : waiters) uaddrs.push_back(raw->syscall->args[0]);
    std::sort(uaddrs.begin(), uaddrs.end());
    uaddrs.erase(std::unique(uaddrs.begin(), uaddrs.end()), uaddrs.end());
    std::vector<FutexWindow> windows;
    const auto access = readFutexWindows(pid_, uaddrs, windows);

    const TidValidator validator = [this](std::int32_t tid, bool shared) {
      return isLive(tid, shared);
    };
    for (auto* raw : waiters) {
      const auto& args = raw->syscall->args;
      const std::uint64_t uaddr = args[0];
      WaitObject w;
      w.key = uaddr;
      w.name = hexString(uaddr);
      if (access != MemoryAccess::kOk) {
        w.type = ObjectType::kFutex;
        w.status = access == MemoryAccess::kDenied ? ObjectStatus::kNoAccess : ObjectStatus::kError;
        w.detail = access == MemoryAccess::kDenied ? "process memory is not readable"
                                                   : "process exited during the read";
        raw->sample.wait = std::move(w);
        continue;
      }
      const auto index = static_cast<std::size_t>(
          std::lower_bound(uaddrs.begin(), uaddrs.end(), uaddr) - uaddrs.begin());
      const auto op = static_cast<std::uint32_t>(args[1]);
      const auto decoded = decodeFutexWait(windows[index], op, static_cast<std::uint32_t>(args[2]),
                                           raw->sample.id.tid.value, validator);
      w.detail = decoded.detail;
      w.name = hexString(uaddr + static_cast<std::uint64_t>(decoded.object_offset));
      switch (decoded.kind) {
        case FutexWaitKind::kMutex:
        case FutexWaitKind::kPriorityInheritance:
          w.type = ObjectType::kMutex;
          break;
        case FutexWaitKind::kRwLockWrite:
        case FutexWaitKind::kRwLockRead:
          w.type = ObjectType::kRwLock;
          break;
        case FutexWaitKind::kJoin:
          w.type = ObjectType::kThreadWait;
          w.name = "thread " + std::to_string(decoded.owner_tid);
          break;
        case FutexWaitKind::kUnknown:
          w.type = ObjectType::kFutex;
          break;
      }
      if (decoded.kind == FutexWaitKind::kUnknown) {
        w.status = ObjectStatus::kBlocked;
        constexpr std::uint64_t kNearStack = 64 * 1024;
        if (uaddr >= raw->syscall->sp && uaddr < raw->syscall->sp + kNearStack && args[2] == 0 &&
            args[3] == 0) {
          // glibc parks a thread like this, for good, when the kernel refuses a
          // priority-inheritance lock with EDEADLK; other code may share a stack word on purpose.
          w.detail =
              "futex on the thread's own stack, waiting for 0 without a timeout (glibc "
              "parks a thread so after a priority-inheritance deadlock)";
        }
      } else if (decoded.kind == FutexWaitKind::kRwLockRead) {
        w.status = ObjectStatus::kUnknown;
      } else if (decoded.owner_gone) {
        w.status = ObjectStatus::kAbandoned;
        if (decoded.owner_tid > 0 && decoded.kind == FutexWaitKind::kMutex) {
          w.detail += missingOwner(decoded.owner_tid);
        }
      } else {
        w.status = ObjectStatus::kOwned;
        w.owner_threads.push_back(ownerRef(decoded.owner_tid));
      }
      // FUTEX_WAIT takes a relative timeout, FUTEX_WAIT_BITSET an absolute one.
      constexpr std::uint32_t kCmdMask = 127;
      const bool absolute = (op & kCmdMask) == 9;
      const clockid_t clock = (op & 256) != 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC;
      w.timeout = readTimespec(pid_, args[3], absolute, clock);
      raw->sample.wait = std::move(w);
    }
  }

  WaitObject classify(const TaskReading& raw) {
    const auto& sc = *raw.syscall;
    if (raw.sample.state == RunState::kDiskSleep) {
      auto w = noOwner(ObjectType::kKernelWait, raw.wchan.empty() ? "uninterruptible" : raw.wchan,
                       sc.kind == SyscallState::Kind::kInSyscall
                           ? "uninterruptible sleep (D) in syscall " + std::to_string(sc.number)
                           : "uninterruptible sleep (D) outside a syscall");
      return w;
    }
    if ((raw.sample.state == RunState::kStopped || raw.sample.state == RunState::kTraced) &&
        sc.kind != SyscallState::Kind::kInSyscall) {
      return noOwner(ObjectType::kKernelWait,
                     raw.sample.state == RunState::kStopped ? "stopped" : "tracing stop",
                     raw.sample.state == RunState::kStopped
                         ? "stopped by a signal; SIGCONT resumes it"
                         : "stopped by a tracer");
    }
    if (sc.kind == SyscallState::Kind::kNotInSyscall) {
      return noOwner(ObjectType::kKernelWait, raw.wchan.empty() ? "kernel" : raw.wchan,
                     "sleeping outside a syscall");
    }
    const auto& a = sc.args;
    switch (sc.number) {
      case SYS_wait4:
        return processWait(static_cast<std::int32_t>(a[0]), kPPid);
      case SYS_waitid:
        return processWait(static_cast<std::int32_t>(a[1]), static_cast<int>(a[0]));
      case SYS_flock:
        return fileLock(static_cast<int>(a[0]), flockRequest(static_cast<int>(a[1])));
      case SYS_fcntl: {
        const auto cmd = static_cast<int>(a[1]);
        if (cmd == kFSetLkw || cmd == kFOfdSetLkw) {
          const int fd = static_cast<int>(a[0]);
          return fileLock(fd, fcntlRequest(fd, cmd == kFOfdSetLkw, a[2]));
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
        return fdWait(static_cast<int>(a[0]), true);
      case SYS_write:
      case SYS_writev:
      case SYS_pwrite64:
      case SYS_pwritev:
      case SYS_pwritev2:
      case SYS_sendto:
      case SYS_sendmsg:
      case SYS_sendmmsg:
        return fdWait(static_cast<int>(a[0]), false);
      case SYS_accept:
      case SYS_accept4:
      case SYS_connect:
        return noOwner(ObjectType::kSocketIo, fdName(static_cast<int>(a[0])),
                       sc.number == SYS_connect ? "connect" : "accept");
      case SYS_nanosleep: {
        auto w = noOwner(ObjectType::kSleep, "nanosleep", "sleeping");
        w.timeout = readTimespec(pid_, a[0], false, CLOCK_MONOTONIC);
        return w;
      }
      case SYS_clock_nanosleep: {
        auto w = noOwner(ObjectType::kSleep, "clock_nanosleep", "sleeping");
        w.timeout = readTimespec(pid_, a[2], (a[1] & 1) != 0, static_cast<clockid_t>(a[0]));
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
        return openWait(AT_FDCWD, a[0], static_cast<int>(a[1]));
      case SYS_openat:
        return openWait(static_cast<int>(a[0]), a[1], static_cast<int>(a[2]));
      case SYS_pause:
      case SYS_rt_sigsuspend:
      case SYS_rt_sigtimedwait:
        return noOwner(ObjectType::kSignalWait, "signal", "waiting for a signal");
      case SYS_futex_waitv:
        return noOwner(ObjectType::kFutex, "futex_waitv", "waiting on several futexes");
      default:
        break;
    }
    return noOwner(ObjectType::kUnknown, syscallName(sc.number),
                   "blocked in a system call wctmon does not model");
  }

  /// A thread blocked in open(): a FIFO waits there for its other end to be opened; anything
  /// else (a device, a network file system) is a wait wctmon does not model.
  WaitObject openWait(int dirfd, std::uint64_t path_addr, int flags) {
    auto path = readString(pid_, path_addr);
    if (!path) {
      return noOwner(ObjectType::kUnknown, "open", "blocked in open(); the path is not readable");
    }
    // The path as the kernel resolves it, seen from here through the target's own root, cwd
    // or directory descriptor.
    std::string base = "/proc/" + std::to_string(pid_.value);
    std::string full = path->starts_with('/') ? base + "/root" + *path
                       : dirfd == AT_FDCWD    ? base + "/cwd/" + *path
                                              : base + "/fd/" + std::to_string(dirfd) + "/" + *path;
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) {
      return noOwner(ObjectType::kUnknown, *path, "blocked in open()");
    }
    const bool reading = (flags & O_ACCMODE) == O_RDONLY;
    auto w = noOwner(ObjectType::kFifoOpen, *path,
                     reading ? "opening a FIFO for reading: waits until a writer opens it"
                             : "opening a FIFO for writing: waits until a reader opens it");
    w.key = static_cast<std::uint64_t>(st.st_ino);
    return w;
  }

  std::string fdName(int fd) {
    auto target = readFdTarget(pid_, fd);
    return target ? target->link : "fd " + std::to_string(fd);
  }

  WaitObject processWait(std::int32_t id, int idtype) {
    // wait4's pid argument: > 0 one child, -1 any child, 0 or < -1 a process group.
    int kind = idtype;
    std::int32_t target = id;
    if (idtype == kPPid && id == -1) kind = kPAll;
    if (idtype == kPPid && id <= 0 && id != -1) {
      kind = kPPgid;
      target = id == 0 ? processGroup(pid_).value_or(0) : -id;
    }
    const auto children = readChildren(task_fd_, tasks_.all());
    WaitObject w;
    w.type = ObjectType::kProcessWait;
    for (const auto child : children) {
      if (kind == kPAll || (kind == kPPid && child.value == target) ||
          (kind == kPPgid && processGroup(child) == target)) {
        w.owner_processes.push_back(child);
      }
    }
    w.name = kind == kPPid    ? "process " + std::to_string(target)
             : kind == kPPgid ? "process group " + std::to_string(target)
                              : "any child process";
    w.detail = std::to_string(w.owner_processes.size()) + " child process(es) can end this wait";
    w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
    w.key =
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(target)) | (std::uint64_t{1} << 40);
    return w;
  }

  /// What `fcntl(fd, cmd, lock)` asks for, from the `struct flock` in the target's memory.
  std::optional<LockRequest> fcntlRequest(int fd, bool ofd, std::uint64_t lock_addr) {
    struct {
      std::int16_t type;
      std::int16_t whence;
      std::int64_t start;
      std::int64_t len;
      std::int32_t pid;
    } raw{};
    static_assert(sizeof(raw) == 32, "struct flock of x86-64");
    std::array<std::byte, sizeof(raw)> bytes{};
    if (readMemory(pid_, lock_addr, bytes) != MemoryAccess::kOk) return std::nullopt;
    std::memcpy(&raw, bytes.data(), sizeof(raw));
    std::uint64_t position = 0;
    std::uint64_t size = 0;
    if (raw.whence == SEEK_CUR) position = fdPosition(pid_, fd).value_or(0);
    if (raw.whence == SEEK_END) {
      struct stat st {};
      const auto path = "/proc/" + std::to_string(pid_.value) + "/fd/" + std::to_string(fd);
      if (::stat(path.c_str(), &st) == 0) size = static_cast<std::uint64_t>(st.st_size);
    }
    return fcntlLockRequest(ofd, FlockArgument{raw.type, raw.whence, raw.start, raw.len}, position,
                            size);
  }

  WaitObject fileLock(int fd, const std::optional<LockRequest>& request) {
    WaitObject w;
    w.type = ObjectType::kFileLock;
    auto target = readFdTarget(pid_, fd);
    if (!target) {
      w.status = ObjectStatus::kError;
      w.name = "fd " + std::to_string(fd);
      return w;
    }
    w.key = target->inode;
    auto resolved = resolveFileLockWait(pid_, *target, request, context_.locks(), context_.fds());
    w.name = resolved.name;
    w.detail = resolved.found ? resolved.detail : "the blocked request is not in /proc/locks";
    w.owner_processes = std::move(resolved.holders);
    w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
    return w;
  }

  WaitObject fdWait(int fd, bool reading) {
    auto target = readFdTarget(pid_, fd);
    if (!target) {
      auto w = noOwner(ObjectType::kUnknown, "fd " + std::to_string(fd), "descriptor not readable");
      w.status = ObjectStatus::kError;
      return w;
    }
    using Kind = FdTarget::Kind;
    switch (target->kind) {
      case Kind::kPipe:
      case Kind::kFifo: {
        WaitObject w;
        w.type = ObjectType::kPipe;
        w.name = target->link;
        w.key = target->inode;
        // A reader waits for whoever can write, a writer for whoever can read.
        w.owner_processes = context_.fds().holders(
            *target, reading ? FdHolderIndex::Access::kWritable : FdHolderIndex::Access::kReadable);
        w.detail = reading ? "read on an empty pipe; the holders of its write end can end it"
                           : "write to a full pipe; the holders of its read end can end it";
        w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
        return w;
      }
      case Kind::kSocket: {
        const auto peer = unixPeerInode(target->inode);
        if (!peer) {
          return noOwner(ObjectType::kSocketIo, target->link,
                         reading ? "receive on a socket" : "send on a socket");
        }
        WaitObject w;
        w.type = ObjectType::kUnixSocket;
        w.key = target->inode;
        FdTarget peer_target;
        peer_target.kind = Kind::kSocket;
        peer_target.link = "socket:[" + std::to_string(*peer) + "]";
        w.name = target->link + " <-> " + peer_target.link;
        w.owner_processes = context_.fds().holders(peer_target, FdHolderIndex::Access::kAny);
        w.detail = reading ? "receive on a connected Unix socket; the peer's holders can end it"
                           : "send on a full Unix socket; the peer's holders can end it";
        w.status = w.owner_processes.empty() ? ObjectStatus::kUnknown : ObjectStatus::kOwned;
        return w;
      }
      case Kind::kEventfd:
        return noOwner(ObjectType::kEventfd, target->link, "eventfd: any holder may signal it");
      case Kind::kSignalfd:
        return noOwner(ObjectType::kSignalWait, target->link, "waiting for a signal");
      case Kind::kTimerfd:
        return noOwner(ObjectType::kSleep, target->link, "waiting for a timer");
      default:
        return noOwner(ObjectType::kUnknown, target->link, reading ? "read" : "write");
    }
  }

  SampleContext& context_;
  Pid pid_;
  int task_fd_;
  TaskList& tasks_;
};

/// A kernel thread runs only in the kernel: its syscall file says nothing (all zeros), so it is
/// named for what it is, with its wait channel, instead of a made-up system call.
void markKernelThreads(std::vector<TaskReading>& raws, int task_fd) {
  for (auto& raw : raws) {
    if (isExited(raw.sample) || raw.sample.state == RunState::kRunning) continue;
    raw.syscall.reset();
    const std::string wchan = readWchan(task_fd, raw.sample.id.tid.value);
    raw.sample.status = ObjectStatus::kBlocked;
    raw.sample.wait =
        noOwner(ObjectType::kKernelWait, wchan.empty() || wchan == "0" ? "kernel thread" : wchan,
                "a kernel thread: it runs only in the kernel, there is nothing to "
                "analyse in user space");
  }
}

/// A thread that exited between the listing and its read is simply no longer there.
void dropExited(std::vector<TaskReading>& raws) {
  std::erase_if(raws, [](const TaskReading& r) { return isExited(r.sample); });
}

}  // namespace

const std::vector<LockEntry>& SampleContext::locks() {
  if (!locks_) {
    std::vector<char> buf(1 << 20);
    const long n = readSmallFile(AT_FDCWD, "/proc/locks", buf);
    locks_ = n > 0 ? parseLocks(std::string_view(buf.data(), static_cast<std::size_t>(n)))
                   : std::vector<LockEntry>{};
  }
  return *locks_;
}

std::optional<Pid> SampleContext::processOfThread(std::int32_t tid) {
  if (auto it = tgid_cache_.find(tid); it != tgid_cache_.end()) return it->second;
  std::optional<Pid> out;
  std::array<char, 4096> buf{};
  const auto path = "/proc/" + std::to_string(tid) + "/status";
  const long n = readSmallFile(AT_FDCWD, path.c_str(), buf);
  if (n > 0) {
    if (auto tgid =
            parseStatusField(std::string_view(buf.data(), static_cast<std::size_t>(n)), "Tgid")) {
      out = Pid{static_cast<std::int32_t>(*tgid)};
    }
  }
  tgid_cache_.emplace(tid, out);
  return out;
}

bool ProcessReader::isKernelThread(Pid pid) {
  auto proc_fd = openProcessDirectory(pid);
  if (!proc_fd) return false;
  auto identity = readProcessHeader(proc_fd->get(), pid);
  return identity.ok() && isKernelThreadFlags(identity->flags);
}

Result<ProcessSample> ProcessReader::read(Pid pid, std::span<const Tid> only) {
  auto proc_fd = openProcessDirectory(pid);
  if (!proc_fd) return proc_fd.error();
  auto identity = readProcessHeader(proc_fd->get(), pid);
  if (!identity) return identity.error();
  UniqueFd task_fd(::openat(proc_fd->get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return noSuchProcess(pid);
  TaskList tasks(task_fd.get());

  std::vector<TaskReading> raws;
  if (!only.empty()) {
    for (const auto tid : only) raws.push_back(readTask(task_fd.get(), pid, tid.value));
  } else {
    raws.reserve(tasks.all().size());
    for (const auto tid : tasks.all()) raws.push_back(readTask(task_fd.get(), pid, tid));
    dropExited(raws);
  }
  if (isKernelThreadFlags(identity->flags)) {
    markKernelThreads(raws, task_fd.get());
  } else {
    WaitResolver(context_, pid, task_fd.get(), tasks).resolve(raws);
  }
  // Only a thread waiting on an owner can be part of a cycle and need the run count that
  // confirms one; reading it for every idle thread would add a third of the cost of a sample.
  for (auto& raw : raws) {
    const auto& w = raw.sample.wait;
    if (!only.empty() || (w && w->status == ObjectStatus::kOwned)) {
      raw.sample.context_switches = readRunCount(task_fd.get(), raw.sample.id.tid.value);
    }
  }

  // The pid may have been reused while we read: the start time tells.
  auto after = readProcessHeader(proc_fd->get(), pid);
  if (!after || after->start_time != identity->start_time) return exitedDuringRead(pid);
  ProcessSample out;
  out.pid = pid;
  out.name = identity->name;
  out.start_time = identity->start_time;
  out.threads.reserve(raws.size());
  for (auto& raw : raws) out.threads.push_back(std::move(raw.sample));
  return out;
}

Result<ProcessSample> ProcessReader::readCached(Pid pid, ThreadCache& cache,
                                                TaskstatsClient* taskstats) {
  const bool full = cache.samples_ % ThreadCache::kFullRefreshEvery == 0;
  const bool owners = cache.samples_ % ThreadCache::kOwnersRefreshEvery == 0;
  if (!cache.task_fd_.valid()) {
    cache.clear();
    auto proc_fd = openProcessDirectory(pid);
    if (!proc_fd) return proc_fd.error();
    cache.task_fd_ = UniqueFd(::openat(proc_fd->get(), "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    cache.stat_fd_ = UniqueFd(::openat(proc_fd->get(), "stat", O_RDONLY | O_CLOEXEC));
    if (!cache.task_fd_.valid() || !cache.stat_fd_.valid()) {
      cache.task_fd_.reset();
      return noSuchProcess(pid);
    }
  }
  // Everything below reads through descriptors opened on this very process: once it is gone
  // they fail, and a new process that takes over the pid is out of their reach. The process's
  // own stat (which sums over all its threads) is read only when the cache starts and on full
  // refreshes, for the name.
  const int task_fd = cache.task_fd_.get();
  if (full || cache.name_.empty()) {
    auto stat = readStatAt(cache.stat_fd_.get());
    if (!stat) {
      cache.task_fd_.reset();
      return noSuchProcess(pid);
    }
    if (cache.start_time_ != stat->start_time) {
      const auto samples = cache.samples_;
      cache.clear();
      cache.samples_ = samples;
      cache.start_time_ = stat->start_time;
    }
    cache.name_ = stat->comm;
  }
  ++cache.samples_;

  // The task directory's link count is 2 + the number of threads, without walking them; it
  // falls to 2 once the process is gone.
  struct stat task_stat {};
  const bool counted = ::fstat(task_fd, &task_stat) == 0 && task_stat.st_nlink > 2;
  const std::size_t thread_count = counted ? task_stat.st_nlink - 2 : 0;

  // Activity is read before anything else, like the run counts below: if a thread runs after
  // it, the next sample sees it move.
  const bool refresh = full || cache.samples_ % ThreadCache::kOwnersRefreshEvery == 1;
  const auto activity =
      taskstats != nullptr ? taskstats->activity(pid) : std::optional<ProcessActivity>();
  if (!refresh && activity && cache.activity_ == activity && cache.all_blocked_ &&
      !cache.threads_.empty() && counted && thread_count == cache.threads_.size()) {
    // No thread ran since the last sample, which found them all blocked: it still holds.
    ProcessSample out;
    out.pid = pid;
    out.name = cache.name_;
    out.start_time = cache.start_time_;
    out.threads.reserve(cache.threads_.size());
    for (const auto& [tid, entry] : cache.threads_) {
      if (entry.last) out.threads.push_back(*entry.last);
    }
    cache.reused_ = out.threads.size();
    cache.reread_ = 0;
    return out;
  }
  cache.activity_ = activity;

  // The run count is read before anything else: if the thread runs after it, the next sample
  // sees the count move and reads the thread again.
  std::vector<ThreadSample> reused;
  std::vector<TaskReading> raws;
  bool all_known_alive = true;
  auto visit = [&](std::int32_t tid, ThreadCache::Entry& entry) {
    const auto runs = cache.runs(task_fd, tid, entry);
    if (!runs) all_known_alive = false;
    const bool stale_owners =
        owners && entry.last && entry.last->wait && !entry.last->wait->owner_processes.empty();
    if (!full && !stale_owners && runs && entry.runs == runs && entry.last &&
        entry.last->status == ObjectStatus::kBlocked) {
      reused.push_back(*entry.last);
      return;
    }
    entry.runs = runs;
    auto raw = readTask(task_fd, pid, tid);
    raw.sample.context_switches = runs;
    raws.push_back(std::move(raw));
  };
  TaskList tasks(task_fd);
  // Same number of threads, and every known one still there: no thread came or went, so the
  // task directory need not be listed again.
  const bool same_threads = !full && counted && thread_count == cache.threads_.size();
  if (same_threads) {
    reused.reserve(cache.threads_.size());
    for (auto& [tid, entry] : cache.threads_) visit(tid, entry);
  }
  if (!same_threads || !all_known_alive) {
    reused.clear();
    raws.clear();
    const auto& tids = tasks.all();
    for (const auto tid : tids) visit(tid, cache.threads_[tid]);
    // A thread gone takes its kept-open descriptor with it.
    std::erase_if(cache.threads_, [&](const auto& item) {
      return !std::binary_search(tids.begin(), tids.end(), item.first);
    });
  }
  dropExited(raws);
  cache.reused_ = reused.size();
  cache.reread_ = raws.size();
  WaitResolver(context_, pid, task_fd, tasks).resolve(raws);
  for (const auto& raw : raws) {
    cache.threads_[raw.sample.id.tid.value].last = raw.sample;
    // The process's name is its main thread's: a main thread read again (as one that execs
    // is, since it ran) brings a new name at once, not at the next full refresh.
    if (raw.sample.id.tid.value == pid.value && !isExited(raw.sample))
      cache.name_ = raw.sample.name;
  }

  if (reused.empty() && raws.empty()) {
    cache.task_fd_.reset();
    return exitedDuringRead(pid);
  }
  ProcessSample out;
  out.pid = pid;
  out.name = cache.name_;
  out.start_time = cache.start_time_;
  cache.all_blocked_ =
      std::all_of(raws.begin(), raws.end(),
                  [](const TaskReading& r) { return r.sample.status == ObjectStatus::kBlocked; }) &&
      std::all_of(reused.begin(), reused.end(),
                  [](const ThreadSample& t) { return t.status == ObjectStatus::kBlocked; });
  // Both lists are in tid order already (the cache is ordered, so is the task listing).
  out.threads.reserve(reused.size() + raws.size());
  auto r = raws.begin();
  for (auto& sample : reused) {
    for (; r != raws.end() && r->sample.id < sample.id; ++r)
      out.threads.push_back(std::move(r->sample));
    out.threads.push_back(std::move(sample));
  }
  for (; r != raws.end(); ++r) out.threads.push_back(std::move(r->sample));
  return out;
}

ThreadCache::~ThreadCache() = default;

void ThreadCache::clear() {
  threads_.clear();
  samples_ = 0;
  activity_.reset();
  all_blocked_ = false;
}

std::size_t ThreadCache::openDescriptors() const {
  return static_cast<std::size_t>(std::count_if(
      threads_.begin(), threads_.end(), [](const auto& e) { return e.second.schedstat.valid(); }));
}

std::optional<std::uint64_t> ThreadCache::runs(int task_fd, std::int32_t tid, Entry& entry) {
  if (!entry.schedstat.valid()) {
    std::array<char, 32> path{};
    std::snprintf(path.data(), path.size(), "%d/schedstat", tid);
    entry.schedstat = BudgetedFd::openAt(DescriptorBudget::process(), task_fd, path.data());
    // Out of budget (or gone): a fresh descriptor for this one read.
    if (!entry.schedstat.valid()) return readRunCount(task_fd, tid);
  }
  return readRunCount(entry.schedstat.get());
}

}  // namespace wctmon::linux_platform
