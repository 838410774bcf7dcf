#pragma once

#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "platform/linux/fd_resolver.h"
#include "platform/linux/proc_text.h"

namespace wctmon::linux_platform {

/// What the reads of one sample share: the system-wide indexes, built only when a wait needs
/// them (a pipe, socket or file lock) and at most once.
class SampleContext {
 public:
  [[nodiscard]] FdHolderIndex& fds() { return fds_; }
  [[nodiscard]] const std::vector<LockEntry>& locks();
  /// The process a thread id belongs to, from /proc/TID/status; nullopt when no such thread.
  [[nodiscard]] std::optional<Pid> processOfThread(std::int32_t tid);

 private:
  FdHolderIndex fds_;
  std::optional<std::vector<LockEntry>> locks_;
  std::unordered_map<std::int32_t, std::optional<Pid>> tgid_cache_;
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

  /// Whether `pid` is a kernel thread (nothing to analyse in user space).
  [[nodiscard]] static bool isKernelThread(Pid pid);

 private:
  SampleContext& context_;
};

}  // namespace wctmon::linux_platform
