#include "platform/linux/task_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <ctime>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace wctmon::linux_platform {
namespace {

constexpr std::uint32_t kPfKthread = 0x00200000;

/// "TID/FILE", the path of one task file relative to the task directory (after `prefix`, relative
/// to another). Made for two files of every thread of every sample: without snprintf's format
/// parsing.
struct TaskPath {
  TaskPath(std::int32_t tid, std::string_view file, std::string_view prefix = {}) {
    char* const last = text.data() + text.size() - 1;  // the terminating NUL stays
    char* at = text.data() + prefix.copy(text.data(), text.size() / 2);
    at = std::to_chars(at, last, tid).ptr;
    if (at == last) return;
    *at++ = '/';
    file.copy(at, static_cast<std::size_t>(last - at));
  }
  std::array<char, 32> text{};
};

std::string_view textOf(const std::span<const char> buf, long n) {
  return {buf.data(), static_cast<std::size_t>(n)};
}

TaskReading exited(TaskReading reading) {
  reading.sample.status = ObjectStatus::kError;
  reading.sample.name = kExitedThreadName;
  return reading;
}

double monotonicMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

/// `se.exec_start` of the calling thread less the monotonic clock, both read now, on the CPU the
/// thread runs on.
std::optional<double> ownSchedClockOffset() {
  std::array<char, 4096> buf{};
  const long n = readSmallFile(AT_FDCWD, "/proc/thread-self/sched", buf);
  if (n <= 0) return std::nullopt;
  const auto now = parseSchedExecStart(textOf(buf, n));
  if (!now) return std::nullopt;
  return *now - monotonicMs();
}

/// The scheduler clock of CPU `cpu` (the clock of `se.exec_start`) less the monotonic clock.
/// Each CPU's clock leaves out that CPU's own interrupt and steal time, so on a virtual machine
/// two CPUs' clocks drift apart by seconds: a thread's last run is compared with now on the CPU
/// it ran on. The calling thread moves onto that CPU for a moment to read it; an offset is kept
/// for a second, in which it drifts by less than a percent of that. A CPU the caller may not run
/// on is read as its own CPU is, nearly always close enough (never a wait time below zero).
std::optional<double> schedClockOffset(int cpu) {
  using Clock = std::chrono::steady_clock;
  struct Kept {
    double offset;
    Clock::time_point at;
  };
  static std::mutex mutex;
  static std::unordered_map<int, Kept> kept;
  const auto now = Clock::now();
  {
    std::lock_guard lock(mutex);
    if (auto it = kept.find(cpu); it != kept.end() && now - it->second.at < std::chrono::seconds(1))
      return it->second.offset;
  }
  cpu_set_t saved;
  cpu_set_t only;
  CPU_ZERO(&only);
  if (cpu < 0 || cpu >= CPU_SETSIZE || ::sched_getaffinity(0, sizeof saved, &saved) != 0) {
    return ownSchedClockOffset();
  }
  CPU_SET(cpu, &only);
  if (::sched_setaffinity(0, sizeof only, &only) != 0) return ownSchedClockOffset();
  auto offset = ::sched_getcpu() == cpu ? ownSchedClockOffset() : std::nullopt;
  ::sched_setaffinity(0, sizeof saved, &saved);
  if (!offset) return ownSchedClockOffset();
  std::lock_guard lock(mutex);
  kept[cpu] = Kept{*offset, now};
  return offset;
}
}  // namespace

TaskReading readTask(int task_fd, Pid pid, std::int32_t tid) {
  TaskReading out;
  out.sample.id = ThreadRef{pid, Tid{tid}};
  std::array<char, 1024> buf{};

  long n = readSmallFile(task_fd, TaskPath(tid, "stat").text.data(), buf);
  auto stat = n > 0 ? parseStat(textOf(buf, n)) : std::nullopt;
  if (!stat) return exited(std::move(out));
  out.sample.name = std::move(stat->comm);
  out.sample.state = stat->state;

  switch (out.sample.state) {
    case RunState::kRunning:
      out.sample.status = ObjectStatus::kRunning;
      return out;
    case RunState::kSleeping:
    case RunState::kDiskSleep:
    case RunState::kStopped:
    case RunState::kTraced:
      break;
    default:
      out.sample.status = ObjectStatus::kUnknown;
      return out;
  }

  n = readSmallFile(task_fd, TaskPath(tid, "syscall").text.data(), buf);
  if (n == -EACCES || n == -EPERM) {
    out.sample.status = ObjectStatus::kNoAccess;
    return out;
  }
  // Gone between its stat and its syscall file.
  if (n == -ESRCH || n == -ENOENT) return exited(std::move(out));
  if (n <= 0) {
    out.sample.status = ObjectStatus::kError;
    return out;
  }
  out.syscall = parseSyscall(textOf(buf, n));
  if (!out.syscall) {
    out.sample.status = ObjectStatus::kError;
    return out;
  }
  if (out.syscall->kind == SyscallState::Kind::kRunning) {
    out.sample.status = ObjectStatus::kRunning;
    return out;
  }
  out.sample.status = ObjectStatus::kBlocked;
  if (out.sample.state == RunState::kDiskSleep ||
      out.syscall->kind == SyscallState::Kind::kNotInSyscall) {
    out.wchan = readWchan(task_fd, tid);
  }
  return out;
}

std::optional<std::uint64_t> readRunCount(int task_fd, std::int32_t tid) {
  std::array<char, 256> buf{};
  const long n = readSmallFile(task_fd, TaskPath(tid, "schedstat").text.data(), buf);
  if (n <= 0) return std::nullopt;
  return parseSchedstatRuns(textOf(buf, n));
}

std::optional<SchedTimes> readSchedTimes(int task_fd, std::int32_t tid) {
  std::array<char, 256> buf{};
  const long n = readSmallFile(task_fd, TaskPath(tid, "schedstat").text.data(), buf);
  if (n <= 0) return std::nullopt;
  return parseSchedstat(textOf(buf, n));
}

std::optional<SchedTimes> readSchedTimes(int schedstat_fd) {
  std::array<char, 128> buf{};
  const ssize_t n = ::pread(schedstat_fd, buf.data(), buf.size(), 0);
  if (n <= 0) return std::nullopt;
  return parseSchedstat(textOf(buf, n));
}

std::vector<std::optional<std::chrono::milliseconds>> readWaitTimes(
    std::span<const ThreadRef> threads) {
  std::vector<std::optional<std::chrono::milliseconds>> out(threads.size());
  if (threads.empty()) return out;
  // The files are ~1.5 KB of text each: that is why only threads in reported chains are asked.
  std::array<char, 4096> buf{};
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const auto dir = "/proc/" + std::to_string(threads[i].pid.value) + "/task/" +
                     std::to_string(threads[i].tid.value) + "/";
    long n = readSmallFile(AT_FDCWD, (dir + "sched").c_str(), buf);
    if (n <= 0) continue;
    const auto last_ran = parseSchedExecStart(textOf(buf, n));
    n = readSmallFile(AT_FDCWD, (dir + "stat").c_str(), buf);
    if (!last_ran || n <= 0) continue;
    const auto cpu = parseStatProcessor(textOf(buf, n));
    const auto offset = cpu ? schedClockOffset(*cpu) : std::nullopt;
    if (!offset) continue;
    const double waited = monotonicMs() + *offset - *last_ran;
    if (waited >= 0) out[i] = std::chrono::milliseconds(static_cast<std::int64_t>(waited));
  }
  return out;
}

std::string readWchan(int task_fd, std::int32_t tid) {
  std::array<char, 128> buf{};
  const long n = readSmallFile(task_fd, TaskPath(tid, "wchan").text.data(), buf);
  return n > 0 ? std::string(textOf(buf, n)) : std::string();
}

std::vector<Pid> readChildren(int task_fd, std::span<const std::int32_t> tids) {
  std::vector<Pid> out;
  // Read to its end: a children file gives a page per read (some 700 children), and a server
  // that forked more had the rest, and the last one's number, cut off.
  constexpr std::size_t kMostChildrenText = 8 << 20;
  for (const auto tid : tids) {
    const UniqueFd fd(
        ::openat(task_fd, TaskPath(tid, "children").text.data(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;
    const std::string whole = readAll(fd.get(), kMostChildrenText);
    std::string_view text = whole;
    while (!text.empty()) {
      const auto sp = text.find(' ');
      if (auto child = parseInt(text.substr(0, sp))) {
        out.push_back(Pid{static_cast<std::int32_t>(*child)});
      }
      if (sp == std::string_view::npos) break;
      text.remove_prefix(sp + 1);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::pair<std::int32_t, std::int32_t>> namespaceTids(int task_fd) {
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  for (const auto host : listTasks(task_fd)) {
    std::array<char, 4096> buf{};
    const long n = readSmallFile(task_fd, (std::to_string(host) + "/status").c_str(), buf);
    if (n <= 0) continue;
    const auto status = std::string_view(buf.data(), static_cast<std::size_t>(n));
    // NSpid lists the thread's number in each namespace from the service's down to its own.
    if (const auto inner = numberAt(statusValue(status, "NSpid"), -1)) {
      out.emplace_back(static_cast<std::int32_t>(*inner), host);
    }
  }
  return out;
}

std::vector<std::int32_t> listTasks(int task_fd) {
  std::vector<std::int32_t> out;
  DIR* dir = ::fdopendir(::dup(task_fd));
  if (dir == nullptr) return out;
  // The duplicate shares the offset with a descriptor that may have been listed before.
  ::rewinddir(dir);
  while (const dirent* entry = ::readdir(dir)) {
    if (auto tid = parseInt(entry->d_name)) out.push_back(static_cast<std::int32_t>(*tid));
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::int32_t>& TaskList::all() {
  if (!listed_) {
    tids_ = listTasks(task_fd_);
    listed_ = true;
  }
  return tids_;
}

bool TaskList::contains(std::int32_t tid) {
  if (listed_) return std::binary_search(tids_.begin(), tids_.end(), tid);
  if (auto it = probed_.find(tid); it != probed_.end()) return it->second;
  const bool present = tid > 0 && ::faccessat(task_fd_, std::to_string(tid).c_str(), F_OK, 0) == 0;
  probed_.emplace(tid, present);
  return present;
}

Result<UniqueFd> openProcessDirectory(Pid pid, std::string_view proc_root) {
  const auto path = std::string(proc_root) + "/" + std::to_string(pid.value);
  UniqueFd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) return fd;
  if (errno == EACCES || errno == EPERM) {
    return makeError(ErrorCode::kAccessDenied,
                     "permission denied reading process " + std::to_string(pid.value));
  }
  return noSuchProcess(pid);
}

Error noSuchProcess(Pid pid) {
  return makeError(ErrorCode::kNoSuchProcess, "no such process: " + std::to_string(pid.value));
}

Error exitedDuringRead(Pid pid) {
  return makeError(ErrorCode::kNoSuchProcess,
                   "process " + std::to_string(pid.value) + " exited during the read");
}

bool zombieHasExited(int task_fd) {
  // The task directory's link count is 2 + the number of threads, the zombie main thread among
  // them until the last thread ends.
  struct stat task {};
  return ::fstat(task_fd, &task) != 0 || task.st_nlink <= 3;
}

Pid liveTaskOf(Pid pid) {
  const auto stat = readProcessStat(pid);
  if (!stat || stat->state != RunState::kZombie) return pid;
  const UniqueFd task_fd(::open(("/proc/" + std::to_string(pid.value) + "/task").c_str(),
                                O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!task_fd.valid()) return pid;
  for (const auto tid : listTasks(task_fd.get())) {
    if (tid == pid.value) continue;
    std::array<char, 1024> buf{};
    const long n = readSmallFile(task_fd.get(), (std::to_string(tid) + "/stat").c_str(), buf);
    const auto thread =
        n > 0 ? parseStat(std::string_view(buf.data(), static_cast<std::size_t>(n))) : std::nullopt;
    if (thread && thread->state != RunState::kZombie) return Pid{tid};
  }
  return pid;
}

Error zombieProcess(Pid pid, const std::string& name, std::int32_t ppid) {
  return makeError(ErrorCode::kNoSuchProcess,
                   "process " + std::to_string(pid.value) + " (" + name +
                       ") is a zombie: it has exited, and its parent (pid " + std::to_string(ppid) +
                       ") has not collected its exit status");
}

bool isKernelThreadFlags(std::uint32_t flags) { return (flags & kPfKthread) != 0; }

Result<ProcessHeader> readProcessHeader(int proc_fd, Pid pid) {
  std::array<char, 1024> buf{};
  // The main thread's stat, not the process's: the fields read here (name, state, parent, start
  // time, flags) are the main thread's in both, but the process's also sums the page faults and
  // CPU times of every thread, which the kernel walks them all for (a millisecond at 10,000
  // threads, at each of the four reads of an analysis).
  const long n = readSmallFile(proc_fd, TaskPath(pid.value, "stat", "task/").text.data(), buf);
  if (n == -EACCES || n == -EPERM) {
    return makeError(ErrorCode::kAccessDenied,
                     "permission denied reading process " + std::to_string(pid.value));
  }
  auto stat = n > 0 ? parseStat(textOf(buf, n)) : std::nullopt;
  if (!stat) return noSuchProcess(pid);
  return ProcessHeader{std::move(stat->comm), stat->start_time, stat->flags, stat->state,
                       stat->ppid};
}

std::optional<StatFields> readStatAt(int stat_fd) {
  std::array<char, 1024> buf{};
  const ssize_t n = ::pread(stat_fd, buf.data(), buf.size(), 0);
  if (n <= 0) return std::nullopt;
  return parseStat(textOf(buf, n));
}

std::optional<StatFields> readProcessStat(Pid pid) {
  std::array<char, 1024> buf{};
  const auto path = "/proc/" + std::to_string(pid.value) + "/stat";
  const long n = readSmallFile(AT_FDCWD, path.c_str(), buf);
  if (n <= 0) return std::nullopt;
  return parseStat(textOf(buf, n));
}

}  // namespace wctmon::linux_platform
