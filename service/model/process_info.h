#pragma once

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
};

}  // namespace wctmon
