#pragma once

#include <mutex>
#include <unordered_map>

#include "core/ports/process_catalog.h"

namespace wctmon::linux_platform {

/// Processes from /proc/PID/{stat,exe,cmdline}; kernel threads are left out. A listing reads
/// only `stat` of processes it has seen before (same pid, start time and comm): the executable
/// and command line of a process change only by exec, which keeps the pid and the start time but
/// sets a new comm, so a changed comm means reading them again. An exec into a program of the
/// same comm is seen at the next full listing, every kRefreshEvery listings.
class LinuxProcessCatalog final : public ProcessCatalog {
 public:
  static constexpr std::uint64_t kRefreshEvery = 10;

  /// Reads the boot time once: a process's start time counts clock ticks from it.
  LinuxProcessCatalog();

  [[nodiscard]] std::vector<ProcessInfo> list(bool with_cmdline) override;
  [[nodiscard]] std::optional<ProcessInfo> get(Pid pid, bool with_cmdline) override;

 private:
  /// Seconds since the epoch; unset when /proc/stat could not say (no wall-clock start times).
  std::optional<std::int64_t> boot_time_;
  long ticks_per_second_ = 100;
  std::mutex mutex_;
  std::unordered_map<std::int32_t, ProcessInfo> known_;
  std::uint64_t listings_ = 0;
};

}  // namespace wctmon::linux_platform
