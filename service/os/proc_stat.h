#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace wctmon {

/// The boot time of /proc/stat (its "btime" line), in seconds since the Unix epoch: what turns a
/// process's start in clock ticks after the boot into a time (the process catalog, the service's
/// own process_start_time_seconds).
[[nodiscard]] std::optional<std::int64_t> parseBootTime(std::string_view proc_stat);

}  // namespace wctmon
