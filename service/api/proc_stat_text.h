#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace wctmon::api {

/// The fields of /proc/self/stat that the process_* metrics use (proc(5)).
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

/// The boot time of /proc/stat's "btime" line, in seconds since the Unix epoch.
[[nodiscard]] std::optional<std::int64_t> parseBootTime(std::string_view proc_stat);

}  // namespace wctmon::api
