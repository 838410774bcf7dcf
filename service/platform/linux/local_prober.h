#pragma once

#include "core/ports/prober.h"

namespace wctmon::linux_platform {

/// Unix socket connects and commands, on Linux: a non-blocking connect (a full backlog fails at
/// once), and a command spawned in a process group of its own, waited for through a pidfd and
/// killed with its group past the deadline.
class LinuxLocalProber final : public LocalProber {
 public:
  [[nodiscard]] ProbeOutcome connectUnix(const std::string& path,
                                         std::chrono::milliseconds timeout) override;
  [[nodiscard]] ProbeOutcome runCommand(const ProbeConfig& probe) override;
};

}  // namespace wctmon::linux_platform
