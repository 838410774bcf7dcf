#pragma once

#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/ports/wait_chain_source.h"
#include "model/ids.h"
#include "model/result.h"
#include "model/snapshot.h"
#include "platform/linux/descriptor_budget.h"
#include "platform/linux/proc_text.h"
#include "platform/linux/proc_wait_lookup.h"
#include "platform/linux/task_reader.h"
#include "platform/linux/taskstats.h"
#include "platform/linux/unique_fd.h"

namespace wctmon::linux_platform {

/// What a reader keeps between samples of one process: per thread a kept-open schedstat
/// descriptor (within a process-wide budget of descriptors) and the last reading. A thread whose
/// run count has not moved has not run since, so its state and wait are the ones read before;
/// only threads that ran, or are new, are read again. What can change without waking a waiter is
/// refreshed on a slower beat: every kOwnersRefreshEvery-th sample the threads waiting on
/// objects held by whole processes (a pipe's other holders come and go), every
/// kFullRefreshEvery-th sample everything (thread names).
class ThreadCache final : public SampleCache {
 public:
  static constexpr std::uint64_t kOwnersRefreshEvery = 10;
  static constexpr std::uint64_t kFullRefreshEvery = 60;

  ThreadCache() = default;
  ~ThreadCache() override;
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  /// Threads whose last reading was reused by the latest sample, and those read again.
  [[nodiscard]] std::size_t reused() const { return reused_; }
  [[nodiscard]] std::size_t reread() const { return reread_; }
  [[nodiscard]] std::size_t openDescriptors() const;

 private:
  friend class ProcessReader;
  struct Entry {
    BudgetedFd schedstat;
    std::optional<std::uint64_t> runs;
    std::optional<ThreadSample> last;
  };
  /// Reads the run count of `tid`, through its kept-open descriptor when the budget allows.
  std::optional<std::uint64_t> runs(int task_fd, std::int32_t tid, Entry& entry);
  void clear();

  std::uint64_t start_time_ = 0;
  std::string name_;
  std::uint64_t samples_ = 0;
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

/// Reads one process from /proc and its memory, without stopping it: every thread's state,
/// what it waits on, and who owns that.
class ProcessReader {
 public:
  explicit ProcessReader(SampleContext& context) : context_(context) {}

  /// Reads every thread of `pid`, or only the threads in `only`; a thread of `only` that is
  /// gone comes back with status Error. Fails with kNoSuchProcess when the process is gone or
  /// was replaced during the read, kAccessDenied when /proc refuses it.
  [[nodiscard]] Result<ProcessSample> read(Pid pid, std::span<const Tid> only = {});

  /// Reads every thread of `pid`, reusing what `cache` kept from the previous sample; with
  /// `taskstats`, a process none of whose threads ran since is not read at all.
  [[nodiscard]] Result<ProcessSample> readCached(Pid pid, ThreadCache& cache,
                                                 TaskstatsClient* taskstats = nullptr);

  /// Whether `pid` is a kernel thread (nothing to analyse in user space).
  [[nodiscard]] static bool isKernelThread(Pid pid);

 private:
  /// Sets the waits of the blocked threads among `threads` of `pid`.
  void classify(Pid pid, int task_fd, TaskList& tasks, std::span<TaskReading> threads);

  SampleContext& context_;
};

}  // namespace wctmon::linux_platform
