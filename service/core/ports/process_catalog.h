#pragma once

#include <optional>
#include <vector>

#include "model/process_info.h"

namespace wctmon {

/// Lists the processes of the system: /proc on Linux, Toolhelp32 on Windows.
class ProcessCatalog {
 public:
  virtual ~ProcessCatalog() = default;
  /// Every user-space process; with `with_cmdline`, command lines too (costlier).
  [[nodiscard]] virtual std::vector<ProcessInfo> list(bool with_cmdline) = 0;
  /// One process, or nullopt when it is gone.
  [[nodiscard]] virtual std::optional<ProcessInfo> get(Pid pid, bool with_cmdline) = 0;
};

}  // namespace wctmon
