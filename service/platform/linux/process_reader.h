#pragma once

#include <span>

#include "model/ids.h"
#include "model/result.h"
#include "model/snapshot.h"
#include "platform/linux/proc_wait_lookup.h"
#include "platform/linux/taskstats.h"
#include "platform/linux/thread_cache.h"

namespace wctmon::linux_platform {

/// Reads one process from /proc and its memory, without stopping it: every thread's state
/// (task_reader.h), what it waits on and who owns that (wait_classifier.h), from the last
/// reading where a thread cannot have changed (thread_cache.h).
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
  void classify(Pid pid, std::uint64_t start_time, int task_fd, TaskList& tasks,
                std::span<TaskReading> threads);

  SampleContext& context_;
};

}  // namespace wctmon::linux_platform
