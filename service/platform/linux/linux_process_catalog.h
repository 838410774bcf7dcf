#pragma once

#include "platform/process_catalog.h"

namespace wctmon::linux_platform {

/// Processes from /proc/PID/{stat,exe,cmdline}; kernel threads are left out.
class LinuxProcessCatalog final : public ProcessCatalog {
 public:
  [[nodiscard]] std::vector<ProcessInfo> list(bool with_cmdline) override;
  [[nodiscard]] std::optional<ProcessInfo> get(Pid pid, bool with_cmdline) override;
};

}  // namespace wctmon::linux_platform
