#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/ids.h"
#include "model/result.h"
#include "model/snapshot.h"
#include "os/unique_fd.h"
#include "platform/linux/descriptor_budget.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/taskstats.h"

namespace wctmon::linux_platform {

/// What a reader keeps between samples of one process: per thread a kept-open schedstat
/// descriptor (within a process-wide budget of descriptors) and the last reading. A thread whose
/// run count has not moved has not run since, so its state and wait are the ones read before;
/// only threads that ran, or are new, are read again. What can change without waking a waiter is
/// refreshed on a slower beat: every kOwnersRefreshEvery-th sample the threads waiting on
/// objects held by whole processes (a pipe's other holders come and go), every
/// kFullRefreshEvery-th sample everything (thread names).
///
/// A sample goes begin() → unchanged() → sweep() → (the caller reads the stale threads and
/// classifies their waits) → complete(). One sample at a time.
class ThreadCache final {
 public:
  static constexpr std::uint64_t kOwnersRefreshEvery = 10;
  static constexpr std::uint64_t kFullRefreshEvery = 60;

  /// A thread to read again, with the run count, CPU time and run-queue time read just before.
  struct StaleThread {
    std::int32_t tid = 0;
    std::optional<std::uint64_t> runs;
    std::optional<std::chrono::nanoseconds> cpu_time{};
    std::optional<std::chrono::nanoseconds> queued_time{};
  };

  /// What a sweep of the threads found, both lists in tid order.
  struct Sweep {
    /// The last readings of the threads that cannot have changed.
    std::vector<ThreadSample> reused;
    /// The threads to read again: new, ran since, or due for a refresh.
    std::vector<StaleThread> stale;
  };

  /// A cache of a process of /proc, its descriptors within this process's budget.
  ThreadCache();
  /// A cache of a process of `proc_root` (a directory laid out as /proc), its descriptors within
  /// `budget`.
  ThreadCache(std::string proc_root, DescriptorBudget& budget);
  ~ThreadCache();
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  /// Starts a sample of `pid`: opens its task directory and stat file on first use (and again
  /// after the process was found gone: a new process under the pid starts afresh) and reads its
  /// name and start time when due. Returns the kept-open task directory; fails with
  /// kNoSuchProcess when the process is gone, kAccessDenied when /proc refuses it.
  [[nodiscard]] Result<int> begin(Pid pid);

  /// With the process's activity since the last sample (taskstats; nullopt when unknown): the
  /// last sample, whole, when nothing can have changed since (no thread ran, all were blocked,
  /// the same threads, no refresh due); otherwise nullopt, and the activity is kept for the next.
  [[nodiscard]] std::optional<ProcessSample> unchanged(
      const std::optional<ProcessActivity>& activity);

  /// Reads every thread's run count, through its kept-open descriptor, and sorts the threads into
  /// those whose last reading still holds and those to read again. `tasks` is listed only when
  /// threads came or went; threads that are gone are forgotten.
  [[nodiscard]] Sweep sweep(TaskList& tasks);

  /// Ends the sample with the `reused` readings of the sweep and the threads read again
  /// (`reread`: exited ones dropped, waits classified, each with the run count of its
  /// StaleThread as context_switches), which are kept for the next sample. Returns every thread
  /// in tid order; fails with kNoSuchProcess when none is left.
  [[nodiscard]] Result<ProcessSample> complete(std::vector<ThreadSample> reused,
                                               std::span<TaskReading> reread);

  /// Threads whose last reading was reused by the latest sample, and those read again.
  [[nodiscard]] std::size_t reused() const { return reused_; }
  [[nodiscard]] std::size_t reread() const { return reread_; }
  /// The schedstat descriptors kept open.
  [[nodiscard]] std::size_t openDescriptors() const;

  /// The start time of the process the cache holds (0 before its first read).
  [[nodiscard]] std::uint64_t startTime() const { return start_time_; }

 private:
  struct Entry {
    BudgetedFd schedstat;
    std::optional<std::uint64_t> runs;
    std::optional<ThreadSample> last;
  };
  /// Reads the run count and CPU time of `tid`, through its kept-open descriptor when the
  /// budget allows.
  std::optional<SchedTimes> times(std::int32_t tid, Entry& entry);
  /// Forgets every thread and the process's activity.
  void clear();
  /// Forgets the process: the next sample opens it anew.
  void close();
  [[nodiscard]] ProcessSample header() const;

  std::string proc_root_;
  DescriptorBudget& budget_;
  Pid pid_{};
  std::uint64_t start_time_ = 0;
  /// The title the process gave itself, read with its name.
  std::string title_;
  [[nodiscard]] std::string readTitle(Pid pid) const;
  std::string name_;
  std::uint64_t samples_ = 0;
  /// Whether the current sample re-reads every thread / the threads waiting on process owners.
  bool full_ = false;
  bool owners_ = false;
  /// The number of threads the task directory's link count gives, when it gives one.
  std::optional<std::size_t> thread_count_;
  /// The process's activity when the last sample began, and whether that sample found every
  /// thread blocked: then an unchanged activity means nothing can have changed.
  std::optional<ProcessActivity> activity_;
  bool all_blocked_ = false;
  // The process's task directory and stat file, kept open: reads through them fail once the
  // process is gone, so a reused pid can never be mistaken for it.
  UniqueFd task_fd_;
  UniqueFd stat_fd_;
  std::size_t reused_ = 0;
  std::size_t reread_ = 0;
  // Ordered by tid: samples come out sorted without a sort.
  std::map<std::int32_t, Entry> threads_;
};

}  // namespace wctmon::linux_platform
