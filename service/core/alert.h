#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace wctmon {

/// What an alert is about; each kind has a stable message id in the system log.
enum class AlertKind {
  kDeadlockDetected,
  kHangDetected,
  kIncidentResolved,
  kServiceStarted,
  kServiceStopped,
  kConfigError,
};

enum class AlertSeverity { kInfo, kWarning, kError, kCritical };

/// One alert: a line for people and fields for machines (PID, PROCESS, THREADS, ...).
struct Alert {
  AlertKind kind = AlertKind::kServiceStarted;
  AlertSeverity severity = AlertSeverity::kInfo;
  std::string message;
  /// Extra structured fields, upper-case names as journald wants them.
  std::vector<std::pair<std::string, std::string>> fields;
  /// The target the alert is about (rate limiting); empty for service alerts.
  std::string target;
};

/// The stable 128-bit id (32 hex digits) of each alert kind, as journald's MESSAGE_ID.
[[nodiscard]] const char* messageId(AlertKind kind);

/// Where alerts go: journald or syslog on Linux, the Event Log on Windows.
class AlertSink {
 public:
  virtual ~AlertSink() = default;
  virtual void send(const Alert& alert) = 0;
};

/// Lets through at most `max_per_window` alerts per target in each window; alerts without a
/// target (the service's own) always pass. Pure: time from the injected clock.
class AlertRateLimiter {
 public:
  AlertRateLimiter(const Clock& clock, std::chrono::milliseconds window, unsigned max_per_window)
      : clock_(clock), window_(window), max_(max_per_window) {}

  /// True when `alert` may be sent now; counts it.
  [[nodiscard]] bool admit(const Alert& alert);

  /// Changes the limits; the current windows carry on.
  void setLimits(std::chrono::milliseconds window, unsigned max_per_window) {
    window_ = window;
    max_ = max_per_window;
  }

  /// Alerts held back so far.
  [[nodiscard]] std::size_t suppressed() const { return suppressed_; }

 private:
  struct Window {
    Clock::TimePoint start;
    unsigned count = 0;
  };
  const Clock& clock_;
  std::chrono::milliseconds window_;
  unsigned max_;
  std::map<std::string, Window> windows_;
  std::size_t suppressed_ = 0;
};

}  // namespace wctmon
