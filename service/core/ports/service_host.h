#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace wctmon {

/// The supervisor the service runs under: systemd on Linux, the SCM on Windows.
class ServiceHost {
 public:
  virtual ~ServiceHost() = default;
  virtual void ready(const std::string& status) = 0;
  virtual void status(const std::string& status) = 0;
  virtual void reloading() = 0;
  virtual void stopping() = 0;
  /// Tells the supervisor the service is alive; sent only while it is healthy.
  virtual void watchdog() = 0;
  /// How often the supervisor expects watchdog(), when it watches at all.
  [[nodiscard]] virtual std::optional<std::chrono::microseconds> watchdogInterval() = 0;
};

}  // namespace wctmon
