#pragma once

#include <compare>
#include <cstdint>
#include <mutex>
#include <optional>

#include "model/ids.h"
#include "os/unique_fd.h"

namespace wctmon::linux_platform {

/// How much the threads of a process (live and exited) have run, all together.
struct ProcessActivity {
  std::uint64_t voluntary_switches = 0;
  std::uint64_t involuntary_switches = 0;
  std::uint64_t user_us = 0;
  std::uint64_t system_us = 0;
  friend bool operator==(const ProcessActivity&, const ProcessActivity&) = default;
};

/// The kernel's per-process accounting over generic netlink (TASKSTATS_CMD_GET by tgid): one
/// round trip tells whether any thread of a process ran at all, where per-thread files would
/// take one read per thread. Needs CAP_NET_ADMIN; without it, or without CONFIG_TASKSTATS,
/// available() is false and callers read per thread. Thread-safe.
class TaskstatsClient {
 public:
  TaskstatsClient();

  [[nodiscard]] bool available() const { return family_ != 0; }

  /// The activity of process `pid`, or nullopt when it is gone or cannot be asked.
  [[nodiscard]] std::optional<ProcessActivity> activity(Pid pid);

 private:
  std::mutex mutex_;
  UniqueFd socket_;
  std::uint16_t family_ = 0;
  std::uint32_t sequence_ = 0;
};

}  // namespace wctmon::linux_platform
