#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace wctmon::api {

/// The fields of /proc/self/stat that the process_* metrics use (proc(5)); the boot time they
/// add to its start is os/proc_stat.h's.
struct SelfStat {
  /// User and system time, in clock ticks (sysconf(_SC_CLK_TCK)).
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
  std::uint64_t threads = 0;
  /// When the process started, in clock ticks after the boot.
  std::uint64_t start_ticks = 0;
  std::uint64_t virtual_bytes = 0;
  /// Resident pages.
  std::uint64_t resident_pages = 0;
};

/// Parses a /proc/PID/stat line; the command name may hold spaces and parentheses.
[[nodiscard]] std::optional<SelfStat> parseSelfStat(std::string_view text);

}  // namespace wctmon::api
