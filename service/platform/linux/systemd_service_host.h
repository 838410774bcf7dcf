#pragma once

#include "core/ports/service_host.h"

namespace wctmon::linux_platform {

/// sd_notify(3): READY=1, STATUS=, RELOADING=1, STOPPING=1, WATCHDOG=1. Without NOTIFY_SOCKET
/// (not under systemd) every call is a no-op.
class SystemdServiceHost final : public ServiceHost {
 public:
  void ready(const std::string& status) override;
  void status(const std::string& status) override;
  void reloading() override;
  void stopping() override;
  void watchdog() override;
  [[nodiscard]] std::optional<std::chrono::microseconds> watchdogInterval() override;
};

}  // namespace wctmon::linux_platform
