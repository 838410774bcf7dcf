#include "platform/linux/systemd_service_host.h"

#include <systemd/sd-daemon.h>

#include <cstdint>

namespace wctmon::linux_platform {

void SystemdServiceHost::ready(const std::string& status) {
  ::sd_notify(0, ("READY=1\nSTATUS=" + status).c_str());
}

void SystemdServiceHost::status(const std::string& status) {
  ::sd_notify(0, ("STATUS=" + status).c_str());
}

void SystemdServiceHost::reloading() { ::sd_notify(0, "RELOADING=1"); }

void SystemdServiceHost::stopping() { ::sd_notify(0, "STOPPING=1"); }

void SystemdServiceHost::watchdog() { ::sd_notify(0, "WATCHDOG=1"); }

std::optional<std::chrono::microseconds> SystemdServiceHost::watchdogInterval() {
  std::uint64_t usec = 0;
  if (::sd_watchdog_enabled(0, &usec) > 0 && usec > 0) return std::chrono::microseconds(usec);
  return std::nullopt;
}

}  // namespace wctmon::linux_platform
