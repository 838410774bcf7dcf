#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "model/incident.h"

namespace wctmon {

/// What the service knows of a process when it decides whether to watch it.
struct ProcessInfo {
  ProcessIdentity identity;
  /// The kernel's short name (comm, at most 15 characters).
  std::string comm;
  /// The file name of the executable, when readable.
  std::string exe_name;
  /// Arguments joined by spaces; filled only when asked for.
  std::string cmdline;
  /// When it started, as a wall-clock time (identity.start_time counts in the platform's
  /// units); unset when the platform cannot tell.
  std::optional<std::chrono::system_clock::time_point> started_at{};
};

}  // namespace wctmon
