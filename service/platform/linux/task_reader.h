#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/ids.h"
#include "model/result.h"
#include "model/snapshot.h"
#include "os/unique_fd.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {

/// One thread as its task files show it, before what it waits on is classified.
struct TaskReading {
  /// Id, name, run state and status (Running, Blocked, NoAccess, Error; exited: isExited).
  ThreadSample sample;
  /// Where a sleeping thread is: in which system call with which arguments, or outside one.
  std::optional<SyscallState> syscall;
  /// The kernel function it sleeps in, read only where the syscall file does not tell
  /// (uninterruptible sleep, or asleep outside a system call).
  std::string wchan;
};

/// Reads thread `tid` of process `pid` from the task directory `task_fd` (/proc/PID/task): its
/// stat, and for a thread that sleeps or is stopped its syscall file and, where that does not
/// tell, its wait channel. A thread that is gone comes back exited (isExited).
[[nodiscard]] TaskReading readTask(int task_fd, Pid pid, std::int32_t tid);

/// The times thread `tid` was scheduled in (its schedstat file): unchanged between two reads,
/// the thread did not run in between.
[[nodiscard]] std::optional<std::uint64_t> readRunCount(int task_fd, std::int32_t tid);

/// The CPU time and run count read from a kept-open schedstat descriptor.
[[nodiscard]] std::optional<SchedTimes> readSchedTimes(int schedstat_fd);

/// The CPU time and run count of thread `tid` (its schedstat).
[[nodiscard]] std::optional<SchedTimes> readSchedTimes(int task_fd, std::int32_t tid);

/// How long each thread has not run, from the scheduler's clock: `se.exec_start` of its sched
/// file (when it last ran) against the same field of our own read now on the CPU the thread last
/// ran on (each CPU has a clock of its own). nullopt for a thread that cannot be read.
[[nodiscard]] std::vector<std::optional<std::chrono::milliseconds>> readWaitTimes(
    std::span<const ThreadRef> threads);

/// The kernel function thread `tid` sleeps in; empty when unreadable ("0" when none).
[[nodiscard]] std::string readWchan(int task_fd, std::int32_t tid);

/// The children of a process, from the children file of each of its threads `tids` (a child
/// belongs to the thread that forked it); sorted, without repeats.
[[nodiscard]] std::vector<Pid> readChildren(int task_fd, std::span<const std::int32_t> tids);

/// The thread ids in a task directory, sorted.
[[nodiscard]] std::vector<std::int32_t> listTasks(int task_fd);

/// Each thread of a task directory as its own PID namespace numbers it (the last number of its
/// NSpid) and as the service does: {inner, host}, the same in the service's own namespace.
[[nodiscard]] std::vector<std::pair<std::int32_t, std::int32_t>> namespaceTids(int task_fd);

/// The threads of one process: listed in full when the whole process is read, probed one by one
/// when only a few are asked about (listing thousands of threads to confirm two is waste).
class TaskList {
 public:
  explicit TaskList(int task_fd) : task_fd_(task_fd) {}

  /// Every thread, sorted; listed on first use.
  [[nodiscard]] const std::vector<std::int32_t>& all();
  /// Whether `tid` is a thread of the process.
  [[nodiscard]] bool contains(std::int32_t tid);

 private:
  int task_fd_;
  bool listed_ = false;
  std::vector<std::int32_t> tids_;
  std::unordered_map<std::int32_t, bool> probed_;
};

/// Opens the directory of process `pid` under `proc_root` (a directory laid out as /proc) for
/// reads relative to it. Fails with kAccessDenied when refused, kNoSuchProcess when it is gone.
[[nodiscard]] Result<UniqueFd> openProcessDirectory(Pid pid, std::string_view proc_root = "/proc");

/// The error of a process that is gone.
[[nodiscard]] Error noSuchProcess(Pid pid);

/// The error of a process that exited (or was replaced) while it was read.
[[nodiscard]] Error exitedDuringRead(Pid pid);

/// A process that has exited but is still listed, its exit status not yet collected by its
/// parent: nothing of it runs or waits any more. kNoSuchProcess, as an exited process is.
[[nodiscard]] Error zombieProcess(Pid pid, const std::string& name, std::int32_t ppid);

/// Whether the process of the task directory `task_fd` (/proc/PID/task), whose stat says zombie,
/// has really exited: its main thread alone is left. One whose main thread ended (pthread_exit)
/// while other threads run shows the main thread's zombie state too, and is alive.
[[nodiscard]] bool zombieHasExited(int task_fd);

/// The id to read process `pid`'s memory and process-wide files (maps, cmdline, exe, root, fd)
/// through: `pid` itself, or, once its main thread has ended while others run, one of those,
/// whose /proc/TID shows the same memory and files (the main thread's show none any more).
[[nodiscard]] Pid liveTaskOf(Pid pid);

/// A process as its own stat file shows it.
struct ProcessHeader {
  std::string name;
  std::uint64_t start_time = 0;
  std::uint32_t flags = 0;  // PF_*
  RunState state = RunState::kUnknown;
  std::int32_t ppid = 0;
};

/// Whether a process's PF_* flags mark a kernel thread.
[[nodiscard]] bool isKernelThreadFlags(std::uint32_t flags);

/// Reads the process of the process directory `proc_fd` (/proc/PID) from its main thread's stat
/// file (task/PID/stat). Fails with kAccessDenied when /proc refuses it, kNoSuchProcess when it
/// is gone.
[[nodiscard]] Result<ProcessHeader> readProcessHeader(int proc_fd, Pid pid);

/// Parses what a kept-open stat descriptor reads now; nullopt once its process is gone.
[[nodiscard]] std::optional<StatFields> readStatAt(int stat_fd);

/// The stat file of process `pid`, by path; nullopt when it is gone.
[[nodiscard]] std::optional<StatFields> readProcessStat(Pid pid);

}  // namespace wctmon::linux_platform
